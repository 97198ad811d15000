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

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answer import fit_to_window, generate
from .context import pack
from .errors import ConfigError, IndexFormatError, QuestionError
from .graphs.base import get_builder
from .index import IndexWriter, LoadedIndex, structure_plan
from .ingest import Problem, read_paths
from .manifest import FILENAME, IndexConfig, Manifest
from .methods.base import QueryOptions, Retrieval, available_methods, get_method
from .progress import Progress
from .providers.base import LLM, Embedder, Tokenizer
from .providers.embedders import RegexTokenizer, make_embedder
from .providers.llm import make_llm
from .providers.wrappers import CachedLLM, CountingLLM
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

    Use :meth:`open`; the constructor is internal.
    """

    def __init__(
        self, root: Path, store: Store, manifest: Manifest, embedder: Embedder, llm: LLM | None
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
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise IndexFormatError(f"{root} is a file, not an index directory; choose another --index path")
        manifest = Manifest.load(root) if root.exists() else None
        if manifest is None:
            if not create:
                raise IndexFormatError(
                    f"{root} is not a paretorag index (no {FILENAME}); run `paretorag index` first"
                )
            if root.exists() and any(root.iterdir()) and not (root / Store.FILENAME).exists():
                raise IndexFormatError(
                    f"{root} is a non-empty directory that is not an index; choose a new or empty one"
                )
            root.mkdir(parents=True, exist_ok=True)
            manifest = Manifest(IndexConfig(methods=[]))
        cfg = manifest.config
        before = manifest.to_json()
        has_docs = bool(manifest.counts.get("documents"))
        if chunk_size is not None or chunk_overlap is not None:
            new = (
                chunk_size or cfg.chunk_size,
                cfg.chunk_overlap if chunk_overlap is None else chunk_overlap,
            )
            if has_docs and new != (cfg.chunk_size, cfg.chunk_overlap):
                raise ConfigError(
                    f"{root} was chunked with size {cfg.chunk_size}/overlap {cfg.chunk_overlap}; "
                    "chunking cannot change once documents are indexed: use a new --index directory"
                )
            cfg.chunk_size, cfg.chunk_overlap = new
        if workers is not None:
            cfg.workers = workers
        if builders:
            available_methods()  # importing the methods registers their builders
        for bname, bsettings in (builders or {}).items():
            merged = {**cfg.builders.get(bname, {}), **bsettings}
            get_builder(bname, **merged)  # validates names and settings
            cfg.builders[bname] = merged
        for m in methods or ([] if cfg.methods else ["vanilla"]):
            get_method(m)  # validates the name
            if m not in cfg.methods:
                cfg.methods.append(m)
        if isinstance(llm, str):
            cfg.llm = llm
        emb_spec = embedder if isinstance(embedder, str) or embedder is None else None
        if isinstance(emb_spec, str):
            if has_docs and emb_spec != cfg.embedder:
                raise ConfigError(
                    f"{root} was embedded with {cfg.embedder!r}, not {emb_spec!r}; use a new --index directory"
                )
            cfg.embedder = emb_spec
        cfg.validate()
        emb: Embedder = make_embedder(cfg.embedder) if emb_spec is not None or embedder is None else embedder  # type: ignore[assignment]
        if embedder is not None and not isinstance(embedder, str):
            built_with = manifest.models.get("embedder")
            if has_docs and built_with and built_with != emb.name:
                raise ConfigError(
                    f"{root} was embedded with {built_with!r}, not {emb.name!r}; use a new index"
                )
        llm_obj = None if llm is None or isinstance(llm, str) else llm
        store = Store(root)
        if not (root / FILENAME).exists() or manifest.to_json() != before:
            manifest.save(root)  # only when something changed: a reader never rewrites a live manifest
        return cls(root, store, manifest, emb, llm_obj)

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
    def _is_current(self) -> bool:
        """True if the committed vectors and structures match the documents and settings."""
        m = self.manifest
        fp = self.store.chunk_table().fingerprint()
        if not m.vectors or m.vectors != f"chunks-{fp[:16]}":
            return False
        _, dirnames = structure_plan(m.config, fp)
        return all(m.structures.get(name, {}).get("dir") == d for name, d in dirnames.items())

    def index(
        self, sources: Iterable[str | Path | Document], *, progress: Progress | None = None
    ) -> IndexReport:
        """Add files, directories or :class:`Document` objects and build what the methods need.

        Unchanged documents (same content hash) are skipped. A bad file is reported in
        ``IndexReport.problems`` and the rest is indexed; if nothing is usable,
        :class:`~paretorag.errors.InputError` is raised and nothing stored changes.
        """
        t0 = time.perf_counter()
        items = list(sources)
        docs = [d for d in items if isinstance(d, Document)]
        paths = [p for p in items if not isinstance(p, Document)]
        problems: list[Problem] = []
        if paths:
            read, problems = read_paths(paths)
            docs.extend(read)
        writer = self._writer(progress)
        added, unchanged = writer.ingest(docs)
        report = IndexReport(added=added, unchanged=unchanged, problems=problems)
        if added or not self._is_current():
            writer.commit()
            report.committed = True
            self._view = None
        report.chunks = int(self.manifest.counts.get("chunks", 0))
        report.seconds = time.perf_counter() - t0
        return report

    insert = index

    def build(self, methods: Sequence[str] | None = None, *, progress: Progress | None = None) -> None:
        """Build the structures the given (or configured) methods need for the current documents."""
        for m in methods or []:
            get_method(m)
            if m not in self.manifest.config.methods:
                self.manifest.config.methods.append(m)
        if not self._is_current():
            self._writer(progress).commit()
            self._view = None

    def delete(self, doc_ids: Iterable[str], *, progress: Progress | None = None) -> list[str]:
        """Remove documents and everything derived only from them; returns the ids removed.

        Unknown ids raise :class:`~paretorag.errors.InputError` before anything changes.
        """
        from .errors import InputError

        ids = list(doc_ids)
        known = {d["doc_id"] for d in self.store.documents()}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise InputError(
                f"unknown document ids: {', '.join(unknown)}; list the ids with "
                f"`paretorag inspect --index {self.root} --documents`"
            )
        removed = self.store.mark_deleted(ids)
        if removed:
            self._writer(progress).commit()
            self._view = None
        return removed

    # -- reading ---------------------------------------------------------------
    @property
    def view(self) -> LoadedIndex:
        """The committed index as methods see it (loaded once, reloaded after writes)."""
        if self._view is None:
            self._view = LoadedIndex(
                self.root,
                self.store,
                self.manifest,
                self.embedder,
                self.tokenizer,
                lambda stage: self._llm_for(self._query_usage, stage),
            )
        return self._view

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
        evidence = retrieval.context_text
        warnings: list[str] = []
        if not context_only:
            ctx, evidence, warnings = fit_to_window(  # the LLM's context window is a hard limit
                self._base_llm(),
                question.strip(),
                items,
                ctx,
                b,
                self.tokenizer,
                max_answer_tokens=max_answer_tokens,
                context_text=evidence,
            )
            llm = self._llm_for(usage, "query.answer")
            text, cites = generate(
                llm, question.strip(), ctx, context_text=evidence, max_tokens=max_answer_tokens
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
            context_text=evidence or ctx.text,
            warnings=warnings,
        )

    # -- inspection -----------------------------------------------------------
    def documents(self, *, pending: bool = False) -> list[dict[str, Any]]:
        """Committed documents (with ``pending=True``: also those stored by an unfinished run)."""
        docs = self.store.documents()
        if pending:
            return docs
        committed = set(self.view.chunks.doc_ids)
        return [d for d in docs if d["doc_id"] in committed]

    def stats(self) -> dict[str, Any]:
        """Documents, chunks, structures, sizes, models and LLM usage per stage."""
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
        self.store.close()

    def __enter__(self) -> RAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
