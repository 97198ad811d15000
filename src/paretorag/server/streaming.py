"""Streamed answers: the answer made in a thread, its tokens and waits handed over a queue.

``POST /query/stream`` (:mod:`.routes_query`) writes the events as server-sent events;
the chat routes (:mod:`.compat_common`) as OpenAI chunks or Ollama lines.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from fastapi.responses import StreamingResponse

from ..errors import ParetoragError
from ..providers.notices import listening
from ..types import Answer


def answer_events(
    answer: Callable[[Callable[[str], None]], Answer], *, name: str
) -> Generator[tuple[str, Any], None, None]:
    """Run ``answer(on_token)`` in a thread (named ``name``) and yield what it makes as it makes it:
    ``("token", text)``, ``("wait", message)`` (a model server's retry, from
    :mod:`paretorag.providers.notices`), then ``("done", Answer)`` or ``("error", exception)``.

    Closing the iterator early (the client went away) waits for the answer to finish, so the
    caller may give its reading RAG back once the iterator is closed.
    """
    pieces: queue.Queue[tuple[str, str] | None] = queue.Queue()
    outcome: dict[str, Any] = {}

    def waiting(message: str) -> None:
        if message:  # the end of a wait shows as the next token
            pieces.put(("wait", message))

    def generate() -> None:
        try:
            with listening(waiting):
                outcome["answer"] = answer(lambda text: pieces.put(("token", text)))
        except (ParetoragError, OSError) as exc:
            outcome["error"] = exc
        finally:
            pieces.put(None)

    worker = threading.Thread(target=generate, name=name, daemon=True)
    try:
        worker.start()
        while (piece := pieces.get()) is not None:
            yield piece
        worker.join()
        if "answer" in outcome:
            yield ("done", outcome["answer"])
        else:  # a known error, or generate() died of a bug (logged by the thread)
            yield ("error", outcome.get("error", RuntimeError("the answer failed")))
    finally:
        if worker.is_alive():  # the client went away: let the answer finish first
            worker.join()


def sse(event: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def streaming(lines: Iterator[str], media_type: str) -> StreamingResponse:
    """A response sent as ``lines`` come (no caching, no proxy buffering)."""
    return StreamingResponse(
        lines, media_type=media_type, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


__all__ = ["answer_events", "sse", "streaming"]
