"""Running the app with uvicorn, and stopping it promptly.

On SIGTERM or Ctrl-C uvicorn stops accepting connections and waits for open responses to
end. A streamed answer may run for minutes, so the server first ends every stream (each
client gets a last ``stopping`` error event, the upstream LLM requests are closed), then
gives any response still open :data:`STOP_GRACE_S` seconds before cancelling it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

STOP_GRACE_S = 5


def run(
    app: Any, *, host: str, port: int, keep_alive: int, on_stop: Callable[[str], None] | None = None
) -> None:
    """Serve ``app`` (from :func:`~paretorag.server.create_app`) until a signal stops it;
    ``on_stop`` is told once, in words, when that happens."""
    import uvicorn

    service = app.state.service

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            first = not self.should_exit
            super().handle_exit(sig, frame)
            if first:  # a thread: the signal may have interrupted a holder of the streams' locks
                threading.Thread(target=stop, args=(sig,), name="paretorag-stop", daemon=True).start()

    def stop(sig: int) -> None:
        n = service.stop_streams()
        if on_stop is not None:
            on_stop(f"stopping ({signal.Signals(sig).name}): {n} streamed answer(s) ended")

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        timeout_keep_alive=keep_alive,
        timeout_graceful_shutdown=STOP_GRACE_S,
    )
    Server(config).run()


__all__ = ["STOP_GRACE_S", "run"]
