"""Streamed answers: the answer made in a thread, its tokens and waits handed to the event loop.

``POST /query/stream`` (:mod:`.routes_query`) writes the events as server-sent events;
the chat routes (:mod:`.compat_common`) as OpenAI chunks or Ollama lines.

A streamed answer holds one of the server's query slots (:class:`~.service.ReaderPool`).
The slot comes back exactly once, at the first of: the answer's end, the client going away
(:func:`streaming`'s response notices the disconnect at once, not at the next token), or the
server stopping. A client that goes away also cancels the answer: its next token raises
:class:`~paretorag.cancel.Cancelled` in the answering thread, which closes the upstream
LLM's stream (its HTTP request), so no model keeps generating for nobody.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any

from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from ..cancel import Cancelled
from ..errors import ParetoragError
from ..providers.notices import listening
from ..types import Answer
from .errors import ServerStopping

log = logging.getLogger("paretorag.server")

Piece = tuple[str, Any]


class AnswerStream:
    """``answer(on_token)`` run in its own thread (named ``name``, from :meth:`start`), its
    pieces read with :meth:`events` (async) or :meth:`result` (blocking).

    The pieces are ``("token", text)``, ``("wait", message)`` (a model server's retry, from
    :mod:`paretorag.providers.notices`), then ``("done", Answer)`` or ``("error", exception)``.
    ``release`` (the query slot's give-back) is called once: when the answer ends, or at
    :meth:`cancel`, whichever comes first.
    """

    def __init__(
        self, answer: Callable[[Callable[[str], None]], Answer], *, name: str, release: Callable[[], None]
    ) -> None:
        self._answer = answer
        self._release = release
        self._released = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._buffer: list[Piece | None] = []  # pieces made before a reader attached
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Piece | None] | None = None
        self._outcome: Piece | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> AnswerStream:
        self._thread.start()
        return self

    # -- the answering thread ----------------------------------------------------------
    def _emit(self, piece: Piece | None) -> None:
        with self._lock:
            loop, q = self._loop, self._queue
            if loop is None or q is None:
                self._buffer.append(piece)
                return
        with suppress(RuntimeError):  # the event loop closed (the server stopped): nobody reads
            loop.call_soon_threadsafe(q.put_nowait, piece)

    def _token(self, text: str) -> None:
        if self._stop.is_set():
            raise Cancelled("the client went away")
        self._emit(("token", text))

    def _wait(self, message: str) -> None:
        if self._stop.is_set():
            raise Cancelled("the client went away")
        if message:  # the end of a wait shows as the next token
            self._emit(("wait", message))

    def _run(self) -> None:
        outcome: Piece | None = None
        try:
            if self._stop.is_set():
                raise Cancelled("the client went away")
            with listening(self._wait):
                outcome = ("done", self._answer(self._token))
        except Cancelled:
            outcome = ("error", ServerStopping("the answer was cancelled"))
        except (ParetoragError, OSError) as exc:
            outcome = ("error", exc)
        finally:
            self.release()
            # a bug in answer() is logged by the thread; the client sees a generic error
            self._outcome = outcome or ("error", RuntimeError("the answer failed"))
            self._emit(self._outcome)
            self._emit(None)

    # -- the reader's side -------------------------------------------------------------
    def release(self) -> None:
        """Give the query slot back (once)."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self._release()

    def cancel(self, reason: BaseException | None = None) -> None:
        """Stop the answer at its next token or wait and give the slot back now. With
        ``reason``, a reader still attached gets ``("error", reason)`` and the end at once."""
        self._stop.set()
        self.release()
        if reason is not None:
            self._emit(("error", reason))
            self._emit(None)

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    async def events(self) -> AsyncIterator[Piece]:
        """The pieces as they come; leaving early (the client went away) cancels the answer."""
        q: asyncio.Queue[Piece | None] = asyncio.Queue()
        with self._lock:
            self._loop, self._queue = asyncio.get_running_loop(), q
            pending, self._buffer = self._buffer, []
        for piece in pending:
            q.put_nowait(piece)
        try:
            while (piece := await q.get()) is not None:
                yield piece
        finally:
            self.cancel()  # nothing left to do once the answer ended

    def result(self) -> Piece:
        """Wait for the end: ``("done", Answer)`` or ``("error", exception)`` (for the routes that
        answer in one piece, from a worker thread)."""
        self._thread.join()
        if self._outcome is None:  # only if the thread could not finish its finally
            return ("error", RuntimeError("the answer failed"))
        return self._outcome


class ClosingStream(StreamingResponse):
    """A streamed response that calls ``on_close`` once it ends, however it ends: sent whole,
    the client gone (noticed while waiting for the next piece, not at the next write), a
    write that failed, or the task cancelled by the server's shutdown."""

    def __init__(self, content: AsyncIterator[str], *, on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                streamer = group.create_task(self.stream_response(send))
                watcher = group.create_task(self.listen_for_disconnect(receive))
                done, _ = await asyncio.wait({streamer, watcher}, return_when=asyncio.FIRST_COMPLETED)
                for task in (streamer, watcher):
                    if task not in done:
                        task.cancel()
        except* OSError:  # the connection broke while writing: the client is gone
            log.info("a streamed answer's client went away")
        finally:
            self._on_close()


def sse(event: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def streaming(lines: AsyncIterator[str], media_type: str, stream: AnswerStream) -> StreamingResponse:
    """A response sent as ``lines`` come (no caching, no proxy buffering); ``stream`` is
    cancelled (and its query slot given back) when the response ends."""
    return ClosingStream(
        lines,
        on_close=stream.cancel,
        media_type=media_type,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


__all__ = ["AnswerStream", "ClosingStream", "sse", "streaming"]
