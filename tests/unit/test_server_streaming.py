"""The streamed answer's thread and hand-over (``server.streaming.AnswerStream``), which
``/query/stream`` and both chat dialects share: events in order, errors, the query slot given
back exactly once, a cancelled answer stopping at its next token, and the response that
notices a client gone while it waits for the next piece."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from paretorag.errors import LLMError
from paretorag.providers.notices import emit
from paretorag.server.errors import ServerStopping
from paretorag.server.streaming import AnswerStream, ClosingStream, sse

ANSWER = object()  # what the answer function returns is passed on as it is


class Slot:
    """Counts give-backs of the query slot."""

    def __init__(self) -> None:
        self.released = 0
        self.lock = threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.released += 1


def collect(stream: AnswerStream, limit: int | None = None) -> list[tuple[str, object]]:
    async def run() -> list[tuple[str, object]]:
        out = []
        async for piece in stream.events():
            out.append(piece)
            if limit is not None and len(out) == limit:
                break  # the client went away
        return out

    return asyncio.run(run())


def test_tokens_and_waits_in_order_then_the_answer_and_the_slot_back_once():
    def answer(on_token):
        on_token("Otters ")
        emit("rate limited by http://llm (HTTP 429); retrying in 1 s, attempt 2 of 6")
        emit("")  # the end of a wait is not an event
        on_token("eat fish.")
        return ANSWER

    slot = Slot()
    stream = AnswerStream(answer, name="test-stream", release=slot).start()
    assert collect(stream) == [
        ("token", "Otters "),
        ("wait", "rate limited by http://llm (HTTP 429); retrying in 1 s, attempt 2 of 6"),
        ("token", "eat fish."),
        ("done", ANSWER),
    ]
    stream.cancel()  # after the end: nothing more to give back
    assert slot.released == 1


def test_pieces_made_before_the_reader_attached_are_kept():
    slot = Slot()
    stream = AnswerStream(lambda on_token: (on_token("a"), on_token("b"), ANSWER)[2], name="t", release=slot)
    stream.start()
    deadline = time.monotonic() + 5
    while not stream.finished and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.finished and slot.released == 1  # given back at the end, before anyone read
    assert collect(stream) == [("token", "a"), ("token", "b"), ("done", ANSWER)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bug's traceback
def test_a_known_error_and_a_bug_end_the_events_with_an_error():
    def failing(on_token):
        on_token("half")
        raise LLMError("the LLM backend at http://llm answered 500")

    slot = Slot()
    events = collect(AnswerStream(failing, name="test-stream", release=slot).start())
    assert events[0] == ("token", "half") and events[-1][0] == "error"
    assert isinstance(events[-1][1], LLMError) and len(events) == 2

    def buggy(on_token):
        raise KeyError("a bug")  # not ours: logged by the thread, told as an error

    stream = AnswerStream(buggy, name="test-stream", release=slot).start()
    events = collect(stream)
    stream.result()  # the thread's traceback is logged within this test
    assert len(events) == 1 and events[0][0] == "error" and isinstance(events[0][1], RuntimeError)
    assert slot.released == 2
    kind, value = AnswerStream(failing, name="t", release=slot).start().result()
    assert kind == "error" and isinstance(value, LLMError) and slot.released == 3


def test_a_reader_that_leaves_gives_the_slot_back_at_once_and_stops_the_answer():
    produced: list[int] = []
    gate = threading.Event()

    def endless(on_token):  # a model that would stream for a minute
        for i in range(600):
            produced.append(i)
            on_token(f"t{i} ")
            if i == 0:
                gate.wait(5)  # the client leaves while the model is between tokens
            else:
                time.sleep(0.1)
        return ANSWER

    slot = Slot()
    stream = AnswerStream(endless, name="test-stream", release=slot).start()
    assert collect(stream, limit=1) == [("token", "t0 ")]
    assert slot.released == 1  # given back when the reader left, not when the model ends
    gate.set()
    deadline = time.monotonic() + 5
    while not stream.finished and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stream.finished and len(produced) <= 2  # raised at the next token: the upstream stream closes
    assert slot.released == 1


def test_stopping_the_server_ends_an_attached_reader_with_a_stopping_error():
    gate = threading.Event()

    def waiting(on_token):
        on_token("first")
        gate.wait(10)  # a model thinking for a long time
        on_token("never sent")
        return ANSWER

    slot = Slot()
    stream = AnswerStream(waiting, name="test-stream", release=slot).start()

    async def run() -> list[tuple[str, object]]:
        out = []
        async for piece in stream.events():
            out.append(piece)
            if piece == ("token", "first"):
                stream.cancel(ServerStopping("the server is stopping"))
        return out

    t0 = time.perf_counter()
    events = asyncio.run(run())
    assert time.perf_counter() - t0 < 5  # did not wait for the model
    assert events[0] == ("token", "first") and events[1][0] == "error"
    assert isinstance(events[1][1], ServerStopping) and len(events) == 2 and slot.released == 1
    gate.set()


def test_the_response_notices_a_client_gone_while_no_piece_comes():
    closed = threading.Event()

    async def silent():
        yield "event: contexts\ndata: {}\n\n"
        await asyncio.sleep(60)  # the model has not said a word yet
        yield "never"

    sent: list[dict] = []

    async def receive():
        await asyncio.sleep(0.2)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    response = ClosingStream(silent(), on_close=closed.set, media_type="text/event-stream")
    t0 = time.perf_counter()
    asyncio.run(response({"type": "http", "asgi": {"spec_version": "2.3"}}, receive, send))
    assert closed.is_set() and time.perf_counter() - t0 < 5
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]


def test_the_response_closes_its_stream_when_a_write_fails():
    closed = threading.Event()

    async def lines():
        while True:
            yield "data: x\n\n"
            await asyncio.sleep(0.01)

    async def receive():
        await asyncio.sleep(60)
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.body":
            raise ConnectionResetError("the client reset the connection")

    response = ClosingStream(lines(), on_close=closed.set, media_type="text/event-stream")
    asyncio.run(response({"type": "http", "asgi": {"spec_version": "2.3"}}, receive, send))
    assert closed.is_set()


def test_sse_writes_one_event():
    assert sse("token", {"text": "é"}) == 'event: token\ndata: {"text": "é"}\n\n'
