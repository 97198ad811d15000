"""Writes as jobs: one writer thread per server, progress and outcome kept per job id.

Inserts and deletes can take minutes (embedding, structure builds), so the API answers
with a job id at once and ``GET /jobs/{id}`` reports the same stages and counts that the
CLI draws as progress bars. Jobs run one at a time, in order, on a single thread that
owns the server's only writing :class:`~paretorag.RAG`; that RAG takes the index's writer
lock for each job, so another server or a CLI ``insert`` on the same index waits for it
(and the job waits for them, saying whom it waits for). A job waiting on a model server
(rate limited, or failing and retried) says so too.

Jobs are durable (:mod:`paretorag.storage.jobs`): stored with their input when accepted,
marked running and finished as they go, resumed by the next server after a crash, and
answered from the table after a restart for the retention period.
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
from ..providers.notices import listening
from ..rag import RAG
from ..storage.jobs import JobRecord, JobTable

MAX_JOBS_KEPT = 1000  # in memory; older finished jobs are answered from the jobs table
log = logging.getLogger("paretorag.server")


@dataclass
class Stage:
    name: str
    total: int | None
    done: int = 0
    finished: bool = False


@dataclass
class Job:
    """One write: ``queued`` -> ``running`` (<-> ``waiting``, for the writer lock or a model
    server, named in ``waiting_for``) -> ``done`` | ``failed``."""

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
    error_json: dict[str, Any] | None = None  # the error of a job read back from the jobs table
    resumed: bool = False  # accepted by an earlier server, which stopped before finishing it
    done_event: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def from_record(cls, rec: JobRecord) -> Job:
        job = cls(rec.job_id, rec.kind, rec.detail, state=rec.state, created=rec.created)
        job.started, job.finished, job.result, job.error_json = (
            rec.started,
            rec.finished,
            rec.result,
            rec.error,
        )
        if rec.state in ("done", "failed"):
            job.done_event.set()
        return job

    def error_dict(self) -> dict[str, Any] | None:
        from .errors import error_body  # the same error shape as the API's responses

        return error_body(self.error)["error"] if self.error is not None else self.error_json

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "resumed": self.resumed,
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
            "error": self.error_dict(),
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
            if self.job.state == "waiting":  # whatever it waited for is over: it works again
                self.job.state = "running"
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
    table : JobTable, optional
        Where jobs are stored (none: in memory only).
    retention_s : float
        Finished jobs older than this are removed from the table.
    """

    def __init__(
        self,
        open_rag: Callable[[Callable[[str], None]], RAG],
        on_finish: Callable[[Job], None] | None = None,
        table: JobTable | None = None,
        retention_s: float = 7 * 24 * 3600,
    ) -> None:
        self._open_rag = open_rag
        self._on_finish = on_finish
        self._table = table
        self._retention_s = retention_s
        self._rag: RAG | None = None
        self._queue: queue.Queue[tuple[Job, Work] | None] = queue.Queue()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._current: Job | None = None
        self._thread = threading.Thread(target=self._run, name="paretorag-writer", daemon=True)
        self._thread.start()

    def submit(
        self,
        kind: str,
        detail: dict[str, Any],
        work: Work,
        *,
        job_id: str | None = None,
        inputs: dict[str, Any] | None = None,
        docs: list[Any] | None = None,
        files: list[tuple[str, bytes]] | None = None,
        resumed: JobRecord | None = None,
    ) -> Job:
        """Queue a job: stored first (with ``inputs``, ``docs`` and ``files``, one
        transaction), so an accepted job survives a crash; a ``resumed`` one is already stored."""
        job = Job(job_id or new_job_id(), kind, detail)
        if resumed is not None:
            job.created, job.resumed = resumed.created, True
        elif self._table is not None:
            self._table.create(job.id, kind, detail, inputs or {}, docs, created=job.created, files=files)
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
        """A job of this server, or one stored by an earlier one (within the retention period)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None and self._table is not None:
            rec = self._table.get(job_id)
            job = Job.from_record(rec) if rec is not None else None
        return job

    def snapshot(self, job: Job) -> dict[str, Any]:
        with self._lock:
            return job.to_json()

    def pending(self) -> int:
        with self._lock:
            return sum(j.state in ("queued", "running", "waiting") for j in self._jobs.values())

    def _on_wait(self, message: str) -> None:
        """The current job waits for ``message`` (the writer lock, a model server), or, with
        an empty message, works again."""
        with self._lock:
            if self._current is not None:
                self._current.state = "waiting" if message else "running"
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
                if self._table is not None:
                    self._table.started(job.id)
                if self._rag is None:
                    self._rag = self._open_rag(self._on_wait)
                self._rag.origin = f"server job {job.id} ({job.kind})"
                self._rag.notes.clear()  # notes are per write; none are kept across jobs
                with listening(self._on_wait):  # waits on a model server, in this job's threads
                    outcome = ("done", work(self._rag, JobProgress(job, self._lock)), None)
            except (ParetoragError, OSError) as exc:  # reported in the job; the writer goes on
                outcome = ("failed", None, exc)
            finally:  # anything else is a bug: the job says so, the thread dies, submit() restarts it
                self._record(job, outcome)

    def _record(self, job: Job, outcome: tuple[str, dict[str, Any] | None, BaseException | None]) -> None:
        """Store how a job ended (kept for the retention period), then tell the waiters."""
        with self._lock:
            job.state, job.result, job.error = outcome
            job.finished = time.time()
            job.waiting_for = ""
            if self._current is job:
                self._current = None
        if self._table is not None:
            try:
                self._table.finish(job.id, job.state, job.result, job.error_dict())
                self._table.prune(self._retention_s)
            except (ParetoragError, OSError) as exc:  # the job's outcome stands; the table lags
                log.error("could not record job %s as %s: %s", job.id, job.state, exc)
        job.done_event.set()
        if self._on_finish is not None:
            self._on_finish(job)

    def fail(self, rec: JobRecord, reason: BaseException) -> Job:
        """Record a stored job that cannot run (its input is gone) as failed, with the reason."""
        job = Job.from_record(rec)
        job.resumed = True
        with self._lock:
            self._jobs[job.id] = job
        self._record(job, ("failed", None, reason))
        return job

    @property
    def running(self) -> bool:
        """Whether the writer thread is still alive (after :meth:`close`: a job outlived its timeout)."""
        return self._thread.is_alive()

    def close(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs (up to ``timeout`` seconds), then close the writing RAG."""
        self._queue.put(None)
        self._thread.join(timeout)
        if self._rag is not None and not self._thread.is_alive():
            self._rag.close()


def new_job_id() -> str:
    return secrets.token_hex(8)
