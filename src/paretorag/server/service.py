"""What the HTTP layer calls: a pool of reading RAGs and the single writer over one index.

Why a pool: a :class:`~paretorag.RAG` keeps per-query state (the usage of the query it
runs) and its loaded view, so one RAG must not serve two threads at once, nor a reader
and the writer. Each request borrows a reading RAG for its duration; at most
``readers`` exist, opened on demand and sharing one embedder and one answer LLM
(both thread-safe). Each reader follows commits on its own: a query that starts after a
commit reads the new generation, one that started before finishes on the old one (its
files are leased), so readers never see a half-written index. Writes go to the
:class:`~paretorag.server.jobs.Writer`, whose RAG has its own embedder, so embedding a
large insert does not hold up the queries' embedding.
"""

from __future__ import annotations

import dataclasses
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, IndexFormatError
from ..ingest import read_paths
from ..manifest import FILENAME, Manifest
from ..providers.base import LLM, Embedder
from ..providers.embedders import make_embedder
from ..providers.llm import make_llm
from ..rag import RAG
from ..types import Document
from .errors import APIError
from .jobs import Job, JobProgress, Writer


@dataclass(frozen=True)
class Limits:
    """Request limits; each is answered with a clear 4xx when exceeded."""

    max_body_bytes: int = 64 * 1024  # JSON requests
    max_upload_bytes: int = 32 * 1024 * 1024  # POST /documents (multipart or JSON records)
    max_question_chars: int = 2000
    max_k: int = 100
    max_budget: int = 1_000_000
    max_files: int = 100


class ReaderPool:
    """At most ``size`` reading RAGs, lent to one request at a time."""

    def __init__(self, open_reader: Callable[[], RAG], size: int, wait_s: float) -> None:
        if size < 1:
            raise ConfigError(f"readers must be at least 1, got {size}; use --readers 4")
        self._open = open_reader
        self._size = size
        self._wait_s = wait_s
        self._free: queue.LifoQueue[RAG] = queue.LifoQueue()
        self._all: list[RAG] = []
        self._opening = 0
        self._lock = threading.Lock()

    def acquire(self) -> RAG:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            grow = self._opening < self._size
            self._opening += grow  # the slot is reserved while the RAG opens
        if grow:
            try:
                rag = self._open()
            except BaseException:
                with self._lock:
                    self._opening -= 1
                raise
            with self._lock:
                self._all.append(rag)
            return rag
        try:
            return self._free.get(timeout=self._wait_s)
        except queue.Empty:
            raise APIError(
                503,
                f"all {self._size} readers stayed busy for {self._wait_s:g} s; retry later, or start "
                "the server with more --readers",
                kind="busy",
            ) from None

    def release(self, rag: RAG) -> None:
        self._free.put(rag)

    @contextmanager
    def reader(self) -> Iterator[RAG]:
        rag = self.acquire()
        try:
            yield rag
        finally:
            self.release(rag)

    @property
    def opened(self) -> int:
        with self._lock:
            return len(self._all)

    def close(self) -> None:
        with self._lock:
            for rag in self._all:
                rag.close()
            self._all.clear()


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
        Reading RAGs (queries served at once).
    write_wait : bool or float
        A write waits for another process's writer lock (``True``), fails at once
        (``False``), or waits that many seconds.
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
    ) -> None:
        self.root = Path(index)
        self.limits = limits or Limits()
        if not (self.root / FILENAME).exists():
            if not create:
                raise IndexFormatError(
                    f"{self.root} is not a paretorag index (no {FILENAME}); build one with "
                    f"`paretorag index PATH... --index {self.root}`, or pass --create to start an empty one"
                )
            RAG.open(self.root, embedder=embedder).close()
        manifest = Manifest.load(self.root)
        if manifest is None:  # removed between the check and the load
            raise IndexFormatError(f"{self.root} has no {FILENAME}; run `paretorag index` first")
        config = manifest.config
        self._embedder: Embedder = embedder if embedder is not None else make_embedder(config.embedder)
        self._llm: LLM = llm if llm is not None and not isinstance(llm, str) else make_llm(llm or config.llm)
        self._writer_embedder = embedder  # None: the writer loads its own (see the module doc)
        self.write_wait = write_wait
        self.pool = ReaderPool(self._open_reader, readers, reader_wait_s)
        self.writer = Writer(self._open_writer, on_finish=on_job_finish)

    def _open_reader(self) -> RAG:
        return RAG.open(self.root, create=False, llm=self._llm, embedder=self._embedder)

    def _open_writer(self, on_wait: Callable[[str], None]) -> RAG:
        return RAG.open(
            self.root, create=False, embedder=self._writer_embedder, wait=self.write_wait, on_wait=on_wait
        )

    # -- writes ----------------------------------------------------------------
    def insert_documents(self, docs: Sequence[Document], detail: dict[str, Any]) -> Job:
        def work(rag: RAG, progress: JobProgress) -> dict[str, Any]:
            report = rag.insert(list(docs), progress=progress)
            return _report(report, rag, [d.doc_id for d in docs])

        return self.writer.submit("insert", detail, work)

    def insert_files(self, folder: Path, names: dict[str, str], detail: dict[str, Any]) -> Job:
        """Insert uploaded files saved under ``folder`` (removed afterwards); ``names`` maps the
        saved paths to the uploaded file names, which the documents' sources then show."""

        def work(rag: RAG, progress: JobProgress) -> dict[str, Any]:
            try:
                docs, problems = read_paths(list(names))
                docs = [dataclasses.replace(d, source=_upload_source(d.source, names)) for d in docs]
                report = rag.insert(docs, progress=progress)
                report.problems = [*problems, *report.problems]
                return _report(report, rag, [d.doc_id for d in docs], names)
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        return self.writer.submit("insert", detail, work)

    def delete_document(self, doc_id: str) -> Job:
        def work(rag: RAG, progress: JobProgress) -> dict[str, Any]:
            removed = rag.delete([doc_id], progress=progress)
            return {
                "deleted": removed,
                "documents": int(rag.manifest.counts.get("documents", 0)),
                "chunks": int(rag.manifest.counts.get("chunks", 0)),
                "generation": rag.manifest.generation,
            }

        return self.writer.submit("delete", {"doc_id": doc_id}, work)

    def upload_folder(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="paretorag-upload-"))

    def close(self) -> None:
        self.writer.close()
        self.pool.close()


