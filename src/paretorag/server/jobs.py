"""Writes as jobs: one writer thread per server, progress and outcome kept per job id.

Inserts and deletes can take minutes (embedding, structure builds), so the API answers
with a job id at once and ``GET /jobs/{id}`` reports the same stages and counts that the
CLI draws as progress bars. Jobs run one at a time, in order, on a single thread that
owns the server's only writing :class:`~paretorag.RAG`; that RAG takes the index's writer
lock for each job, so another server or a CLI ``insert`` on the same index waits for it
(and the job waits for them, saying whom it waits for).
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParetoragError
from ..progress import ProgressTask
from ..rag import RAG

MAX_JOBS_KEPT = 1000
log = logging.getLogger("paretorag.server")


@dataclass
class Stage:
    name: str
    total: int | None
    done: int = 0
    finished: bool = False


@dataclass
class Job:
    """One write: ``queued`` -> ``running`` (-> ``waiting`` for the lock) -> ``done`` | ``failed``."""

    id: str
    kind: str
    detail: dict[str, Any]
    state: str = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    stages: list[Stage] = field(default_factory=list)
    waiting_for: str = ""
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    done_event: threading.Event = field(default_factory=threading.Event)

    def to_json(self) -> dict[str, Any]:
        from .errors import error_body  # the same error shape as the API's responses

        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "detail": self.detail,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "waiting_for": self.waiting_for,
            "progress": [
                {"stage": s.name, "done": s.done, "total": s.total, "finished": s.finished}
                for s in self.stages
            ],
            "result": self.result,
            "error": error_body(self.error)["error"] if self.error is not None else None,
        }


class JobProgress:
    """A :class:`~paretorag.progress.Progress` that records stages in a job (what the CLI draws)."""

    def __init__(self, job: Job, lock: threading.Lock) -> None:
        self.job = job
        self._lock = lock

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        stage = Stage(description, total)
        with self._lock:
            self.job.stages.append(stage)
            self.job.waiting_for = ""
        lock = self._lock

        class _Task:
            def advance(self, n: int = 1) -> None:
                with lock:
                    stage.done += n

        yield _Task()
        with lock:
            stage.finished = True
            if total is not None:
                stage.done = total


Work = Callable[[RAG, JobProgress], dict[str, Any]]


class Writer:
    """The server's single writer: a thread running queued jobs against one writing RAG.

    Parameters
    ----------
    open_rag : callable
        Opens the writing RAG (called once, on the writer thread, at the first job).
        It is given ``on_wait``, to be passed to :meth:`paretorag.RAG.open`.
    on_finish : callable, optional
        Called with each finished job (metrics).
    """

    def __init__(
        self,
        open_rag: Callable[[Callable[[str], None]], RAG],
        on_finish: Callable[[Job], None] | None = None,
    ) -> None:
        self._open_rag = open_rag
        self._on_finish = on_finish
        self._rag: RAG | None = None
        self._queue: queue.Queue[tuple[Job, Work] | None] = queue.Queue()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._current: Job | None = None
        self._thread = threading.Thread(target=self._run, name="paretorag-writer", daemon=True)
        self._thread.start()

    def submit(self, kind: str, detail: dict[str, Any], work: Work) -> Job:
        job = Job(secrets.token_hex(8), kind, detail)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > MAX_JOBS_KEPT:  # forget the oldest finished ones
                oldest = next(iter(self._jobs.values()))
                if oldest.state not in ("done", "failed"):
                    break
                self._jobs.popitem(last=False)
        with self._lock:
            if not self._thread.is_alive():  # a bug stopped the last job's thread: start another
                log.error("the writer thread had stopped; restarting it")
                self._thread = threading.Thread(target=self._run, name="paretorag-writer", daemon=True)
                self._thread.start()
        self._queue.put((job, work))
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def snapshot(self, job: Job) -> dict[str, Any]:
        with self._lock:
            return job.to_json()

    def pending(self) -> int:
        with self._lock:
            return sum(j.state in ("queued", "running", "waiting") for j in self._jobs.values())

    def _on_wait(self, message: str) -> None:
        with self._lock:
            if self._current is not None:
                self._current.state = "waiting"
                self._current.waiting_for = message

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            job, work = item
            with self._lock:
                self._current = job
                job.state = "running"
                job.started = time.time()
            outcome: tuple[str, dict[str, Any] | None, BaseException | None] = (
                "failed",
                None,
                RuntimeError("internal error; see the server's log"),
            )
            try:
                if self._rag is None:
                    self._rag = self._open_rag(self._on_wait)
                outcome = ("done", work(self._rag, JobProgress(job, self._lock)), None)
            except (ParetoragError, OSError) as exc:  # reported in the job; the writer goes on
                outcome = ("failed", None, exc)
            finally:  # anything else is a bug: the job says so, the thread dies, submit() restarts it
                with self._lock:
                    job.state, job.result, job.error = outcome
                    job.finished = time.time()
                    job.waiting_for = ""
                    self._current = None
                job.done_event.set()
                if self._on_finish is not None:
                    self._on_finish(job)

    def close(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs (up to ``timeout`` seconds), then close the writing RAG."""
        self._queue.put(None)
        self._thread.join(timeout)
        if self._rag is not None and not self._thread.is_alive():
            self._rag.close()
