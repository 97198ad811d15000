"""ASGI middleware of the app: body size limits (413), clients that go away while sending a
body, security headers, and request counting for ``/metrics``."""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import APIError, json_error
from .metrics import Metrics
from .service import Limits

log = logging.getLogger("paretorag.server")


class BodyLimit:
    """Refuses request bodies above a limit with 413 (by Content-Length, or while reading a
    chunked body, whatever the route does with the error), and logs a client that went away
    while sending its body as one line."""

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
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    refused = True
                    raise too_big
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused and not started:
                # the app answered the refusal its own way (FastAPI turns an error while it
                # parses a JSON body into "400 There was an error parsing the body"): the 413 goes instead
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except APIError as exc:
            if exc is not too_big or started:
                raise
        except ClientDisconnect:  # not the server's fault: one line, no traceback
            log.warning("%s %s: the client went away while sending its body", scope["method"], scope["path"])
            return
        if refused and not started:
            await json_error(too_big)(scope, receive, send)


class NoSniff:
    """``X-Content-Type-Options: nosniff`` on every response: a browser reads each body as the
    type it is sent with (a JSON error is never run as a script)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_nosniff(message: Message) -> None:
            headers = list(message.get("headers", []))
            if message["type"] == "http.response.start" and not any(
                k.lower() == b"x-content-type-options" for k, _ in headers
            ):
                message = {**message, "headers": [*headers, (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, send_nosniff)


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
        answered = gone = False

        async def send_status(message: Message) -> None:
            nonlocal status, answered
            if message["type"] == "http.response.start":
                status = int(message["status"])
                answered = True
            await send(message)

        async def receive_gone() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        self.metrics.enter()
        try:
            await self.app(scope, receive_gone, send_status)
            if gone and not answered:  # no answer: the client closed the request
                status = 499
        finally:
            self.metrics.leave()
            route = scope.get("route")
            name = getattr(route, "path", None) or (
                "/static" if scope["path"].startswith("/static/") else "unmatched"
            )
            self.metrics.request(name, scope["method"], status)


__all__ = ["BodyLimit", "Counting", "NoSniff"]
