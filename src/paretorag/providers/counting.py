"""Counts of model calls per build stage: embedder texts and batches, spaCy documents.

A build sets the stage of the current context (``with counting(calls, "build.kg"):``;
each builder runs in a thread of its own) and providers add to it with :func:`record`;
threads started with :func:`paretorag.providers.notices.run_in_context` (concurrent
LLM calls) count under the stage of the thread that started them. Outside a build
nothing is counted. Work done without a model is counted here too, apart from the LLM
usage: ``sentences_scored`` by the ``extractive`` backend's summaries and answers. ``paretorag inspect`` shows the counts, next to the
LLM calls the usage counter already keeps per stage.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class ModelCalls:
    """``stage -> {counter -> n}`` (thread-safe)."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, key: str, n: int = 1) -> None:
        with self._lock:
            per = self.counts.setdefault(stage, {})
            per[key] = per.get(key, 0) + int(n)

    def get(self, stage: str, key: str) -> int:
        with self._lock:
            return self.counts.get(stage, {}).get(key, 0)

    def total(self, key: str) -> int:
        with self._lock:
            return sum(per.get(key, 0) for per in self.counts.values())

    def to_json(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {s: dict(sorted(per.items())) for s, per in sorted(self.counts.items())}


_TARGET: ContextVar[tuple[ModelCalls, str] | None] = ContextVar("paretorag_counting", default=None)


@contextmanager
def counting(calls: ModelCalls, stage: str) -> Iterator[None]:
    """Count the model calls made inside the block (and the threads it starts in context) under ``stage``."""
    token = _TARGET.set((calls, stage))
    try:
        yield
    finally:
        _TARGET.reset(token)


def record(key: str, n: int = 1) -> None:
    """Add ``n`` to counter ``key`` of the current stage (no-op outside a build)."""
    target = _TARGET.get()
    if target is not None and n:
        target[0].add(target[1], key, n)


__all__ = ["ModelCalls", "counting", "record"]
