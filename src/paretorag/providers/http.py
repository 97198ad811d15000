"""OpenAI-compatible servers through the official ``openai`` client, under our retry policy.

The ``openai`` client does the HTTP: requests, authentication, timeouts, the responses'
types, server-sent-event streams, typed errors. It runs with ``max_retries=0``; the retries
are ours, because they must do what the SDK's cannot: tell each wait as it starts, stop
one call at a time budget, retry garbage, and give up early on a refused connection.

Retries on 429, 5xx, timeouts and connection errors; honours ``Retry-After`` (seconds
or an HTTP date; a malformed value falls back to the backoff). Garbage (a body that is
not JSON, or JSON that is not an answer) is retried too, then reported. A refused
connection is retried only ``connect_retries`` times: nothing is listening, and waiting
rarely changes that. The SDK's typed errors become :mod:`paretorag.errors` ones:
``LLMTimeoutError`` for timeouts, ``LLMResponseError`` for garbage, ``LLMError`` for the rest.

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
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError, LLMError, LLMResponseError, LLMTimeoutError
from .notices import emit

if TYPE_CHECKING:
    import openai

T = TypeVar("T")
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


class OpenAIClient:
    """The ``openai`` SDK client for one server, with our retries around each call.

    Parameters
    ----------
    base_url : str
        e.g. ``http://127.0.0.1:8000/v1``.
    api_key : str
        Sent as a bearer token when not empty (no ``Authorization`` header otherwise).
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
        import openai

        self.base_url = base_url.rstrip("/")
        # the SDK wants a key; without one, the header is left out of every request
        self.sdk = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "unused", timeout=timeout, max_retries=0
        )
        self._headers: dict[str, Any] = {} if api_key else {"Authorization": openai.Omit()}
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.connect_retries = connect_retries
        self.hint = hint
        self.max_wait = max_wait_seconds(max_wait)
        self._sleep = sleep
        self._clock = clock
        self.attempts = 0  # total HTTP attempts (for tests and stats)

    # -- the calls ---------------------------------------------------------------------------
    def chat(self, **params: Any) -> Any:
        """``chat.completions.create(**params)`` with retries; the completion has a text answer."""
        return self.call(
            "/chat/completions",
            lambda: self.sdk.chat.completions.create(extra_headers=self._headers, **params),
            validate=chat_text,
        )

    def chat_stream(self, **params: Any) -> Iterator[Any]:
        """The chunks of ``chat.completions.create(stream=True, **params)``. One attempt:
        callers fall back to :meth:`chat` (which retries) when it fails before the first chunk."""
        import openai

        url = self.base_url + "/chat/completions"
        try:
            stream = self.sdk.chat.completions.create(stream=True, extra_headers=self._headers, **params)
            with stream:
                yield from stream
        except openai.APITimeoutError:
            raise LLMTimeoutError(
                f"{url} timed out after {self.timeout}s while streaming; raise the timeout or check the server"
            ) from None
        except openai.APIStatusError as exc:
            raise LLMError(f"{url} refused the request: HTTP {exc.status_code}: {_text(exc)}") from None
        except openai.APIConnectionError as exc:
            hint = f"; {self.hint}" if self.hint else ""
            raise LLMError(f"{url}: cannot connect ({_cause(exc)}); is the server running?{hint}") from None
        except openai.APIError as exc:  # an error event in the stream
            raise LLMError(f"{url} streamed an error: {exc.message}") from None
        except json.JSONDecodeError as exc:
            raise LLMResponseError(f"{url} streamed an event that is not JSON: {exc.doc[:120]!r}") from None

    def embeddings(self, **params: Any) -> Any:
        """``embeddings.create(**params)`` (floats) with retries."""
        return self.call(
            "/embeddings",
            lambda: self.sdk.embeddings.create(
                encoding_format="float", extra_headers=self._headers, **params
            ),
            validate=_has_data,
        )

    # -- the retry policy --------------------------------------------------------------------
    def call(self, path: str, send: Callable[[], T], validate: Callable[[Any], Any] | None = None) -> T:
        """``send()`` until it succeeds; ``validate(result)`` raising LLMResponseError marks
        garbage (retried)."""
        import openai

        url = self.base_url + path
        last = ""
        refused = 0
        start = self._clock()
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            retry_after: str | None = None
            try:
                result = send()
                if not hasattr(result, "model_dump"):  # the SDK's answer to a non-JSON body
                    raise json.JSONDecodeError("not JSON", str(result), 0)
                if validate is not None:
                    validate(result)
                return result
            except openai.APITimeoutError:
                last = f"timed out after {self.timeout}s"
                if attempt == self.max_retries:
                    raise LLMTimeoutError(
                        f"{url} {last} ({attempt + 1} attempts); raise the timeout or check the server"
                    ) from None
            except openai.APIConnectionError as exc:
                last = f"cannot connect ({_cause(exc)})"
                refused += type(exc.__cause__).__name__ == "ConnectError"
                if attempt == self.max_retries or refused > self.connect_retries:
                    hint = f"; {self.hint}" if self.hint else ""
                    raise LLMError(
                        f"{url}: {last} after {attempt + 1} attempts; is the server running?{hint}"
                    ) from None
            except openai.APIStatusError as exc:
                if exc.status_code in (401, 403):
                    raise LLMError(
                        f"{url} refused the request: HTTP {exc.status_code}: {_text(exc)}; "
                        "check the API key (OPENAI_API_KEY)"
                    ) from None
                if exc.status_code not in RETRY_STATUS:
                    raise LLMError(
                        f"{url} refused the request: HTTP {exc.status_code}: {_text(exc)}"
                    ) from None
                last = f"HTTP {exc.status_code}"
                retry_after = exc.response.headers.get("retry-after")
            except json.JSONDecodeError as exc:
                last = f"a body that is not JSON: {exc.doc[:120]!r}"
            except LLMResponseError as exc:
                last = f"a body that is not a valid answer: {exc}"
            if attempt == self.max_retries:
                err = LLMResponseError if last.startswith("a body") else LLMError
                raise err(f"{url} answered {last} after {attempt + 1} attempts")
            self._wait(url, last, attempt, self._delay(attempt, retry_after), start)
        raise LLMError(f"{url}: no attempt made")  # unreachable: the loop returns or raises

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        seconds = retry_after_seconds(retry_after)
        if seconds is not None:
            return min(seconds, self.max_backoff)
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2)

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

    def close(self) -> None:
        self.sdk.close()


