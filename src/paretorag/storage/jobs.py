"""Durable records of writes: the server's jobs, and who left uncommitted work in an index.

A server job is stored when it is accepted, with its input, in one SQLite transaction:
the documents of a JSON-record upload as rows of ``job_documents``, the saved files of a
multipart upload as names under ``uploads/<job id>/`` in the index directory, the ids of
a delete in the job row. A server killed while a job is queued or running finds it here
at its next start and runs it again; the job's documents already stored, and every
cached vector, are reused. A finished job keeps its state, result or error for the
retention period (:data:`DEFAULT_RETENTION_S`), so ``GET /jobs/{id}`` answers across
restarts.

The tables are created by the first job, so an index made before them opens as it was and
an older paretorag, which does not read them, still opens an index that has them: the
index format version is unchanged.

Separately, every write that stores documents or marks deletes before committing them
records who it is (``kv`` key :data:`ORIGINS_KEY`), cleared by the commit: when a write is
killed in between, ``paretorag inspect`` and the next writer name the command or job that
left the work.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DamagedIndexError
from ..types import Document
from .manifest import Manifest

if TYPE_CHECKING:
    from .backend import IndexBackend
from .store import Store

DEFAULT_RETENTION_S = 7 * 24 * 3600  # finished job records are kept a week
MAX_ATTEMPTS = 3  # a job the server died running this often is not run again (it may be the cause)
ORIGINS_KEY = "pending.origins"
FINISHED = ("done", "failed")
UPLOADS = "uploads"  # <index>/uploads/<job id>/: the files of an accepted upload, until its job ends

_TABLES = (
    """CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT UNIQUE NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT NOT NULL,
    input TEXT NOT NULL,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    baseline TEXT,
    result TEXT,
    error TEXT,
    owner TEXT,
    attempts INTEGER NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS job_documents (
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    presplit INTEGER NOT NULL,
    doc_id TEXT NOT NULL,
    PRIMARY KEY (job_id, ord)
)""",
    # the bytes of uploaded files, where the uploads folder is not shared by every server (a
    # database index): a server on another host restores them to resume the job
    """CREATE TABLE IF NOT EXISTS job_files (
    job_id TEXT NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, path)
)""",
)
_COLUMNS = (
    "job_id, kind, state, detail, input, created, started, finished, baseline, result, error, owner, attempts"
)


def _dialect(ddl: str, dialect: str) -> str:
    """A table of :data:`_TABLES` in PostgreSQL's types (8-byte floats, an identity key)."""
    if dialect == "sqlite":
        return ddl
    return (
        ddl.replace(
            "seq INTEGER PRIMARY KEY AUTOINCREMENT", "seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
        )
        .replace(" REAL", " DOUBLE PRECISION")
        .replace(" BLOB", " BYTEA")
    )


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def server_id() -> str:
    """This process as a job owner: ``host:pid``."""
    return _me()


@dataclass
class JobRecord:
    """A stored job: what was asked (``detail``, ``input``), how far it got, how it ended."""

    job_id: str
    kind: str
    state: str
    detail: dict[str, Any]
    input: dict[str, Any]
    created: float
    started: float | None = None
    finished: float | None = None
    baseline: list[str] | None = None  # its documents already committed when it first ran
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    owner: str = ""  # host:pid of the server running it
    attempts: int = 0  # runs started (a run the server died in included)

    def owner_alive(self, probe: Callable[[str], bool | None] | None = None) -> bool:
        """Whether another server process, still running, owns the job. ``probe`` asks the
        index's backend about an owner on any host (a PostgreSQL index: the server's presence
        lock); without an answer only a process of this host can be seen alive."""
        if self.owner == _me() or not self.owner:
            return False
        if probe is not None:
            seen = probe(self.owner)
            if seen is not None:
                return seen
        host, _, pid = self.owner.rpartition(":")
        if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, another user's
            return True
        return True

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> JobRecord:
        def js(value: Any) -> Any:
            return None if value is None else json.loads(value)

        return cls(
            job_id=str(row[0]),
            kind=str(row[1]),
            state=str(row[2]),
            detail=js(row[3]) or {},
            input=js(row[4]) or {},
            created=float(row[5]),
            started=row[6],
            finished=row[7],
            baseline=js(row[8]),
            result=js(row[9]),
            error=js(row[10]),
            owner=str(row[11] or ""),
            attempts=int(row[12] or 0),
        )


