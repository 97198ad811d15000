"""An open index directory: the writer lock, reader leases, the live manifest, and writes.

:class:`IndexSession` is the part of :class:`paretorag.RAG` that keeps an index safe
to share (see :mod:`paretorag.storage.lock`): every write takes the writer lock and re-reads
the manifest before it writes; a failed or interrupted write leaves the last commit;
pending deletes and missing files are completed by the next writer; reads follow the
latest commit and hold a lease on the files they loaded.

One module (over 400 lines) because the writer lock, the leases and the manifest it
follows are one protocol: every write and every read goes through the same few locks.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .answering.llms import make_llm
from .errors import ConfigError, DamagedIndexError, IndexFormatError, InputError, ParetoragError
from .indexing.embed_cache import CachedEmbedder
from .indexing.loaded import LoadedIndex
from .indexing.plan import structure_plan, vector_stem
from .indexing.repair import RepairReport, check, recover_manifest, remove
from .indexing.settings import OpenSettings
from .indexing.writer import IndexWriter
from .ingest.files import Problem, read_paths
from .ingest.updates import ids_named, plan_updates
from .progress import Progress
from .providers.base import LLM, Embedder, Tokenizer, is_generative
from .providers.embedders import RegexTokenizer
from .providers.wrappers import CachedLLM, CountingLLM
from .retrieval.methods.base import get_method
from .storage.backend import IndexBackend, index_root
from .storage.jobs import (
    ORIGINS_KEY,
    JobTable,
    clear_origins,
    committed_doc_ids,
    describe_origins,
    note_origin,
)
from .storage.manifest import Manifest
from .storage.store import Store
from .storage.vectors import resolve_ann
from .types import Document, Usage

if TYPE_CHECKING:
    from .answering.reader.core import Reader
    from .indexing.distributed import RayCluster


QUERY_USAGE: ContextVar[Usage | None] = ContextVar("paretorag_query_usage", default=None)
"""The usage of the question being retrieved in this thread (or asyncio task): set by
:meth:`paretorag.RAG.retrieve`, so that one RAG answers many questions at once and each
answer counts only its own LLM calls."""


def query_usage() -> Usage:
    """The running question's usage; outside a question, a fresh one nobody reads."""
    usage = QUERY_USAGE.get()
    return usage if usage is not None else Usage()


@dataclass
class IndexReport:
    """What an ``index`` / ``insert`` run did."""

    added: int = 0  # documents this run committed, those an interrupted run had stored included
    unchanged: int = 0
    resumed: int = 0  # of ``added``: stored by an interrupted run, committed by this one
    problems: list[Problem] = field(default_factory=list)
    updated: int = 0  # new versions of stored files (see :mod:`paretorag.ingest.updates`)
    removed: int = 0  # documents no longer in their file, and pruned ones
    chunks: int = 0
    seconds: float = 0.0
    committed: bool = False


