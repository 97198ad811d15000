"""The API key checks as FastAPI dependencies: ``can_read`` (any key) and ``can_write`` (a
read-write key), over a :class:`~paretorag.server.auth.KeyRing`; without keys both let
every request through."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .auth import WRITE, KeyRing
from .errors import APIError


def key_checks(ring: KeyRing) -> tuple[Callable[..., str], Callable[..., str]]:
    """``(can_read, can_write)``: dependencies that answer the caller's role or refuse with 401/403."""
    bearer = HTTPBearer(auto_error=False, description="An API key: Authorization: Bearer KEY")
    header_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key")

    def _role(
        cred: HTTPAuthorizationCredentials | None = Security(bearer),
        key: str | None = Security(header_key),
    ) -> str:
        if not ring:
            return WRITE
        given = (cred.credentials if cred is not None else None) or key
        if not given:
            raise APIError(
                401,
                "missing API key; send the header 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')",
                kind="unauthorized",
            )
        role = ring.role(given)
        if role is None:
            raise APIError(401, "unknown API key; check the key you send", kind="unauthorized")
        return role

    def can_read(role: str = Depends(_role)) -> str:
        return role

    def can_write(role: str = Depends(_role)) -> str:
        if role != WRITE:
            raise APIError(
                403, "this API key is read-only; use a read-write key to change documents", kind="forbidden"
            )
        return role

    return can_read, can_write


__all__ = ["key_checks"]
