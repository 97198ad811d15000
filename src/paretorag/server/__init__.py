"""``paretorag serve``: the HTTP API and web page over one index (needs ``paretorag[serve]``).

- :mod:`.app` assembles the FastAPI app from one router per resource (``routes_*``,
  ``compat_*``, :mod:`.graph`, :mod:`.mcp`); errors as JSON, body limits, the page at ``/``
- :mod:`.service` one reading RAG shared by the requests, the single writer, limits
- :mod:`.jobs` writes as durable jobs with progress; :mod:`.writes` what each write does, and
  how a stored one is resumed; :mod:`.auth` API keys; :mod:`.metrics` Prometheus text
"""

from __future__ import annotations

from ..errors import MissingDependencyError

try:
    from .app import create_app
    from .auth import KeyRing
    from .service import Limits, Service
except ImportError as exc:  # fastapi, uvicorn or python-multipart missing
    if exc.name and exc.name.split(".")[0] in (
        "fastapi",
        "starlette",
        "uvicorn",
        "multipart",
        "python_multipart",
    ):
        raise MissingDependencyError(f"the server needs {exc.name}: pip install 'paretorag[serve]'") from exc
    raise

__all__ = ["KeyRing", "Limits", "Service", "create_app"]
