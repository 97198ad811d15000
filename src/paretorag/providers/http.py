"""A small JSON-over-HTTP client with timeouts and retries (exponential backoff).

Retries on 429, 5xx, timeouts and connection errors; honours ``Retry-After`` (seconds
or an HTTP date; a malformed value falls back to the backoff). Garbage (a body that is
not JSON) is retried too, then reported. A refused connection is retried only
``connect_retries`` times: nothing is listening, and waiting rarely changes that.

Every wait is told as it starts (:mod:`paretorag.providers.notices`: one line on the CLI's
stderr, a job's progress, a streamed answer's events), e.g. ``rate limited by URL (HTTP
429); retrying in 30 s, attempt 2 of 6``. One call, retries included, stops with the error
once its time budget is spent (``max_wait``; default ``$PARETORAG_LLM_MAX_WAIT`` or
:data:`DEFAULT_MAX_WAIT_S`), instead of waiting past it.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ..errors import ConfigError, LLMError, LLMResponseError, LLMTimeoutError
from .notices import emit

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_WAIT_ENV = "PARETORAG_LLM_MAX_WAIT"
DEFAULT_MAX_WAIT_S = 300.0


def max_wait_seconds(value: float | str | None = None) -> float:
    """The time budget of one call: ``value``, else ``$PARETORAG_LLM_MAX_WAIT``, else the default."""
    raw: float | str | None = value if value is not None else os.environ.get(MAX_WAIT_ENV)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_MAX_WAIT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(
            f"{MAX_WAIT_ENV} / --llm-max-wait must be a positive number of seconds, got {raw!r}; "
            f"e.g. {MAX_WAIT_ENV}=120"
        )
    return seconds


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 1 else f"{value:.1f} s"


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header, or None if it is missing or malformed."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
        return max(seconds, 0.0)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class JSONClient:
    """POST JSON to ``base_url + path`` and return the decoded body.

    Parameters
    ----------
    base_url : str
        e.g. ``http://127.0.0.1:8000/v1``.
    api_key : str
        Sent as a bearer token when not empty.
    timeout : float
        Seconds per attempt.
    max_retries : int
        Attempts after the first one.
    backoff : float
        First delay in seconds; doubled each retry (with jitter), capped at ``max_backoff``.
    connect_retries : int
        Retries when the connection is refused or the host cannot be resolved.
    hint : str
        Appended to connection errors (e.g. which environment variable sets the URL).
    max_wait : float, optional
        Seconds one call may take, retries and their waits included; a wait that would
        pass it stops the call with the error instead. Default ``$PARETORAG_LLM_MAX_WAIT``
        or 300.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        *,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        connect_retries: int = 1,
        hint: str = "",
        max_wait: float | None = None,
        sleep: Any = time.sleep,
        clock: Any = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(headers=headers, timeout=timeout)
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.connect_retries = connect_retries
        self.hint = hint
        self.max_wait = max_wait_seconds(max_wait)
        self._sleep = sleep
        self._clock = clock
        self.attempts = 0  # total HTTP attempts (for tests and stats)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        seconds = retry_after_seconds(retry_after)
        if seconds is not None:
            return min(seconds, self.max_backoff)
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2)

    def post(self, path: str, payload: dict[str, Any], validate: Any = None) -> Any:
        """POST and decode; ``validate(body)`` raising LLMResponseError marks garbage (retried)."""
        url = self.base_url + path
        last = ""
        refused = 0
        start = self._clock()
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            retry_after: str | None = None
            try:
                resp = self._http.post(url, json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self._http.timeout.read}s"
                if attempt == self.max_retries:
                    raise LLMTimeoutError(
                        f"{url} {last} ({attempt + 1} attempts); raise the timeout or check the server"
                    ) from None
            except httpx.TransportError as exc:
                last = f"cannot connect ({exc})"
                refused += isinstance(exc, httpx.ConnectError)
                if attempt == self.max_retries or refused > self.connect_retries:
                    hint = f"; {self.hint}" if self.hint else ""
                    raise LLMError(
                        f"{url}: {last} after {attempt + 1} attempts; is the server running?{hint}"
                    ) from None
            else:
                if resp.status_code in RETRY_STATUS:
                    last = f"HTTP {resp.status_code}"
                    retry_after = resp.headers.get("retry-after")
                elif resp.status_code in (401, 403):
                    raise LLMError(
                        f"{url} refused the request: HTTP {resp.status_code}: {resp.text[:300]}; "
                        "check the API key (OPENAI_API_KEY)"
                    )
                elif resp.status_code >= 400:
                    raise LLMError(f"{url} refused the request: HTTP {resp.status_code}: {resp.text[:300]}")
                else:
                    try:
                        body = resp.json()
                        if validate is not None:
                            validate(body)
                        return body
                    except json.JSONDecodeError:
                        last = f"a body that is not JSON: {resp.text[:120]!r}"
                    except LLMResponseError as exc:
                        last = f"a body that is not a valid answer: {exc}"
                if attempt == self.max_retries:
                    err = LLMResponseError if last.startswith("a body") else LLMError
                    raise err(f"{url} answered {last} after {attempt + 1} attempts")
            self._wait(url, last, attempt, self._delay(attempt, retry_after), start)
        raise LLMError(f"{url}: no attempt made")  # unreachable: the loop returns or raises

    def _wait(self, url: str, last: str, attempt: int, delay: float, start: float) -> None:
        """Sleep ``delay`` before the next attempt, saying so; or stop if that passes the budget."""
        if last == "HTTP 429":
            what = f"rate limited by {url} (HTTP 429)"
        elif last.startswith(("HTTP", "a body")):
            what = f"{url} answered {last}"
        else:
            what = f"{url}: {last}"
        spent = self._clock() - start
        if spent + delay > self.max_wait:
            err = LLMTimeoutError if last.startswith("timed out") else LLMError
            raise err(
                f"{what}; stopped after {attempt + 1} attempt(s) and {_seconds(spent)}: the next retry, "
                f"in {_seconds(delay)}, would pass the {self.max_wait:g} s budget of one call "
                f"(--llm-max-wait or {MAX_WAIT_ENV})"
            )
        emit(f"{what}; retrying in {_seconds(delay)}, attempt {attempt + 2} of {self.max_retries + 1}")
        try:
            self._sleep(delay)
        finally:
            emit("")

    def stream(self, path: str, payload: dict[str, Any]) -> Iterator[Any]:
        """POST and yield the decoded ``data:`` events of a server-sent-event response, up
        to ``data: [DONE]``. One attempt: callers fall back to :meth:`post` (which retries)
        when it fails before the first event."""
        url = self.base_url + path
        try:
            with self._http.stream("POST", url, json=payload) as resp:
                if resp.status_code >= 400:
                    body = resp.read().decode("utf-8", "replace")
                    raise LLMError(f"{url} refused the request: HTTP {resp.status_code}: {body[:300]}")
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue  # comments, event names, keep-alives
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        yield json.loads(data)
                    except json.JSONDecodeError:
                        raise LLMResponseError(
                            f"{url} streamed an event that is not JSON: {data[:120]!r}"
                        ) from None
        except httpx.TimeoutException:
            raise LLMTimeoutError(
                f"{url} timed out after {self._http.timeout.read}s while streaming; raise the timeout or check the server"
            ) from None
        except httpx.TransportError as exc:
            hint = f"; {self.hint}" if self.hint else ""
            raise LLMError(f"{url}: cannot connect ({exc}); is the server running?{hint}") from None

    def close(self) -> None:
        self._http.close()
