"""Errors as JSON: ``{"error": {"status", "type", "field", "message"}}``, with the right status.

Bad input is a 4xx naming the field and the fix; a failing LLM backend is a 502 (504 for
a timeout) with the cause; another writer holding the index is a 409.
:func:`add_error_handlers` answers every exception the app meets in that shape.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import (
    ConfigError,
    DamagedIndexError,
    IndexFormatError,
    IndexLockedError,
    InputError,
    LLMError,
    LLMTimeoutError,
    MissingDependencyError,
    MissingStructureError,
    ParetoragError,
    ProviderError,
    QuestionError,
    StorageError,
)

log = logging.getLogger("paretorag.server")


class APIError(Exception):
    """An error the API answers with: HTTP ``status``, the request ``field`` at fault, a message."""

    def __init__(
        self, status: int, message: str, *, field: str | None = None, kind: str = "bad_request"
    ) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.kind = kind


class ServerStopping(ParetoragError):
    """The server was asked to stop (SIGTERM) while an answer was being made."""


# most specific first
_STATUS: list[tuple[type[BaseException], int, str, str | None]] = [
    (QuestionError, 400, "bad_question", "question"),
    (ServerStopping, 503, "stopping", None),
    (MissingStructureError, 409, "missing_structure", "method"),
    (IndexLockedError, 409, "index_locked", None),
    (DamagedIndexError, 503, "damaged_index", None),
    (IndexFormatError, 409, "index_not_ready", None),
    (InputError, 400, "bad_input", None),
    (ConfigError, 400, "bad_setting", None),
    (StorageError, 507, "storage", None),
    (MissingDependencyError, 501, "missing_dependency", None),
    (LLMTimeoutError, 504, "llm_timeout", None),
    (LLMError, 502, "llm_failed", None),
    (ProviderError, 502, "provider_failed", None),
    (ParetoragError, 500, "error", None),
    (OSError, 500, "os_error", None),
]


def status_of(exc: BaseException) -> tuple[int, str, str | None]:
    """HTTP status, error type and request field for an exception."""
    if isinstance(exc, APIError):
        return exc.status, exc.kind, exc.field
    for cls, status, kind, fld in _STATUS:
        if isinstance(exc, cls):
            return status, kind, fld
    return 500, "internal", None


def error_body(exc: BaseException) -> dict[str, Any]:
    status, kind, fld = status_of(exc)
    message = (
        str(exc) if isinstance(exc, ParetoragError | APIError) else "internal error; see the server's log"
    )
    if isinstance(exc, OSError) and not isinstance(exc, ParetoragError):
        message = f"{exc.strerror or exc}; see the server's log"
    return {"error": {"status": status, "type": kind, "field": fld, "message": message}}


def json_error(exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    """``exc`` as a JSON error response (logged when it is the server's fault)."""
    status = status_of(exc)[0]
    if status >= 500:
        log.error("%s %s", type(exc).__name__, exc)
    return JSONResponse(error_body(exc), status_code=status, headers=headers)


def add_error_handlers(app: FastAPI) -> None:
    """Answer our errors, bad requests, FastAPI's 404/405 and bugs as JSON errors."""

    @app.exception_handler(APIError)
    @app.exception_handler(ParetoragError)
    @app.exception_handler(OSError)
    async def _known(request: Request, exc: Exception) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if status_of(exc)[0] == 401 else None
        return json_error(exc, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        fld = "body" if first.get("type") == "json_invalid" else ".".join(loc) or "body"
        msg = str(first.get("msg", "invalid"))
        if first.get("type") == "extra_forbidden":
            msg = "unknown field; the accepted fields are in /docs"
        elif first.get("type") == "missing":
            msg = "required; the request schema is in /docs"
        elif first.get("type") == "json_invalid":
            msg = "the body is not valid JSON; send a JSON object with Content-Type: application/json"
        return json_error(APIError(422, f"{fld}: {msg}", field=fld, kind="invalid"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        hint = {404: "; see /docs for the endpoints", 405: "; see /docs for the verbs each endpoint takes"}
        message = f"{exc.detail}{hint.get(exc.status_code, '')}"
        return json_error(APIError(exc.status_code, message, kind="http"))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        # the last resort for a bug: a JSON 500 with the traceback in the log; the server goes on
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body(exc), status_code=500)
