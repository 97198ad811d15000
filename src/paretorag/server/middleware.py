"""ASGI middleware of the app: body size limits (413) and request counting for ``/metrics``."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import APIError, json_error
from .metrics import Metrics
from .service import Limits


class BodyLimit:
    """Refuses request bodies above a limit with 413 (by Content-Length, or while reading)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    def _limit(self, scope: Scope) -> int:
        upload = scope["path"].rstrip("/") == "/documents" and scope["method"] == "POST"
        return self.limits.max_upload_bytes if upload else self.limits.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        too_big = APIError(
            413,
            f"the request body is larger than {limit:,} bytes; send less"
            + (
                " (split the upload into several requests, or start the server with a larger --max-upload-mb)"
                if limit == self.limits.max_upload_bytes
                else ""
            ),
            field="body",
            kind="too_large",
        )
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await json_error(too_big)(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_big
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except APIError as exc:
            if exc is not too_big or started:
                raise
            await json_error(too_big)(scope, receive, send)


class Counting:
    """Counts requests by route template (not by path: ids would explode the label set)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.enter()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.leave()
            route = scope.get("route")
            name = getattr(route, "path", None) or (
                "/static" if scope["path"].startswith("/static/") else "unmatched"
            )
            self.metrics.request(name, scope["method"], status)


__all__ = ["BodyLimit", "Counting"]
