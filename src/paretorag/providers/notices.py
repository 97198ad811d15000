"""Waits worth telling the user about: a rate-limited or failing model server being retried.

:func:`emit` logs each wait on the ``paretorag.wait`` logger (the CLI prints it on stderr,
one line per wait) and tells the listener of the current context, if any: the server
shows it in a job's progress and in a streamed answer's events. :func:`listening` sets
that listener for the code it wraps; threads started for that code through
:func:`run_in_context` keep it. An empty message means the wait is over.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("paretorag.wait")
_listener: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "paretorag_wait_listener", default=None
)


def emit(message: str) -> None:
    """Report a wait (``message``) or its end (``""``)."""
    if message:
        log.warning("%s", message)
    listener = _listener.get()
    if listener is not None:
        listener(message)


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Send the waits of the wrapped code (this thread, and threads started with
    :func:`run_in_context`) to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def run_in_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` bound to a copy of the caller's context (for ``ThreadPoolExecutor.submit``)."""
    ctx = contextvars.copy_context()

    def call(*args: Any, **kwargs: Any) -> Any:
        return ctx.copy().run(fn, *args, **kwargs)  # a copy per call: calls may run at once

    return call


__all__ = ["emit", "listening", "run_in_context"]