def _upload_source(source: str, names: dict[str, str]) -> str:
    """``/tmp/paretorag-upload-x/000/a.json#3`` -> ``upload:a.json#3``."""
    path, hash_, rest = source.partition("#")
    return f"upload:{names.get(path, Path(path).name)}" + (hash_ + rest if hash_ else "")


def _report(report: Any, rag: RAG, doc_ids: list[str], names: dict[str, str] | None = None) -> dict[str, Any]:
    problems = []
    for p in report.problems:
        text = str(p)
        for saved, original in (names or {}).items():  # name the uploaded file, not where it was saved
            text = text.replace(saved, original)
        problems.append(text)
    return {
        "added": report.added,
        "unchanged": report.unchanged,
        "doc_ids": doc_ids,
        "problems": problems,
        "committed": report.committed,
        "documents": int(rag.manifest.counts.get("documents", 0)),
        "chunks": int(rag.manifest.counts.get("chunks", 0)),
        "generation": rag.manifest.generation,
        "seconds": round(report.seconds, 3),
    }


def records_to_documents(payload: Any) -> list[Document]:
    """``{title, text}``, a list of them, or ``{"documents": [...]}`` -> documents (kept as
    given, one chunk each, as the records of a ``.json`` file)."""
    from ..ingest import make_document

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


def check_upload_name(name: str, index: int) -> str:
    """A safe file name for an upload (no directories), with a supported extension."""
    from ..ingest import SUPPORTED

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


__all__ = ["Limits", "ReaderPool", "Service", "check_upload_name", "records_to_documents"]
