"""Errors as JSON: ``{"error": {"status", "type", "field", "message"}}``, with the right status.

Bad input is a 4xx naming the field and the fix; a failing LLM backend is a 502 (504 for
a timeout) with the cause; another writer holding the index is a 409.
"""

from __future__ import annotations

from typing import Any

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


class APIError(Exception):
    """An error the API answers with: HTTP ``status``, the request ``field`` at fault, a message."""

    def __init__(
        self, status: int, message: str, *, field: str | None = None, kind: str = "bad_request"
    ) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.kind = kind


# most specific first
_STATUS: list[tuple[type[BaseException], int, str, str | None]] = [
    (QuestionError, 400, "bad_question", "question"),
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
