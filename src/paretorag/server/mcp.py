"""MCP over streamable HTTP at ``/mcp`` of ``paretorag serve``, behind the server's API keys.

The tools are those of :mod:`paretorag.server.mcp_stdio`, reading through the server's shared
RAG (its ``--readers`` slots bound them as they bound ``POST /query``). The SDK's session
manager needs a running task group: :meth:`MCPEndpoint.running` is entered by the app's
lifespan, and a fresh manager is made for every start (a manager runs only once, and a
test may start the same app twice). Sessions are stateless: every POST is answered on its
own, so nothing is lost when the server restarts.

Any key (read-only too) may call the tools: they only read. Without keys the CLI binds to
loopback, and the SDK's DNS-rebinding guard accepts only loopback Host and Origin headers.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from fastapi.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import MissingDependencyError, ParetoragError
from .auth import KeyRing, key_from_headers
from .errors import APIError, error_body

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ..rag import RAG
    from .service import Service

log = logging.getLogger("paretorag.server")
PATH = "/mcp"


class MCPEndpoint:
    """The ASGI endpoint at ``/mcp``: checks the API key, then hands the request to the SDK."""

    def __init__(self, server: MCPServer[Any], ring: KeyRing) -> None:
        self.server = server
        self.ring = ring
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the SDK's session manager for as long as the app runs (enter it in the lifespan)."""
        from mcp.server.transport_security import TransportSecuritySettings

        guard = (
            TransportSecuritySettings(enable_dns_rebinding_protection=False)  # keys guard it instead
            if self.ring
            else None  # the SDK's default for 127.0.0.1: loopback Host and Origin only
        )
        self.server.streamable_http_app(
            streamable_http_path=PATH, stateless_http=True, transport_security=guard
        )
        manager = self.server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    def route(self) -> Route:
        """The route at ``/mcp`` (every verb: the SDK answers those it serves)."""
        return Route(PATH, self, include_in_schema=False)

    def _refusal(self, scope: Scope) -> APIError | None:
        if not self.ring:
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        key = key_from_headers(headers.get("authorization"), headers.get("x-api-key"))
        if not key:
            return APIError(
                401,
                "missing API key; send the header 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')",
                kind="unauthorized",
            )
        if self.ring.role(key) is None:
            return APIError(401, "unknown API key; check the key you send", kind="unauthorized")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager, refusal = self._manager, self._refusal(scope)
        if manager is None or refusal is not None:
            refusal = refusal or APIError(
                503, "the MCP endpoint is not running; retry in a moment", kind="busy"
            )
            headers = {"WWW-Authenticate": "Bearer"} if refusal.status == 401 else None
            response = JSONResponse(error_body(refusal), status_code=refusal.status, headers=headers)
            await response(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


def mcp_endpoint(service: Service, ring: KeyRing) -> MCPEndpoint | None:
    """The endpoint over ``service``'s shared RAG, or None (logged) when ``mcp`` is not installed."""
    from .mcp_stdio import build_server

    @contextmanager
    def reader() -> Iterator[RAG]:
        try:
            rag = service.pool.acquire()
        except APIError as exc:  # every query slot busy: the tool answers with the message
            raise ParetoragError(str(exc)) from None
        try:
            yield rag
        finally:
            service.pool.release(rag)

    try:
        server = build_server(reader)
    except MissingDependencyError as exc:
        log.warning("no MCP endpoint at %s: %s", PATH, exc)
        return None
    return MCPEndpoint(server, ring)


__all__ = ["PATH", "MCPEndpoint", "mcp_endpoint"]
