"""Progress reporting seam: the library reports, the CLI draws (rich bars)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol


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

    Results go to stdout, so redirecting them never captures a bar.
    """

    def __init__(self) -> None:
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
            console=Console(stderr=True),
            transient=False,
        )

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        from rich.markup import escape

        task_id = self._progress.add_task(escape(description), total=total)  # labels may hold user text
        progress = self._progress

        class _Task:
            def advance(self, n: int = 1) -> None:
                progress.advance(task_id, n)

        yield _Task()
        # only on success: an interrupted or failed stage keeps its bar where it stopped
        if total is not None:
            progress.update(task_id, completed=total)
