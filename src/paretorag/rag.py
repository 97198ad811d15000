"""The facade: ``RAG.open(dir)`` -> ``index`` / ``insert`` / ``delete`` / ``query``.

Example
-------
>>> from paretorag import RAG
>>> rag = RAG.open("my-index")                       # doctest: +SKIP
>>> rag.index(["docs/", "notes.md"])                 # doctest: +SKIP
>>> ans = rag.query("What is X?", method="vanilla")  # doctest: +SKIP
>>> ans.text, ans.citations, ans.contexts, ans.usage, ans.timings  # doctest: +SKIP
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answer import generate
from .context import pack
from .diskerrors import disk_errors
from .errors import (
    ConfigError,
    DamagedIndexError,
    IndexFormatError,
    InputError,
    ParetoragError,
    QuestionError,
)
from .index import IndexWriter, LoadedIndex, structure_plan
from .ingest import Problem, read_paths
from .lock import ReaderLease, WriterLock
from .manifest import FILENAME, IndexConfig, Manifest
from .methods.base import QueryOptions, Retrieval, available_methods, get_method
from .progress import Progress
from .providers.base import LLM, Embedder, Tokenizer
from .providers.embedders import RegexTokenizer, make_embedder
from .providers.llm import make_llm
from .providers.wrappers import CachedLLM, CountingLLM
from .repair import RepairReport, check, recover_manifest, remove
from .settings import OpenSettings
from .store import Store
from .types import Answer, Budget, Citation, ContextItem, Document, Usage

MAX_QUESTION_CHARS = 10_000


@dataclass
class IndexReport:
    """What an ``index`` / ``insert`` run did."""

    added: int = 0
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0
    committed: bool = False


def _stamp(root: Path) -> tuple[int, int, int] | None:
    """Identity of the manifest file on disk: a commit replaces it (new inode, mtime, size)."""
    try:
        st = os.stat(root / FILENAME)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _validate_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise QuestionError('the question is empty; ask something, e.g. paretorag query "What is ...?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question has {len(question)} characters (limit {MAX_QUESTION_CHARS}); "
            "shorten it, or index long text as a document instead"
        )
    return question.strip()


class RAG:
    """An index directory plus the models that build and query it.

    Use :meth:`open`; the constructor is internal. Writes (``index``, ``insert``,
    ``build``, ``delete``, ``repair``) take the index's writer lock; reads see the
    latest commit, reloading when another process commits.
    """

    def __init__(
        self,
        root: Path,
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
        self.root = root
        self.store = store
        self.manifest = manifest
        self.embedder = embedder
        self.tokenizer: Tokenizer = getattr(embedder, "tokenizer", None) or RegexTokenizer()
        self._llm = llm
        self.usage = Usage.from_json(manifest.usage)
        self._view: LoadedIndex | None = None
        self._query_usage = Usage()  # LLM calls made by methods while retrieving
        self._settings = settings or OpenSettings()
        self._wait = wait
        self._on_wait = on_wait
        self._created = created  # this RAG created the directory: removed if the first index fails
        self._damaged = damaged  # why the manifest could not be read (a writer repairs it)
        self._lease = ReaderLease(root)
        self._stamp = _stamp(root)
        self._writing = False
        self.notes: list[str] = []  # what a writer recovered on the way (a damaged manifest)

    # -- opening ---------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        methods: Sequence[str] | None = None,
        llm: str | LLM | None = None,
        embedder: str | Embedder | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        workers: int | None = None,
        builders: dict[str, dict[str, Any]] | None = None,
        create: bool = True,
        wait: bool | float = True,
        on_wait: Callable[[str], None] | None = None,
    ) -> RAG:
        """Open an index directory, creating it if needed.

        Parameters
        ----------
        path : str or Path
            The index directory.
        methods : list of str, optional
            Methods the index must serve; their structures are built by :meth:`index`.
            Added to those already configured. Default for a new index: ``["vanilla"]``.
        llm : str or LLM, optional
            ``extractive`` (default), ``openai:MODEL``, ``llamacpp[:GGUF]``, ``fake``, or an object.
        embedder : str or Embedder, optional
            ``minilm`` (default), ``hash[:DIM]``, ``st:PATH``, ``openai:MODEL:DIM``, or an object.
            An existing index must be opened with the embedder it was built with.
        chunk_size, chunk_overlap : int, optional
            Tokens per chunk and overlap (default 1200 and 100); fixed once documents exist.
        workers : int, optional
            Processes/threads for builders (default 2).
        builders : dict, optional
            Settings of structure builders, e.g. ``{"tree": {"g": 4}}``; merged into the
            index's configuration. Structures built with other settings are rebuilt.
        create : bool
            Create the index if it does not exist (otherwise raise).
        wait : bool or float
            When another process holds the writer lock, a write waits (``True``), fails at
            once with :class:`~paretorag.errors.IndexLockedError` (``False``), or waits
            that many seconds.
        on_wait : callable, optional
            Called with a message naming the lock's holder when a write has to wait.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise IndexFormatError(f"{root} is a file, not an index directory; choose another --index path")
        damaged: str | None = None
        try:
            manifest = Manifest.load(root) if root.exists() else None
        except DamagedIndexError as exc:  # readers report it; writers repair it
            damaged = str(exc)
            manifest = recover_manifest(root)[0]
        settings = OpenSettings(
            methods=methods,
            llm=llm if isinstance(llm, str) else None,
            embedder=embedder if isinstance(embedder, str) else None,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            workers=workers,
            builders=dict(builders or {}),
        )
        created = False
        if manifest is None:
            if not create:
                raise IndexFormatError(
                    f"{root} is not a paretorag index (no {FILENAME}); run `paretorag index` first"
                )
            if root.exists() and any(root.iterdir()) and not (root / Store.FILENAME).exists():
                raise IndexFormatError(
                    f"{root} is a non-empty directory that is not an index; choose a new or empty one"
                )
            manifest = Manifest(IndexConfig(methods=[]))
            settings.apply(root, manifest)  # before creating anything: a bad setting leaves no folder
            created = not root.exists() or not any(root.iterdir())
            with disk_errors(root):
                root.mkdir(parents=True, exist_ok=True)
        before = manifest.to_json()
        settings.apply(root, manifest)
        emb: Embedder = (
            make_embedder(manifest.config.embedder)
            if embedder is None or isinstance(embedder, str)
            else embedder
        )  # type: ignore[assignment]
        if embedder is not None and not isinstance(embedder, str):
            built_with = manifest.models.get("embedder")
            if manifest.counts.get("documents") and built_with and built_with != emb.name:
                raise ConfigError(
                    f"{root} was embedded with {built_with!r}, not {emb.name!r}; use a new index"
                )
        llm_obj = None if llm is None or isinstance(llm, str) else llm
        store = Store(root)
        rag = cls(
            root,
            store,
            manifest,
            emb,
            llm_obj,
            settings=settings,
            wait=wait,
            on_wait=on_wait,
            created=created,
            damaged=damaged,
        )
        if damaged is None and (not (root / FILENAME).exists() or manifest.to_json() != before):
            with rag._locked():  # only when something changed: a reader never rewrites a live manifest
                rag.manifest.save(root)
                rag._stamp = _stamp(root)
        return rag

    # -- models ----------------------------------------------------------------
    def _base_llm(self) -> LLM:
        if self._llm is None:
            self._llm = make_llm(self.manifest.config.llm)
        return self._llm

    def _llm_for(self, usage: Usage, stage: str) -> LLM:
        return CountingLLM(CachedLLM(self._base_llm(), self.store), usage, stage, self.tokenizer)

    def _writer(self, progress: Progress | None) -> IndexWriter:
        return IndexWriter(
            self.root,
            self.store,
            self.manifest,
            self.embedder,
            self.tokenizer,
            self._base_llm,
            self.usage,
            progress,
        )

    # -- writing ---------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the writer lock, with the manifest re-read from disk (another writer may have
        committed since this RAG was opened) and the open settings applied to it again."""
        if self._writing:
            yield
            return
        with WriterLock(self.root, wait=self._wait, on_wait=self._on_wait):
            self._writing = True
            try:
                self._drop_view()
                try:
                    fresh = Manifest.load(self.root)
                    self._damaged = None
                except DamagedIndexError as exc:
                    self._damaged = str(exc)
                    fresh, note = recover_manifest(self.root)
                    self.notes.append(note)
                if fresh is not None:  # None: the manifest was removed; keep ours
                    self._settings.apply(self.root, fresh)
                    self.manifest = fresh
                    self.usage = Usage.from_json(fresh.usage)
                yield
            finally:
                self._writing = False
                self._stamp = _stamp(self.root)

    def _needs_commit(self) -> bool:
        """True if the committed vectors and structures do not match the live documents and
        settings, a delete is pending, the manifest was damaged or a file it names is missing."""
        m = self.manifest
        fp = self.store.chunk_table().fingerprint()
        if self._damaged or not m.vectors or m.vectors != f"chunks-{fp[:16]}":
            return True
        _, dirnames = structure_plan(m.config, fp)
        if any(m.structures.get(name, {}).get("dir") != d for name, d in dirnames.items()):
            return True
        problems = check(self.root, m, deep=False)
        remove(problems)
        return bool(problems)

    def _commit(self, progress: Progress | None) -> None:
        self._writer(progress).commit()
        self._damaged = None

    def index(
        self, sources: Iterable[str | Path | Document], *, progress: Progress | None = None
    ) -> IndexReport:
        """Add files, directories or :class:`Document` objects and build what the methods need.

        Unchanged documents (same content hash) are skipped. A bad file is reported in
        ``IndexReport.problems`` and the rest is indexed; if nothing is usable,
        :class:`~paretorag.errors.InputError` is raised and nothing stored changes. Pending
        deletes and missing files are completed on the way. If the first ``index`` of a
        directory this RAG created stores nothing, the directory is removed again.
        """
        t0 = time.perf_counter()
        try:
            with self._locked():
                items = list(sources)
                docs = [d for d in items if isinstance(d, Document)]
                paths = [p for p in items if not isinstance(p, Document)]
                problems: list[Problem] = []
                if paths:
                    read, problems = read_paths(paths)
                    docs.extend(read)
                added, unchanged = self._writer(progress).ingest(docs)
                report = IndexReport(added=added, unchanged=unchanged, problems=problems)
                if added or self._needs_commit():
                    self._commit(progress)
                    report.committed = True
        except BaseException:
            self._remove_if_unused()
            raise
        self._created = False
        report.chunks = int(self.manifest.counts.get("chunks", 0))
        report.seconds = time.perf_counter() - t0
        return report

    insert = index

    def _remove_if_unused(self) -> None:
        """Remove the directory this RAG created if a failed first write stored nothing."""
        if not self._created or self.manifest.vectors:
            return
        try:
            if self.store.all_document_ids():
                return  # an interrupted first index: kept, so that a re-run resumes
        except ParetoragError:
            return
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)
        self._created = False

    def build(self, methods: Sequence[str] | None = None, *, progress: Progress | None = None) -> None:
        """Build the structures the given (or configured) methods need for the current documents."""
        for m in methods or []:
            get_method(m)
        self._settings.methods = [*(self._settings.methods or []), *(methods or [])]
        with self._locked():
            if self._needs_commit():
                self._commit(progress)

    def delete(self, doc_ids: Iterable[str], *, progress: Progress | None = None) -> list[str]:
        """Remove documents and everything derived only from them; returns the ids removed.

        Unknown ids raise :class:`~paretorag.errors.InputError` before anything changes. An
        id whose delete was interrupted is accepted, and the delete is finished.
        """
        ids = list(doc_ids)
        with self._locked():
            known = self.store.all_document_ids()
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise InputError(
                    f"unknown document ids: {', '.join(unknown)}; list them with `paretorag inspect --documents`"
                )
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
            problems = check(self.root, self.manifest, self.store)
            report.problems = [str(p) for p in problems]
            fatal = [p for p in problems if not p.remove and "index.sqlite" in p.message]
            if fatal:
                raise IndexFormatError(
                    f"{fatal[0]}; the database cannot be repaired: restore {self.store.path} from a "
                    "backup, or index the sources again into a new --index directory"
                )
            remove(problems)
            if problems or self._damaged or self._needs_commit():
                self._commit(progress)
                report.rebuilt = True
        return report

    def check(self) -> list[str]:
        """Problems of the committed index: files the manifest names that are missing, unreadable
        or out of step with its counts, and SQLite's integrity (empty when all is well)."""
        self._sync()
        if self._damaged:
            return [self._damaged]
        return [str(p) for p in check(self.root, self.manifest, self.store)]

    # -- reading ---------------------------------------------------------------
    def _sync(self) -> None:
        """Follow a commit made by another writer (one ``stat`` when nothing changed)."""
        if self._writing or _stamp(self.root) == self._stamp:
            return
        self._stamp = _stamp(self.root)
        try:
            fresh = Manifest.load(self.root)
        except DamagedIndexError as exc:
            self._damaged = str(exc)
            self._drop_view()
            return
        if fresh is not None:
            self._damaged = None
            if fresh.generation != self.manifest.generation or fresh.to_json() != self.manifest.to_json():
                self.manifest = fresh
                self.usage = Usage.from_json(fresh.usage)
                self._drop_view()

    def _drop_view(self) -> None:
        self._view = None
        self._lease.release()

    @property
    def view(self) -> LoadedIndex:
        """The committed index as methods see it (loaded once, reloaded after a commit)."""
        self._sync()
        for attempt in range(5):
            if self._view is not None:
                return self._view
            if self._damaged:
                raise DamagedIndexError(self._damaged)
            m = self.manifest
            stamp = self._stamp
            # name the files before loading them; a commit after this leaves them in place
            self._lease.hold(m.vectors, [str(info.get("dir", "")) for info in m.structures.values()])
            if _stamp(self.root) != stamp and not self._writing:  # a commit got in between
                self._sync()
                continue
            try:
                self._view = LoadedIndex(
                    self.root,
                    self.store,
                    m,
                    self.embedder,
                    self.tokenizer,
                    lambda stage: self._llm_for(self._query_usage, stage),
                )
            except IndexFormatError:
                if attempt == 4 or self._writing or _stamp(self.root) == stamp:
                    raise
                self._sync()  # a newer commit replaced the files we were reading
        raise DamagedIndexError(f"{self.root} changed five times while loading; try again")

    def retrieve(
        self,
        question: str,
        method: str = "vanilla",
        *,
        k: int | None = None,
        budget: int | Budget | None = None,
        **params: Any,
    ) -> tuple[Retrieval, list[ContextItem]]:
        """Retrieval only: the method's result and its context items (before packing)."""
        question = _validate_question(question)
        m = get_method(method, **params)
        view = self.view
        if m.requires and not len(view.chunks):
            stored = len(self.store.all_document_ids())
            unfinished = f" ({stored} stored by an unfinished run)" if stored else ""
            raise IndexFormatError(
                f"index {self.root} has no committed documents{unfinished}; "
                f"run `paretorag index PATH... --index {self.root}`"
            )
        missing = [s for s in m.requires if s != "vectors" and s not in self.manifest.structures]
        if missing:
            from .errors import MissingStructureError

            raise MissingStructureError(
                f"method {method!r} needs {', '.join(missing)}, not built in {self.root}; run "
                f"`paretorag index PATH... --index {self.root} --methods {method}` (or RAG.open(..., methods=[{method!r}]).build())"
            )
        b = budget if isinstance(budget, Budget) else Budget(budget)
        opts = QueryOptions(k=k, budget=b)
        self._query_usage = Usage()
        r = m.retrieve(view, question, opts)
        r.usage = self._query_usage
        items = (
            r.items
            if r.items is not None
            else [
                view.chunk_item(int(i), float(s)) for i, s in zip(r.scored.ids, r.scored.scores, strict=True)
            ]
        )
        return r, items

    def query(
        self,
        question: str,
        method: str = "vanilla",
        *,
        k: int | None = None,
        budget: int | Budget | None = None,
        context_only: bool = False,
        max_answer_tokens: int = 512,
        **params: Any,
    ) -> Answer:
        """Answer a question with ``method``; returns text, citations, contexts, usage and timings.

        ``budget`` caps the context in tokens (default: unbounded; methods such as
        g2cons apply their own). ``context_only`` skips generation; ``max_answer_tokens``
        caps the answer's length. Other keyword arguments set the method's parameters.
        """
        t0 = time.perf_counter()
        r, items = self.retrieve(question, method, k=k, budget=budget, **params)
        retrieval_s = time.perf_counter() - t0
        return self.answer(
            question,
            r,
            items,
            method=method,
            budget=budget,
            context_only=context_only,
            max_answer_tokens=max_answer_tokens,
            retrieval_seconds=retrieval_s,
        )

    def answer(
        self,
        question: str,
        retrieval: Retrieval,
        items: list[ContextItem],
        *,
        method: str = "",
        budget: int | Budget | None = None,
        context_only: bool = False,
        max_answer_tokens: int = 512,
        retrieval_seconds: float = 0.0,
    ) -> Answer:
        """Pack a retrieval's items under ``budget`` and generate the answer (no second retrieval).

        The answer's usage includes the LLM calls the retrieval made (``retrieval.usage``).
        """
        t1 = time.perf_counter()
        b = budget if isinstance(budget, Budget) else Budget(budget)
        ctx = pack(items, b, self.tokenizer)
        usage = Usage()
        usage.merge(retrieval.usage)
        text = ""
        cites: list[Citation] = []
        if not context_only:
            llm = self._llm_for(usage, "query.answer")
            text, cites = generate(
                llm, question.strip(), ctx, context_text=retrieval.context_text, max_tokens=max_answer_tokens
            )
        t2 = time.perf_counter()
        total = retrieval_seconds + (t2 - t1)
        return Answer(
            question=question.strip(),
            text=text,
            method=method,
            mode=retrieval.mode,
            contexts=list(ctx.items),
            citations=cites,
            usage=usage,
            timings={"retrieval": retrieval_seconds, "generation": t2 - t1, "total": total},
            branch=retrieval.branch,
            context_text=retrieval.context_text or ctx.text,
        )

    # -- inspection -----------------------------------------------------------
    def documents(self, *, pending: bool = False) -> list[dict[str, Any]]:
        """Committed documents, those of an unfinished delete flagged ``pending_delete``
        (with ``pending=True``: the stored documents, including those of an unfinished run)."""
        if pending:
            return self.store.documents()
        committed = set(self.view.chunks.doc_ids)
        return [d for d in self.store.documents(include_deleted=True) if d["doc_id"] in committed]

    def stats(self) -> dict[str, Any]:
        """Documents, chunks, structures, sizes, models and LLM usage per stage."""
        self._sync()
        m = self.manifest
        sizes: dict[str, int] = {}
        for sub in ("vectors", "structures"):
            d = self.root / sub
            sizes[sub] = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) if d.exists() else 0
        db = self.root / Store.FILENAME
        sizes["sqlite"] = (
            sum(p.stat().st_size for p in self.root.glob(Store.FILENAME + "*")) if db.exists() else 0
        )
        return {
            "index": str(self.root),
            "format_version": m.format_version,
            "config": m.to_json()["config"],
            "models": m.models,
            "counts": m.counts,
            "structures": m.structures,
            "sizes_bytes": sizes,
            "usage": m.usage,
            "timings": m.timings,
            "methods_available": available_methods(),
        }

    def close(self) -> None:
        self._drop_view()
        self.store.close()

    def __enter__(self) -> RAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
