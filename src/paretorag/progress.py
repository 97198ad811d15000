"""Progress reporting seam: the library reports, the CLI draws (rich bars)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console


class ProgressTask(Protocol):
    def advance(self, n: int = 1) -> None: ...


class Progress(Protocol):
    """Factory of progress tasks: ``with progress.task("embed", total=n) as t: t.advance()``."""

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]: ...


class _NullTask:
    def advance(self, n: int = 1) -> None:
        return None


class NullProgress:
    """Reports nothing (the library default)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        yield _NullTask()


class RichProgress:
    """Rich progress bars with counts, rate and ETA, drawn on stderr (used by the CLI).

    Results go to stdout, so redirecting them never captures a bar. Lines printed on
    ``console`` while the bars are drawn go above them (give the console the CLI prints
    its notes on); the bars start with the first task, so a command that fails before
    any work leaves no empty bar line before its error.
    """

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as _RichProgress

        self._progress = _RichProgress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._started = False
        self._lock = threading.Lock()  # builder threads add their tasks at once

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._started:
                self._progress.stop()
                self._started = False

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        from rich.markup import escape

        with self._lock:
            if not self._started:
                self._started = True
                self._progress.start()
        task_id = self._progress.add_task(escape(description), total=total)  # labels may hold user text
        progress = self._progress

        class _Task:
            def advance(self, n: int = 1) -> None:
                progress.advance(task_id, n)

        yield _Task()
        # only on success: an interrupted or failed stage keeps its bar where it stopped
        if total is not None:
            progress.update(task_id, completed=total)
        else:  # a stage of unknown size ends as a full bar, not "0/?"
            done = next((t.completed for t in progress.tasks if t.id == task_id), 0.0)
            progress.update(task_id, total=done, completed=done)