def _cause(exc: BaseException) -> str:
    return str(exc.__cause__ or exc)


def _text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text[:300]
    except (UnicodeDecodeError, RuntimeError):  # a stream's body that was not read
        return exc.message[:300]


def chat_text(completion: Any) -> str:
    """The text of a chat completion (``choices[0].message.content``), or LLMResponseError;
    ``completion`` is the ``openai`` client's object or, from llama-cpp-python in process, a dict."""
    try:
        if isinstance(completion, dict):
            text = completion["choices"][0]["message"]["content"]
        else:
            text = completion.choices[0].message.content
    except (AttributeError, KeyError, IndexError, TypeError):
        raise LLMResponseError(
            f"chat server returned no choices[0].message.content: {_shown(completion)}"
        ) from None
    if not isinstance(text, str):
        raise LLMResponseError(f"chat server returned non-text content: {str(text)[:200]}")
    return text


def delta_text(chunk: Any) -> str:
    """The text of one streamed chunk (``choices[0].delta.content``; "" for the usage chunk)."""
    try:
        choices = chunk.choices
        if not choices:  # the usage chunk of stream_options.include_usage
            return ""
        text = choices[0].delta.content or ""
    except (AttributeError, IndexError, TypeError):
        raise LLMResponseError(
            f"chat server streamed a chunk without choices[0].delta: {_shown(chunk)}"
        ) from None
    if not isinstance(text, str):
        raise LLMResponseError(f"chat server streamed non-text content: {str(text)[:200]}")
    return text


def _has_data(response: Any) -> None:
    if not isinstance(getattr(response, "data", None), list):
        raise LLMResponseError(f"embeddings server returned no data list: {_shown(response)}")


def _shown(obj: Any) -> str:
    dump = getattr(obj, "model_dump", None)
    return str(dump(exclude_none=True) if callable(dump) else obj)[:200]