class JobTable:
    """The ``jobs`` and ``job_documents`` tables of one index (created at the first write)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._ready = False

    def exists(self) -> bool:
        return self.store.db.has_table("jobs")

    def _ensure(self) -> None:
        if self._ready:
            return
        with self.store.transaction() as c:
            for ddl in _TABLES:
                c.execute(_dialect(ddl, self.store.db.dialect))
        self._ready = True

    def create(
        self,
        job_id: str,
        kind: str,
        detail: dict[str, Any],
        inputs: dict[str, Any],
        docs: list[Document] | None = None,
        *,
        created: float | None = None,
        files: list[tuple[str, bytes]] | None = None,
    ) -> None:
        """Store an accepted job, its documents and its uploaded ``files`` (path under the
        uploads folder, bytes) in one transaction."""
        self._ensure()
        with self.store.transaction() as c:
            c.execute(
                "INSERT INTO jobs(job_id,kind,state,detail,input,created,owner) VALUES (?,?,?,?,?,?,?)",
                (
                    job_id,
                    kind,
                    "queued",
                    json.dumps(detail),
                    json.dumps(inputs),
                    created or time.time(),
                    _me(),
                ),
            )
            c.executemany(
                "INSERT INTO job_documents(job_id,ord,title,text,source,presplit,doc_id) VALUES (?,?,?,?,?,?,?)",
                [
                    (job_id, i, d.title, d.text, d.source, int(d.presplit), d.doc_id)
                    for i, d in enumerate(docs or [])
                ],
            )
            if files:
                c.executemany(
                    "INSERT INTO job_files(job_id,path,data) VALUES (?,?,?)",
                    [(job_id, path, data) for path, data in files],
                )

    def claim(self, job_id: str) -> None:
        """This process now owns a job another server accepted (and stopped before finishing)."""
        self._ensure()
        with self.store.transaction() as c:
            c.execute("UPDATE jobs SET owner=? WHERE job_id=?", (_me(), job_id))

    def started(self, job_id: str) -> None:
        """Mark a job running and count the run (the first start time is kept)."""
        self._ensure()
        with self.store.transaction() as c:
            c.execute(
                "UPDATE jobs SET state='running', started=COALESCE(started, ?), attempts=attempts+1 "
                "WHERE job_id=?",
                (time.time(), job_id),
            )

    def set_baseline(self, job_id: str, doc_ids: list[str]) -> None:
        """The job's documents already committed when it first ran (re-runs keep the first)."""
        self._ensure()
        with self.store.transaction() as c:
            c.execute(
                "UPDATE jobs SET baseline=COALESCE(baseline, ?) WHERE job_id=?", (json.dumps(doc_ids), job_id)
            )

    def finish(
        self, job_id: str, state: str, result: dict[str, Any] | None, error: dict[str, Any] | None
    ) -> None:
        """Record how a job ended; its stored documents are dropped (the index has them now)."""
        self._ensure()
        with self.store.transaction() as c:
            c.execute(
                "UPDATE jobs SET state=?, finished=?, result=?, error=? WHERE job_id=?",
                (
                    state,
                    time.time(),
                    None if result is None else json.dumps(result),
                    None if error is None else json.dumps(error),
                    job_id,
                ),
            )
            c.execute("DELETE FROM job_documents WHERE job_id=?", (job_id,))
            c.execute("DELETE FROM job_files WHERE job_id=?", (job_id,))

    def restore_files(self, job_id: str, root: Path) -> int:
        """Write the stored files of ``job_id`` under ``root`` where they are missing (a job
        accepted by a server on another host); returns how many were written."""
        if not self.store.db.has_table("job_files"):
            return 0
        written = 0
        for path, data in self.store.rows("SELECT path, data FROM job_files WHERE job_id=?", (job_id,)):
            target = root / str(path)
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(bytes(data))
                written += 1
        return written

    def get(self, job_id: str) -> JobRecord | None:
        if not self.exists():
            return None
        rows = self.store.rows(f"SELECT {_COLUMNS} FROM jobs WHERE job_id=?", (job_id,))
        return JobRecord.from_row(rows[0]) if rows else None

    def unfinished(self) -> list[JobRecord]:
        """Jobs accepted but not finished, in the order they were accepted."""
        if not self.exists():
            return []
        rows = self.store.rows(
            f"SELECT {_COLUMNS} FROM jobs WHERE state NOT IN ('done','failed') ORDER BY seq"
        )
        return [JobRecord.from_row(r) for r in rows]

    def documents(self, job_id: str) -> list[Document]:
        """The documents stored with a JSON-record upload, in the order they were sent."""
        rows = self.store.rows(
            "SELECT doc_id, title, text, source, presplit FROM job_documents WHERE job_id=? ORDER BY ord",
            (job_id,),
        )
        return [Document(str(r[0]), str(r[1]), str(r[2]), str(r[3]), bool(r[4])) for r in rows]

    def prune(self, keep_s: float, now: float | None = None) -> int:
        """Forget finished jobs that ended more than ``keep_s`` seconds ago."""
        if not self.exists():
            return 0
        cutoff = (now if now is not None else time.time()) - keep_s
        with self.store.transaction() as c:
            cur = c.execute("DELETE FROM jobs WHERE state IN ('done','failed') AND finished < ?", (cutoff,))
            return int(cur.rowcount)


