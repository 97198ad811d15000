"""The streamed answer's thread and queue (``server.streaming.answer_events``), which
``/query/stream`` and both chat dialects share: events in order, errors, and an early close."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from paretorag.errors import LLMError
from paretorag.providers.notices import emit
from paretorag.server.streaming import answer_events, sse

ANSWER = object()  # what the answer function returns is passed on as it is


def test_tokens_and_waits_in_order_then_the_answer():
    def answer(on_token):
        on_token("Otters ")
        emit("rate limited by http://llm (HTTP 429); retrying in 1 s, attempt 2 of 6")
        emit("")  # the end of a wait is not an event
        on_token("eat fish.")
        return ANSWER

    events = list(answer_events(answer, name="test-stream"))
    assert events == [
        ("token", "Otters "),
        ("wait", "rate limited by http://llm (HTTP 429); retrying in 1 s, attempt 2 of 6"),
        ("token", "eat fish."),
        ("done", ANSWER),
    ]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bug's traceback
def test_a_known_error_and_a_bug_end_the_events_with_an_error():
    def failing(on_token):
        on_token("half")
        raise LLMError("the LLM backend at http://llm answered 500")

    events = list(answer_events(failing, name="test-stream"))
    assert events[0] == ("token", "half") and events[-1][0] == "error"
    assert isinstance(events[-1][1], LLMError) and len(events) == 2

    def buggy(on_token):
        raise KeyError("a bug")  # not ours: logged by the thread, told as an error

    events = list(answer_events(buggy, name="test-stream"))
    assert len(events) == 1 and events[0][0] == "error" and isinstance(events[0][1], RuntimeError)


def test_closing_early_waits_for_the_answer_to_finish():
    finished = threading.Event()

    def slow(on_token):
        on_token("first")
        time.sleep(0.3)  # still answering when the client goes away
        finished.set()
        return ANSWER

    events = answer_events(slow, name="test-stream")
    assert next(events) == ("token", "first")
    t0 = time.perf_counter()
    events.close()  # the client went away: the caller may give its reader back after this
    assert finished.is_set() and time.perf_counter() - t0 > 0.1


def test_sse_writes_one_event():
    assert sse("token", {"text": "é"}) == 'event: token\ndata: {"text": "é"}\n\n'
