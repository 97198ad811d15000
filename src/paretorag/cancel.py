"""Stopping a build promptly on Ctrl-C (and on SIGTERM, the same way).

The main thread receives ``KeyboardInterrupt``; builders run in worker threads. The
indexer sets a :class:`threading.Event`, and the progress bars and LLM clients handed to
builders raise :class:`Cancelled` at their next step, so every thread stops within one
step (one chunk, one LLM call) instead of finishing its whole structure.

SIGTERM (``kill PID``, a service manager, a container stop) raises :class:`Terminated`, a
``KeyboardInterrupt``, in the main thread once :func:`raise_on_sigterm` is set: every
clean-up written for Ctrl-C runs for it too, and the command exits 143 instead of 130.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType

from .progress import Progress, ProgressTask
from .providers.base import LLM, Completion, Request, is_generative


class Cancelled(BaseException):
    """Raised inside a builder thread once the build was interrupted (not an error)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread where Ctrl-C raises ``KeyboardInterrupt``."""


_sigterm = threading.Event()


def raise_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise :class:`Terminated` in the main thread; returns what puts the previous
    handler back. Off the main thread (where no handler can be set) it does nothing. A second
    SIGTERM during the clean-up is ignored, so that the clean-up finishes."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        if not _sigterm.is_set():
            _sigterm.set()
            raise Terminated("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def sigterm_received() -> bool:
    """Whether this process was stopped by SIGTERM (through :func:`raise_on_sigterm`)."""
    return _sigterm.is_set()


def check(event: threading.Event) -> None:
    if event.is_set():
        raise Cancelled("interrupted")


class CancellableProgress:
    """A progress factory whose tasks raise :class:`Cancelled` at ``advance`` once cancelled."""

    def __init__(self, inner: Progress, event: threading.Event) -> None:
        self._inner = inner
        self._event = event

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]:
        return self._task(description, total)

    @contextmanager
    def _task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        event = self._event
        check(event)
        with self._inner.task(description, total) as inner:

            class _Task:
                def advance(self, n: int = 1) -> None:
                    inner.advance(n)
                    check(event)

            yield _Task()


class CancellableLLM:
    """An LLM that refuses new calls once cancelled."""

    def __init__(self, inner: LLM, event: threading.Event) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_concurrency = int(getattr(inner, "max_concurrency", 1))
        self.generative = is_generative(inner)  # builders take their LLM-free path behind this wrapper
        self._event = event

    def complete(self, request: Request) -> Completion:
        check(self._event)
        return self.inner.complete(request)


PAUSE_ENV = "PARETORAG_TEST_PAUSE_AT"
_passes: dict[str, int] = {}


def pause_point(name: str) -> None:
    """Hold a write at a named point for crash tests (``PARETORAG_TEST_PAUSE_AT=NAME[:N]``,
    the ``N``-th time the point is reached, default the first).

    Says ``paretorag: paused at NAME`` on stderr and sleeps up to 60 s, time for the test to
    SIGKILL the process; unset (always, outside tests) it costs one environment lookup.
    Points: ``before-embedding`` (documents stored, no vector computed), ``mid-embedding``
    (after a batch of vectors is cached), ``before-commit`` (vectors and structures
    written, manifest not yet replaced).
    """
    import os

    wanted, _, nth = os.environ.get(PAUSE_ENV, "").partition(":")
    if wanted != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] != (int(nth) if nth.isdigit() else 1):
        return
    import sys
    import time

    print(f"paretorag: paused at {name}", file=sys.stderr, flush=True)
    time.sleep(60)
