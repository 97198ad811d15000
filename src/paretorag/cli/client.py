"""Ask a running ``paretorag serve`` (``paretorag query --server URL``).

The server keeps the index, the embedder and the reader loaded, so a question costs
one HTTP round trip; the asking process imports no model library.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, ProviderError

KEY_ENV = "PARETORAG_API_KEY"


def ask(url: str, body: dict[str, Any], *, api_key: str = "", timeout: float = 120.0) -> dict[str, Any]:
    """POST ``body`` (the fields of ``POST /query``) to ``url`` and return the answer's JSON,
    the object ``paretorag query --json`` prints."""
    import httpx

    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--server {url!r}: give the server's URL, e.g. http://127.0.0.1:8000")
    endpoint = url.rstrip("/") + "/query"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.post(endpoint, json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise ProviderError(f"{endpoint} gave no answer in {timeout:.0f} s; check the server") from None
    except httpx.TransportError as exc:
        raise ProviderError(
            f"cannot reach {endpoint} ({exc}); start it with `paretorag serve --index DIR`, "
            "or ask without --server"
        ) from None
    if resp.status_code in (401, 403):
        raise ProviderError(
            f"{endpoint} refused the request (HTTP {resp.status_code}); pass --api-key or set {KEY_ENV}"
        )
    try:
        data = resp.json()
    except ValueError:
        raise ProviderError(
            f"{endpoint} answered HTTP {resp.status_code} with a body that is not JSON: {resp.text[:200]!r}"
        ) from None
    if resp.status_code >= 400:
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(data)[:300]
        raise ProviderError(f"{endpoint}: HTTP {resp.status_code}: {message}")
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        raise ProviderError(f"{endpoint} answered an object that is not an answer: {str(data)[:200]}")
    return data


__all__ = ["KEY_ENV", "ask"]
