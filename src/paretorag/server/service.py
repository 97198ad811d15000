"""What the HTTP layer calls: one shared reading RAG and the single writer over one index.

One reading RAG per index: a :class:`~paretorag.RAG` answers many questions at once (each
retrieval counts its own usage), so every request shares it, at most ``readers`` at a
time. It follows commits: a query that starts after a commit reads the new generation,
one that started before finishes on the old one (its files are leased), so queries never
see a half-written index. Writes go to the
:class:`~paretorag.server.jobs.Writer`, whose RAG has its own embedder, so embedding a
large insert does not hold up the queries' embedding.

Writes are durable jobs (:mod:`paretorag.storage.jobs`): a Service opened on an index whose
last server stopped with jobs queued or running resumes them, in order, before any new
one (:attr:`Service.resumed` says which, as the start-up log does).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..answering.llms import make_llm
from ..errors import ConfigError, IndexFormatError
from ..providers.base import LLM, Embedder
from ..providers.embedder_spec import make_embedder
from ..rag import RAG
from ..storage.backend import FolderBackend, open_backend
from ..storage.jobs import DEFAULT_RETENTION_S, UPLOADS, JobTable, server_id
from ..storage.manifest import FILENAME
from ..types import MAX_K, Answer, Document
from .errors import APIError, ServerStopping
from .jobs import Job, Writer, new_job_id
from .streaming import AnswerStream
from .writes import delete_work, files_work, insert_work, resume

log = logging.getLogger("paretorag.server")


@dataclass(frozen=True)
class Limits:
    """Request limits; each is answered with a clear 4xx when exceeded."""

    max_body_bytes: int = 64 * 1024  # JSON requests
    max_upload_bytes: int = 32 * 1024 * 1024  # POST /documents (multipart or JSON records)
    max_question_chars: int = 2000
    max_k: int = MAX_K  # the same limit as the CLI, paretorag.toml and RAG.query
    max_budget: int = 1_000_000
    max_files: int = 100


class ReaderPool:
    """One reading RAG shared by every request, and at most ``size`` requests in it at once.

    A :class:`~paretorag.RAG` answers concurrent questions (each retrieval counts its own
    usage), so the server loads the index once, however many clients ask. ``size`` bounds
    the questions served at once; a request that waits ``wait_s`` for a slot gets a 503.
    """

    def __init__(self, open_reader: Callable[[], RAG], size: int, wait_s: float) -> None:
        if size < 1:
            raise ConfigError(f"readers must be at least 1, got {size}; use --readers 4")
        self._open = open_reader
        self._size = size
        self._wait_s = wait_s
        self._slots = threading.BoundedSemaphore(size)
        self._in_use = 0
        self._rag: RAG | None = None
        self._lock = threading.Lock()

    def _shared(self) -> RAG:
        with self._lock:  # the first requests wait for one open, not one each
            if self._rag is None:
                self._rag = self._open()
            return self._rag

    def acquire(self) -> RAG:
        if not self._slots.acquire(timeout=self._wait_s):
            raise APIError(
                503,
                f"all {self._size} query slots stayed busy for {self._wait_s:g} s; retry later, or start "
                "the server with more --readers",
                kind="busy",
            )
        try:
            rag = self._shared()
        except BaseException:
            self._slots.release()
            raise
        with self._lock:
            self._in_use += 1
        return rag

    def release(self, rag: RAG) -> None:
        with self._lock:
            self._in_use -= 1
        self._slots.release()

    @property
    def size(self) -> int:
        return self._size

    @property
    def in_use(self) -> int:
        """Query slots held now (``/metrics``: ``paretorag_query_slots_busy``)."""
        with self._lock:
            return self._in_use

    @contextmanager
    def reader(self) -> Iterator[RAG]:
        rag = self.acquire()
        try:
            yield rag
        finally:
            self.release(rag)

    @property
    def opened(self) -> int:
        """Reading RAGs open: 0 before the first query, then 1."""
        with self._lock:
            return int(self._rag is not None)

    def close(self) -> None:
        with self._lock:
            if self._rag is not None:
                self._rag.close()
            self._rag = None


def upload_spool(url: str) -> Path:
    """Where a server on a ``postgresql://`` index keeps uploaded files until their job ends:
    ``$PARETORAG_UPLOAD_DIR``, else ``uploads/`` of this host's cache, one folder per index.
    The bytes are stored with the job too, so a server on another host that resumes the job
    unpacks them into its own folder (:meth:`~paretorag.storage.jobs.JobTable.restore_files`)."""
    import hashlib
    import os

    from ..providers.onnx_embedder import cache_root
    from ..storage.database import redact

    base = Path(os.environ.get("PARETORAG_UPLOAD_DIR") or cache_root() / "uploads")
    return base / hashlib.sha256(redact(url).encode()).hexdigest()[:16]


class Service:
    """One index served: readers, the writer and the limits.

    Parameters
    ----------
    index : Path
        An index directory made by ``paretorag index`` (or created empty with ``create``).
    llm : str or LLM, optional
        The LLM that answers queries (default: the index's own).
    embedder : Embedder, optional
        Used by readers and the writer instead of the index's embedder (tests).
    readers : int
        Queries served at once (they share one reading RAG).
    write_wait : bool or float
        A write waits for another process's writer lock (``True``), fails at once
        (``False``), or waits that many seconds.
    job_retention_s : float
        How long finished jobs stay in the index's jobs table (``GET /jobs/{id}``).
    """

    def __init__(
        self,
        index: str | Path,
        *,
        llm: str | LLM | None = None,
        embedder: Embedder | None = None,
        readers: int = 4,
        reader_wait_s: float = 30.0,
        write_wait: bool | float = True,
        limits: Limits | None = None,
        create: bool = False,
        on_job_finish: Callable[[Job], None] | None = None,
        job_retention_s: float = DEFAULT_RETENTION_S,
    ) -> None:
        self.backend = open_backend(index)
        folder = isinstance(self.backend, FolderBackend)
        # what readers and the writer open: the folder, or the whole URL (a Path folds its //;
        # messages print self.backend.location, without the password)
        self.root: Path | str = self.backend.root if isinstance(self.backend, FolderBackend) else str(index)
        # where uploads wait for their job: in the index folder, or for a database on this host
        self.spool = (
            self.backend.root if isinstance(self.backend, FolderBackend) else upload_spool(str(index))
        )
        self.limits = limits or Limits()
        if not self.backend.exists() or (folder and not (self.spool / FILENAME).exists()):
            if not create:
                raise IndexFormatError(
                    f"{self.backend.location} is not a paretorag index (no manifest); build one with "
                    f"`paretorag index PATH... --index {self.backend.location}`, or pass --create to start "
                    "an empty one"
                )
            RAG.open(self.root, embedder=embedder).close()
        manifest = self.backend.load_manifest()
        if manifest is None:  # removed between the check and the load
            raise IndexFormatError(f"{self.backend.location} has no manifest; run `paretorag index` first")
        config = manifest.config
        self._embedder: Embedder = embedder if embedder is not None else make_embedder(config.embedder)
        self._llm: LLM = llm if llm is not None and not isinstance(llm, str) else make_llm(llm or config.llm)
        self._writer_embedder = embedder  # None: the writer loads its own (see the module doc)
        self.write_wait = write_wait
        if job_retention_s <= 0:
            raise ConfigError(f"job retention must be positive, got {job_retention_s:g} s; e.g. 7 days")
        self.job_retention_s = job_retention_s
        self.pool = ReaderPool(self._open_reader, readers, reader_wait_s)
        # the jobs table's own connection (request threads write it)
        self._jobs_store = self.backend.open_store()
        self.jobs = JobTable(self._jobs_store)
        self.jobs.prune(job_retention_s)  # finished jobs past their retention
        self.writer = Writer(
            self._open_writer, on_finish=on_job_finish, table=self.jobs, retention_s=job_retention_s
        )
        probe = None
        if not folder:  # servers on other hosts: each holds a presence lock in the database
            from ..storage.postgres import PostgresBackend

            assert isinstance(self.backend, PostgresBackend)
            self.backend.hold_presence(server_id())
            probe = self.backend.owner_alive
        self.resumed: list[str] = resume(self.spool, self.jobs, self.writer, probe)
        self._streams: set[AnswerStream] = set()
        self._streams_lock = threading.Lock()

    # -- streamed answers ------------------------------------------------------
    def stream(
        self, rag: RAG, answer: Callable[[Callable[[str], None]], Answer], *, name: str
    ) -> AnswerStream:
        """Make ``answer(on_token)`` in its own thread with ``rag``'s query slot, which comes
        back when the answer ends or the stream is cancelled (see :mod:`.streaming`)."""

        def release() -> None:  # called after start(), so ``stream`` is bound
            with self._streams_lock:
                self._streams.discard(stream)
            self.pool.release(rag)

        stream = AnswerStream(answer, name=name, release=release)
        with self._streams_lock:
            self._streams.add(stream)
        return stream.start()

    def stop_streams(self) -> int:
        """End every streamed answer now (the server is stopping): each client gets a last
        ``stopping`` error event. Returns how many were open."""
        with self._streams_lock:
            streams = list(self._streams)
        for stream in streams:
            stream.cancel(ServerStopping("the server is stopping; ask again once it is back"))
        return len(streams)

    def _open_reader(self) -> RAG:
        return RAG.open(self.root, create=False, llm=self._llm, embedder=self._embedder)

    def _open_writer(self, on_wait: Callable[[str], None]) -> RAG:
        return RAG.open(
            self.root, create=False, embedder=self._writer_embedder, wait=self.write_wait, on_wait=on_wait
        )

    # -- writes ----------------------------------------------------------------
    def insert_documents(self, docs: Sequence[Document], detail: dict[str, Any]) -> Job:
        """Insert JSON records: stored with the job, one transaction, before the 202."""
        docs = list(docs)
        job_id = new_job_id()
        work = insert_work(self.jobs, job_id, lambda: (docs, []), resumed=False)
        return self.writer.submit(
            "insert",
            detail,
            work,
            job_id=job_id,
            inputs={"source": "records", "documents": len(docs)},
            docs=docs,
        )

    def upload_folder(self, job_id: str) -> Path:
        """Where the files of upload ``job_id`` are saved until its job ends (in the index
        directory, so that a restarted server finds them)."""
        folder = self.spool / UPLOADS / job_id
        folder.mkdir(parents=True)
        return folder

    def insert_files(self, job_id: str, folder: Path, names: dict[str, str], detail: dict[str, Any]) -> Job:
        """Insert uploaded files saved under ``folder`` (removed when the job ends); ``names``
        maps the saved paths to the uploaded file names, which the documents' sources then show."""
        rel = {str(Path(p).relative_to(self.spool)): n for p, n in names.items()}
        work = files_work(self.jobs, job_id, folder, names, resumed=False)
        # a database index: the bytes go with the job, so a server on any host can resume it
        files = (
            None
            if isinstance(self.backend, FolderBackend)
            else [(p, (self.spool / p).read_bytes()) for p in rel]
        )
        return self.writer.submit(
            "insert",
            detail,
            work,
            job_id=job_id,
            inputs={"source": "files", "files": rel, "documents": len(names)},
            files=files,
        )

    def delete_document(self, doc_id: str) -> Job:
        job_id = new_job_id()
        return self.writer.submit(
            "delete",
            {"doc_id": doc_id},
            delete_work([doc_id], resumed=False),
            job_id=job_id,
            inputs={"doc_ids": [doc_id]},
        )

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job's JSON: this server's, or one an earlier server stored (within the retention)."""
        job = self.writer.get(job_id)
        return None if job is None else self.writer.snapshot(job)

    def close(self) -> None:
        self.stop_streams()
        self.writer.close()
        self.pool.close()
        if not self.writer.running:  # a job still running keeps the table's connection
            self._jobs_store.close()
        close_presence = getattr(self.backend, "close_presence", None)
        if close_presence is not None and not self.writer.running:
            close_presence()


def records_to_documents(payload: Any) -> list[Document]:
    """``{title, text}``, a list of them, or ``{"documents": [...]}`` -> documents (kept as
    given, one chunk each, as the records of a ``.json`` file)."""
    from ..ingest.files import make_document

    records = payload.get("documents") if isinstance(payload, dict) and "documents" in payload else payload
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list) or not records:
        raise APIError(
            400,
            'send {"title": "...", "text": "..."}, a list of such records, or {"documents": [...]}',
            field="body",
        )
    docs = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or not rec["text"].strip():
            raise APIError(400, f'record {i} has no non-empty "text" string', field=f"documents[{i}].text")
        title = rec.get("title", "")
        if not isinstance(title, str):
            raise APIError(400, f'record {i}: "title" must be a string', field=f"documents[{i}].title")
        docs.append(make_document(title, rec["text"], f"api#{i}", presplit=True))
    return docs


SAVED_NAME_BYTES = 120
"""Longest file name an upload is saved under (file systems refuse names past 255 bytes)."""


def check_upload_name(name: str, index: int) -> str:
    """A safe file name for an upload (no directories), with a supported extension: the name
    its document shows (see :func:`saved_name` for the one it is saved under)."""
    from ..ingest.files import SUPPORTED

    base = Path(name.replace("\\", "/")).name.strip()
    if not base or base.startswith("."):
        raise APIError(400, f"file {index} has no usable file name; name it e.g. notes.md", field="files")
    suffix = Path(base).suffix.lower()
    if suffix not in SUPPORTED:
        raise APIError(
            415,
            f"{base}: unsupported extension {suffix or '(none)'}; supported: {', '.join(sorted(SUPPORTED))}",
            field="files",
            kind="unsupported_type",
        )
    return base


def saved_name(name: str) -> str:
    """The file name an upload checked by :func:`check_upload_name` is saved under: the name
    itself, or, past :data:`SAVED_NAME_BYTES`, its start, a hash of the whole name (two long
    names sharing a start stay apart) and its extension. The job keeps the uploaded name."""
    if len(name.encode()) <= SAVED_NAME_BYTES:
        return name
    import hashlib

    path = Path(name)
    tag = "-" + hashlib.sha256(name.encode()).hexdigest()[:12] + path.suffix
    room = SAVED_NAME_BYTES - len(tag.encode())
    return path.stem.encode()[:room].decode("utf-8", "ignore") + tag


__all__ = ["Limits", "ReaderPool", "Service", "check_upload_name", "records_to_documents", "saved_name"]