# -- uncommitted work -------------------------------------------------------------
def note_origin(store: Store, origin: str) -> None:
    """Record that ``origin`` (a command or a job) is about to store work it has not committed."""
    origins = store.get_kv(ORIGINS_KEY) or []
    if not any(o.get("by") == origin for o in origins):
        store.put_kv(ORIGINS_KEY, [*origins, {"by": origin, "since": time.time()}])


def clear_origins(store: Store) -> None:
    """Called after a commit: nothing stored is uncommitted any more."""
    store.delete_kv(ORIGINS_KEY)


def describe_origins(origins: list[dict[str, Any]]) -> str:
    """``job 1a2b (insert) since 2026-01-02 10:11 UTC, and paretorag insert (pid 7) since ...``."""
    parts = [
        f"{o.get('by', 'an unknown writer')} since "
        + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(o.get("since", 0))))
        for o in origins
    ]
    return ", and ".join(parts) if parts else "an interrupted write (not recorded: an older paretorag?)"


def committed_doc_ids(backend: IndexBackend, manifest: Manifest) -> set[str]:
    """Documents of the committed chunk set (chunk ids are ``<doc id>#<n>``)."""
    if not manifest.vectors:
        return set()
    try:
        ids = backend.vector_ids(manifest.vectors)
    except DamagedIndexError:
        return set()
    return {i.partition("#")[0] for i in ids if i}


def pending_work(backend: IndexBackend, store: Store, manifest: Manifest) -> dict[str, Any]:
    """What is stored but not committed: documents, deletes, who left them, and server jobs
    accepted but not finished (their documents may not be stored yet)."""
    committed = committed_doc_ids(backend, manifest)
    docs = [
        {"doc_id": d["doc_id"], "title": d["title"], "source": d["source"]}
        for d in store.documents()
        if d["doc_id"] not in committed
    ]
    deletes = store.pending_deletes()
    origins = (store.get_kv(ORIGINS_KEY) or []) if (docs or deletes) else []
    jobs = [
        {
            "job_id": j.job_id,
            "kind": j.kind,
            "state": j.state,
            "created": j.created,
            "documents": int(j.input.get("documents", 0)),
            "doc_ids": list(j.input.get("doc_ids", [])),
        }
        for j in JobTable(store).unfinished()
    ]
    return {"documents": docs, "deletes": deletes, "left_by": origins, "jobs": jobs}


__all__ = [
    "DEFAULT_RETENTION_S",
    "MAX_ATTEMPTS",
    "JobRecord",
    "JobTable",
    "clear_origins",
    "committed_doc_ids",
    "describe_origins",
    "note_origin",
    "pending_work",
]
