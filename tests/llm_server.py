"""A scripted OpenAI-compatible chat server on 127.0.0.1 for client tests (stops with the test)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def ok_body(text: str = "hello [1]") -> bytes:
    return json.dumps(
        {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 2},
        }
    ).encode()


@contextmanager
def scripted_server(
    script: list[tuple[Any, ...]], requests: list[tuple[dict[str, str], Any]] | None = None
) -> Iterator[tuple[str, list[float]]]:
    """Serve ``(status, body, delay[, headers])`` answers in order (the last one repeats);
    yields (base_url, hit times). ``requests``, if given, receives each request's headers (lower-case names)
    and JSON body."""
    hits: list[float] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(n)
            with lock:
                if requests is not None:
                    requests.append(
                        ({k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"null"))
                    )
                hits.append(time.monotonic())
                status, body, delay, *extra = script[min(len(hits) - 1, len(script) - 1)]
            if delay:
                time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as base:
        yield base, hits


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` on 127.0.0.1 in a thread; yields its base URL (``.../v1``), stops at exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


class StreamLog:
    """What a :func:`slow_stream_server` saw: streams started, pieces sent, streams whose
    client closed the connection before the end (the upstream request was cancelled)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = 0
        self.sent = 0
        self.cut = 0
        self.finished = 0


@contextmanager
def slow_stream_server(words: int = 600, delay: float = 0.1) -> Iterator[tuple[str, StreamLog]]:
    """An OpenAI-compatible chat server on 127.0.0.1 whose streamed answers send ``words``
    pieces, one every ``delay`` seconds (a slow model); yields (base_url, log)."""
    log = StreamLog()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if not body.get("stream"):
                raw = ok_body("otters [1]")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return
            with log.lock:
                log.started += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()  # HTTP/1.0: the body ends when the connection closes
            try:
                for i in range(words):
                    chunk = {
                        "id": "chatcmpl-slow",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": body.get("model", "slow"),
                        "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    with log.lock:
                        log.sent += 1
                    time.sleep(delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                with log.lock:
                    log.cut += 1
                return
            with log.lock:
                log.finished += 1

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as base:
        yield base, log