class IndexSession:
    """An index directory opened for reading and writing (the base of :class:`paretorag.RAG`).

    Writes (``index``, ``insert``, ``build``, ``delete``, ``repair``) take the index's
    writer lock; reads see the latest commit, reloading when another process commits.
    """

    def __init__(
        self,
        backend: IndexBackend,
        store: Store,
        manifest: Manifest,
        embedder: Embedder,
        llm: LLM | None,
        *,
        settings: OpenSettings | None = None,
        wait: bool | float = True,
        on_wait: Callable[[str], None] | None = None,
        created: bool = False,
        damaged: str | None = None,
    ) -> None:
        self.backend = backend
        # the index as messages and commands name it: the folder, or the URL without its password
        self.root = index_root(backend)
        self.store = store
        self.manifest = manifest
        self.embedder = embedder
        self.tokenizer: Tokenizer = getattr(embedder, "tokenizer", None) or RegexTokenizer()
        self._llm = llm
        self.usage = Usage.from_json(manifest.usage)
        self._view: LoadedIndex | None = None
        self._settings = settings or OpenSettings()
        self._wait = wait
        self._on_wait = on_wait
        self._created = created  # this RAG created the directory: removed if the first index fails
        self._damaged = damaged  # why the manifest could not be read (a writer repairs it)
        self._lease = backend.reader_lease()  # the files of the loaded view
        self._old_lease = backend.reader_lease()  # those of the view before: queries may still use it
        self._view_lock = threading.RLock()  # one view swap at a time when threads share this RAG
        self._stamp = backend.stamp()
        self._writing = False
        self.notes: list[str] = []  # what a writer recovered or finished on the way
        self.on_note: Callable[[str], None] | None = None  # told each note as it happens
        # who writes, as the next writer and `inspect` name it if this write is killed
        self.origin = f"a write by process {os.getpid()}"
        self._offline_reader: Reader | None = None  # the offline reader, made on the first answer
        self._nospan_reader: Reader | None = None  # the same without its span model ("reader-nospan")

    # -- models ----------------------------------------------------------------
    def _base_llm(self) -> LLM:
        if self._llm is None:
            with self._view_lock:  # one LLM, however many threads ask first
                if self._llm is None:
                    self._llm = make_llm(self.manifest.config.llm)
        bind = getattr(self._llm, "bind", None)
        if callable(bind):  # the extractive backend scores sentences with the index's embedder
            bind(CachedEmbedder(self.embedder, self.store), self.tokenizer)
        return self._llm

    def _llm_for(self, usage: Usage, stage: str, base: LLM | None = None) -> LLM:
        return CountingLLM(CachedLLM(base or self._base_llm(), self.store), usage, stage, self.tokenizer)

    def _writer(self, progress: Progress | None, cluster: RayCluster | None = None) -> IndexWriter:
        return IndexWriter(
            self.backend,
            self.store,
            self.manifest,
            self.embedder,
            self.tokenizer,
            self._base_llm,
            self.usage,
            progress,
            cluster,
        )

    # -- writing ---------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the writer lock, with the manifest re-read from disk (another writer may have
        committed since this RAG was opened) and the open settings applied to it again."""
        if self._writing:
            yield
            return
        with self.backend.writer_lock(wait=self._wait, on_wait=self._on_wait):
            self._writing = True
            try:
                self._drop_view()
                try:
                    fresh = self.backend.load_manifest()
                    self._damaged = None
                except DamagedIndexError as exc:
                    self._damaged = str(exc)
                    fresh, note = recover_manifest(self.backend, self.store)
                    self.notes.append(note)
                if fresh is not None:  # None: the manifest was removed; keep ours
                    self._settings.apply(self.root, fresh)
                    self.manifest = fresh
                    self.usage = Usage.from_json(fresh.usage)
                yield
            finally:
                self._writing = False
                self._stamp = self.backend.stamp()

    def _note(self, message: str) -> None:
        """Tell ``on_note`` now, or keep the note in ``notes`` for the caller."""
        if self.on_note is not None:
            self.on_note(message)
        else:
            self.notes.append(message)

    def _finishing(self, committed: set[str], live: set[str]) -> None:
        """Say so when an interrupted write left stored documents or deletes uncommitted
        (this write commits them)."""
        for job in JobTable(self.store).unfinished():  # accepted by a server that stopped
            if job.job_id in self.origin:  # the server's own job, running now
                continue
            self._note(
                f"server job {job.job_id} ({job.kind}) is not finished; the next `paretorag serve "
                f"--index {self.root}` resumes it"
            )
        docs = len(live - committed)
        deletes = len(self.store.pending_deletes())
        if not docs and not deletes:
            return
        what = " and ".join(
            p
            for p in (
                f"{docs} document(s) stored but not committed" if docs else "",
                f"{deletes} pending delete(s)" if deletes else "",
            )
            if p
        )
        self._note(f"finishing {what}, left by {describe_origins(self.store.get_kv(ORIGINS_KEY) or [])}")

    def _needs_commit(self) -> bool:
        """True if the committed vectors and structures do not match the live documents and
        settings, a delete is pending, the manifest was damaged or a file it names is missing."""
        m = self.manifest
        chunks = self.store.chunk_table()
        fp = chunks.fingerprint()
        stem = vector_stem(fp, m.config.embed_titles, resolve_ann(m.config.ann, len(chunks)))
        if self._damaged or not m.vectors or m.vectors != stem:
            return True
        _, dirnames = structure_plan(m.config, fp)
        if any(m.structures.get(name, {}).get("dir") != d for name, d in dirnames.items()):
            return True
        problems = check(self.backend, m, deep=False)
        remove(self.backend, problems)
        return bool(problems)

    def _commit(self, progress: Progress | None, writer: IndexWriter | None = None) -> None:
        (writer or self._writer(progress)).commit()
        self._damaged = None
        clear_origins(self.store)

    def index(
        self,
        sources: Iterable[str | Path | Document],
        *,
        progress: Progress | None = None,
        cluster: RayCluster | None = None,
        strict: bool = False,
        prune: bool = False,
        key: str = "",
        rebuild: Sequence[str] = (),
    ) -> IndexReport:
        """Add files, directories or :class:`Document` objects and build what the methods need.

        Unchanged documents (same content hash) are skipped. A file whose content changed
        replaces the version stored under its path (or ``key``, for exactly one file) in one
        commit; with ``prune``, documents whose files under the given folders are gone are
        removed (:mod:`paretorag.ingest.updates`). Structures that can be updated (the RAPTOR tree)
        are updated for the changed chunks; those named in ``rebuild`` are built afresh. A bad file is reported in
        ``IndexReport.problems`` and the rest is indexed (with ``strict``, the first bad file
        raises :class:`~paretorag.errors.InputError`); if nothing is usable,
        :class:`~paretorag.errors.InputError` is raised and nothing stored changes. Pending
        deletes and missing files are completed on the way. If the first ``index`` of a
        directory this RAG created stores nothing, the directory is removed again.

        With a ``cluster`` (:class:`paretorag.indexing.distributed.RayCluster`), chunking, embedding
        and spaCy extraction run as Ray tasks and this process writes their results: the
        same index as without it.
        """
        t0 = time.perf_counter()
        try:
            with self._locked():
                self._check_generative()
                items = list(sources)
                docs = [d for d in items if isinstance(d, Document)]
                paths = [p for p in items if not isinstance(p, Document)]
                problems: list[Problem] = []
                if paths:
                    read, problems = read_paths(paths, strict=strict, key=key, allow_empty=prune)
                    docs.extend(read)
                committed = committed_doc_ids(self.backend, self.manifest)
                live = self.store.live_document_ids()
                self._finishing(committed, live)
                folders = [p for p in paths if prune and Path(p).is_dir()]
                plan = plan_updates(self.store, committed, docs, folders)
                if prune and not plan.docs and not plan.prune:  # empty folders, nothing to prune
                    detail = "; ".join(str(p) for p in problems) or "no paths given"
                    raise InputError(f"nothing to index: {detail}")
                ids = {d.doc_id for d in plan.docs}
                resumed = len({i for i in ids if i in live and i not in committed})
                if ids - live or plan.deletes:
                    note_origin(self.store, self.origin)
                writer = self._writer(progress, cluster)  # one writer: the ingest timing reaches the manifest
                writer.rebuild = self._rebuild_names(rebuild)
                if plan.prune:
                    self.store.mark_deleted(plan.prune)
                writer.ingest(plan.docs, plan.replaces)
                report = IndexReport(
                    added=plan.added,
                    updated=plan.updated,
                    unchanged=plan.unchanged,
                    removed=plan.removed,
                    resumed=resumed,
                    problems=problems,
                )
                if report.added or report.updated or report.removed or rebuild or self._needs_commit():
                    self._commit(progress, writer)
                    report.committed = True
        except BaseException:
            self._remove_if_unused()
            raise
        self._created = False
        report.chunks = int(self.manifest.counts.get("chunks", 0))
        report.seconds = time.perf_counter() - t0
        return report

    insert = index

    def _check_generative(self) -> None:
        """Refuse to index for methods with Agent steps when the LLM cannot follow instructions."""
        agents = [m for m in self.manifest.config.methods if get_method(m).needs_generative]
        if agents and not is_generative(self._base_llm()):
            raise ConfigError(
                f"method(s) {', '.join(agents)} ask an LLM to choose among candidates (Agent operators); "
                f"the {self.manifest.config.llm or 'extractive'} backend cannot follow instructions. "
                "Configure a generative LLM: --llm openai:MODEL (or llamacpp:GGUF_PATH), "
                "or leave these methods out"
            )

    def _remove_if_unused(self) -> None:
        """Remove the directory this RAG created if a failed first write stored nothing."""
        if not self._created:
            return
        self._created = False
        try:
            with self.backend.writer_lock(wait=False):  # another writer started meanwhile: keep it
                if self.manifest.vectors or self.store.all_document_ids():
                    return  # an interrupted first index: kept, so that a re-run resumes
                self.close()
                self.backend.remove()
        except ParetoragError:
            return

    def build(
        self,
        methods: Sequence[str] | None = None,
        *,
        progress: Progress | None = None,
        rebuild: Sequence[str] = (),
    ) -> None:
        """Build the structures the given (or configured) methods need for the current documents;
        those named in ``rebuild`` (e.g. ``"raptor_tree"``) are built afresh, not updated."""
        for m in methods or []:
            get_method(m)
        self._settings.methods = [*(self._settings.methods or []), *(methods or [])]
        with self._locked():
            self._check_generative()
            if rebuild or self._needs_commit():
                writer = self._writer(progress)
                writer.rebuild = self._rebuild_names(rebuild)
                self._commit(progress, writer)

    def _rebuild_names(self, names: Sequence[str]) -> frozenset[str]:
        """The structures to build afresh; a name the index does not build raises ConfigError."""
        planned = list(structure_plan(self.manifest.config, "")[0])
        unknown = [n for n in names if n not in planned]
        if unknown:
            raise ConfigError(
                f"cannot rebuild {', '.join(map(repr, unknown))}: this index builds {', '.join(planned)}"
            )
        return frozenset(names)

    def delete(self, doc_ids: Iterable[str], *, progress: Progress | None = None) -> list[str]:
        """Remove documents and everything derived only from them; returns the ids removed.

        Unknown ids raise :class:`~paretorag.errors.InputError` before anything changes. An
        id whose delete was interrupted is accepted, and the delete is finished. A document's
        key (the ``--id`` it was indexed with, or its file's path, relative or absolute) names
        its documents too (:func:`paretorag.ingest.updates.ids_named`).
        """
        names = list(doc_ids)
        with self._locked():
            named = {n: ids_named(self.store, n) for n in names}
            unknown = [n for n in names if not named[n]]
            if unknown:
                raise InputError(
                    f"unknown document ids: {', '.join(unknown)}; name a document by its id (list the ids "
                    f"with `paretorag inspect --index {self.root} --documents`), the --id it was indexed "
                    "with, or its file's path"
                )
            ids = list(dict.fromkeys(i for n in names for i in named[n]))
            self._finishing(committed_doc_ids(self.backend, self.manifest), self.store.live_document_ids())
            if ids:
                note_origin(self.store, self.origin)
            removed = self.store.mark_deleted(ids)
            if removed or self._needs_commit():
                self._commit(progress)
        return removed

    def repair(self, *, progress: Progress | None = None) -> RepairReport:
        """Rebuild whatever the manifest names that is missing or unreadable, from SQLite, the
        embedding cache and the LLM cache; a damaged manifest is recovered first."""
        report = RepairReport()
        self.notes.clear()
        with self._locked():
            report.notes = list(self.notes)
            problems = check(self.backend, self.manifest, self.store)
            report.problems = [str(p) for p in problems]
            fatal = [p for p in problems if p.fatal]
            if fatal:
                raise IndexFormatError(
                    f"{fatal[0]}; the database cannot be repaired: restore {self.store.location} from a "
                    "backup, or index the sources again into a new --index"
                )
            remove(self.backend, problems)
            if problems or self._damaged or self._needs_commit():
                self._commit(progress)  # its garbage collection follows
                report.rebuilt = True
            else:  # a writer killed between its commit and its garbage collection
                dirs = [str(info.get("dir", "")) for info in self.manifest.structures.values()]
                report.removed = self.backend.collect_garbage(self.manifest.vectors, dirs)
        return report

    def check(self) -> list[str]:
        """Problems of the committed index: files the manifest names that are missing, unreadable
        or out of step with its counts, and SQLite's integrity (empty when all is well)."""
        self._sync()
        if self._damaged:
            return [self._damaged]
        return [str(p) for p in check(self.backend, self.manifest, self.store)]

    # -- reading ---------------------------------------------------------------
    def _sync(self, force: bool = False) -> None:
        """Follow a commit made by another writer (one ``stat`` when nothing changed;
        ``force`` re-reads the manifest whatever its stamp says)."""
        if self._writing or (not force and self.backend.stamp() == self._stamp):
            return
        with self._view_lock:
            self._follow(force)

    def _follow(self, force: bool = False) -> None:
        if self._writing or (not force and self.backend.stamp() == self._stamp):
            return
        self._stamp = self.backend.stamp()
        try:
            fresh = self.backend.load_manifest()
        except DamagedIndexError as exc:
            self._damaged = str(exc)
            self._drop_view()
            return
        if fresh is not None:
            self._damaged = None
            if fresh.generation != self.manifest.generation or fresh.to_json() != self.manifest.to_json():
                self.manifest = fresh
                self.usage = Usage.from_json(fresh.usage)
                self._drop_view(grace=True)

    def _drop_view(self, *, grace: bool = False) -> None:
        """Forget the loaded view; with ``grace`` its files stay leased until the next swap
        (a query running in another thread may still read them), otherwise released."""
        with self._view_lock:
            self._view = None
            self._old_lease.release()
            if grace:
                self._old_lease, self._lease = self._lease, self.backend.reader_lease()
            else:
                self._lease.release()

    @property
    def view(self) -> LoadedIndex:
        """The committed index as methods see it (loaded once, reloaded after a commit)."""
        self._sync()
        view = self._view
        if view is not None:
            return view
        with self._view_lock:
            return self._load_view()

    def _load_view(self) -> LoadedIndex:
        for attempt in range(5):
            if self._view is not None:
                return self._view
            if self._damaged:
                raise DamagedIndexError(self._damaged)
            m = self.manifest
            stamp = self._stamp
            # name the files before loading them; a commit after this leaves them in place
            self._lease.hold(m.vectors, [str(info.get("dir", "")) for info in m.structures.values()])
            if self.backend.stamp() != stamp and not self._writing:  # a commit got in between
                self._follow()
                continue
            try:
                self._view = LoadedIndex(
                    self.backend,
                    self.store,
                    m,
                    self.embedder,
                    self.tokenizer,
                    lambda stage: self._llm_for(query_usage(), stage),
                )
            except IndexFormatError:
                if attempt == 4 or self._writing:
                    raise
                # a newer commit replaced the files we were reading (its stamp may have been
                # taken before the manifest we hold was read): re-read and retry, else report
                self._follow(force=True)  # under the view lock already
                if self.manifest.generation == m.generation and not self._damaged:
                    raise
        raise DamagedIndexError(f"{self.root} changed five times while loading; try again")

    def close(self) -> None:
        self._drop_view()
        self.store.close()
        self.backend.close()
