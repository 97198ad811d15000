"""The facade: ``RAG.open(dir)`` -> ``index`` / ``insert`` / ``delete`` / ``query``.

Example
-------
>>> from paretorag import RAG
>>> rag = RAG.open("my-index")                       # doctest: +SKIP
>>> rag.index(["docs/", "notes.md"])                 # doctest: +SKIP
>>> ans = rag.query("What is X?", method="vanilla")  # doctest: +SKIP
>>> ans.text, ans.citations, ans.contexts, ans.usage, ans.timings  # doctest: +SKIP

One module (over 400 lines) because it is the public facade: each method is a few lines
handing over to the session, the writer, the view and the reader, and users read it whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .answering.answerer import AnswerModels, answer, choose_answerer
from .answering.reader.core import Reader, ReaderLLM, ReaderResult, passages_of, title_lookup
from .answering.reader.stored import stored_spans
from .errors import (
    ConfigError,
    DamagedIndexError,
    IndexFormatError,
    QuestionError,
)
from .indexing.embed_cache import CachedEmbedder
from .indexing.repair import recover_manifest
from .indexing.settings import OpenSettings
from .providers.base import LLM, Embedder
from .providers.embedder_spec import make_embedder
from .providers.extractive import ExtractiveLLM
from .retrieval.methods.base import QueryOptions, Retrieval, available_methods, get_method, recommended_method
from .session import QUERY_USAGE, IndexReport, IndexSession
from .storage.backend import index_root, open_backend
from .storage.jobs import pending_work
from .storage.manifest import IndexConfig, Manifest, not_an_index
from .types import MAX_K, Answer, Budget, Context, ContextItem, Usage

MAX_QUESTION_CHARS = 10_000


def _validate_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise QuestionError('the question is empty; ask something, e.g. paretorag query "What is ...?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question has {len(question)} characters (limit {MAX_QUESTION_CHARS}); "
            "shorten it, or index long text as a document instead"
        )
    return question.strip()


class RAG(IndexSession):
    """An index directory plus the models that build and query it.

    Use :meth:`open`; the constructor is internal. Writes (``index``, ``insert``,
    ``build``, ``delete``, ``repair``) take the index's writer lock; reads see the
    latest commit, reloading when another process commits.
    """

    # the offline reader takes the sentences and spans of whole chunks from the index's
    # ``reader_spans`` structure; False parses them at query time (the same answers: for A/B timing)
    use_stored_spans: bool = True

    # -- opening ---------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        methods: Sequence[str] | None = None,
        replace_methods: bool = False,
        llm: str | LLM | None = None,
        embedder: str | Embedder | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        chunking: str | None = None,
        workers: int | None = None,
        embed_titles: bool | None = None,
        builders: dict[str, dict[str, Any]] | None = None,
        replace_builders: bool = False,
        ann: str | None = None,
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
        replace_methods : bool
            Serve exactly ``methods``: the others are dropped from the configuration, so
            :meth:`index` builds and updates only these methods' structures. Structures
            already built are kept (and reused when a method needs them again) while the
            chunks are unchanged, and deleted at the first commit that changes them.
        llm : str or LLM, optional
            ``extractive`` (default), ``openai:MODEL``, ``llamacpp[:GGUF]``, ``fake``, or an object.
        embedder : str or Embedder, optional
            ``minilm`` (default), ``hash[:DIM]``, ``st:PATH``, ``openai:MODEL:DIM``, or an object.
            An existing index must be opened with the embedder it was built with.
        chunk_size, chunk_overlap : int, optional
            Tokens per chunk and overlap (default 1200 and 100); fixed once documents exist.
        chunking : {"sections", "sentences"}, optional
            Where chunks may end: ``sentences`` (default: wherever a chunk is full) or
            ``sections`` (at headings, page breaks and paragraphs,
            :func:`paretorag.ingest.chunking.chunk_document`); fixed once documents exist.
        workers : int, optional
            Processes/threads for builders (default 2).
        embed_titles : bool, optional
            Embed each chunk as ``"title\ntext"`` (default ``True``); changing it re-embeds
            the chunk vectors at the next commit (cached vectors of both forms are kept).
        builders : dict, optional
            Settings of structure builders, e.g. ``{"tree": {"g": 4}}``; merged into the
            index's configuration. Structures built with other settings are rebuilt.
        replace_builders : bool
            The builders' settings are exactly ``builders`` (the others at their defaults)
            instead of merged into those the index keeps from earlier opens.
        ann : {"auto", "exact", "hnsw", "ivf"}, optional
            The faiss index of the chunk vectors (default ``auto``: exact below a million
            vectors, HNSW from there); changing it rebuilds the faiss file at the next commit.
        create : bool
            Create the index if it does not exist (otherwise raise).
        wait : bool or float
            When another process holds the writer lock, a write waits (``True``), fails at
            once with :class:`~paretorag.errors.IndexLockedError` (``False``), or waits
            that many seconds.
        on_wait : callable, optional
            Called with a message naming the lock's holder when a write has to wait.
        """
        backend = open_backend(path)
        root = index_root(backend)
        if isinstance(root, Path) and root.exists() and not root.is_dir():
            raise IndexFormatError(f"{root} is a file, not an index directory; choose another --index path")
        damaged: str | None = None
        try:
            manifest = backend.load_manifest() if backend.exists() else None
        except DamagedIndexError as exc:  # readers report it; writers repair it
            damaged = str(exc)
            probe = backend.open_store()  # the configuration the last commit kept, if the backup is gone too
            manifest = recover_manifest(backend, probe)[0]
            probe.close()
        settings = OpenSettings(
            methods=methods,
            replace_methods=replace_methods,
            llm=llm if isinstance(llm, str) else None,
            embedder=embedder if isinstance(embedder, str) else None,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            chunking=chunking,
            workers=workers,
            embed_titles=embed_titles,
            ann=ann,
            builders=dict(builders or {}),
            replace_builders=replace_builders,
        )
        created = False
        if manifest is None:
            if not create:
                raise IndexFormatError(
                    not_an_index(root)
                    if isinstance(root, Path)
                    else f"{root} holds no paretorag index; "
                    f"build one with `paretorag index FILES --index {root}` first"
                )
            if isinstance(root, Path) and root.exists() and any(root.iterdir()) and not backend.exists():
                raise IndexFormatError(
                    f"{root} is a non-empty directory that is not an index; choose a new or empty one"
                )
            manifest = Manifest(IndexConfig(methods=[]))
            settings.apply(root, manifest)  # before creating anything: a bad setting leaves no folder
            created = isinstance(root, Path) and not root.exists()
            backend.create()
        before = manifest.to_json()
        settings.apply(root, manifest)
        emb: Embedder = (
            make_embedder(manifest.config.embedder)
            if embedder is None or isinstance(embedder, str)
            else embedder
        )
        if embedder is not None and not isinstance(embedder, str):
            built_with = manifest.models.get("embedder")
            if manifest.counts.get("documents") and built_with and built_with != emb.name:
                raise ConfigError(
                    f"{root} was embedded with {built_with!r}, not {emb.name!r}; use a new index"
                )
        llm_obj = None if llm is None or isinstance(llm, str) else llm
        store = backend.open_store()
        rag = cls(
            backend,
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
        if damaged is None and (backend.stamp() is None or manifest.to_json() != before):
            with rag._locked():  # only when something changed: a reader never rewrites a live manifest
                backend.save_manifest(rag.manifest)
                rag._stamp = backend.stamp()
        return rag

    def built(self, method: str) -> bool:
        """Whether this index has every structure ``method`` reads."""
        return all(s == "vectors" or s in self.manifest.structures for s in get_method(method).requires)

    def default_method(self) -> str:
        """The method used when none is named: the recommended one (``paretorag methods`` lists it
        first) where this index has its structures, else the first configured method that is
        built, else ``vanilla``."""
        rec = recommended_method()
        if self.built(rec):
            return rec
        configured = [m for m in self.manifest.config.methods if m in available_methods()]
        return next((m for m in configured if self.built(m)), "vanilla")

    def retrieve(
        self,
        question: str,
        method: str | None = None,
        *,
        k: int | None = None,
        budget: int | Budget | None = None,
        **params: Any,
    ) -> tuple[Retrieval, list[ContextItem]]:
        """Retrieval only: the method's result and its context items (before packing).

        ``method`` None is :meth:`default_method`: the recommended method where the index has
        its structures.
        """
        question = _validate_question(question)
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
            raise ConfigError(
                f"k must be an integer from 1 to {MAX_K} (passages to retrieve), got {k!r}; e.g. k=5"
            )
        method = method or self.default_method()
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
                f"`paretorag index --index {self.root} --methods {method}` (or RAG.open(..., methods=[{method!r}]).build())"
            )
        b = budget if isinstance(budget, Budget) else Budget(budget)
        opts = QueryOptions(k=k, budget=b)
        usage = Usage()  # the LLM calls this question's retrieval makes, in this thread only
        token = QUERY_USAGE.set(usage)
        try:
            r = m.retrieve(view, question, opts)
        finally:
            QUERY_USAGE.reset(token)
        r.usage = usage
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
        method: str | None = None,
        *,
        k: int | None = None,
        budget: int | Budget | None = None,
        context_only: bool = False,
        max_answer_tokens: int = 512,
        on_token: Callable[[str], None] | None = None,
        reader: str | None = None,
        **params: Any,
    ) -> Answer:
        """Answer a question with ``method``; returns text, citations, contexts, usage and timings.

        ``k`` is the passages to retrieve, 1 to :data:`~paretorag.types.MAX_K` (100; default:
        the method's own). ``budget`` caps the context in tokens (default: unbounded; methods such as
        g2cons apply their own). ``context_only`` skips generation; ``max_answer_tokens``
        caps the answer's length; ``on_token`` receives the answer's pieces as the LLM
        streams them. ``reader`` chooses who answers (:data:`~paretorag.answering.answerer.READERS`): by default a
        generative LLM when the index has one, else the offline reader. Other keyword
        arguments set the method's parameters.
        """
        t0 = time.perf_counter()
        method = method or self.default_method()
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
            on_token=on_token,
            reader=reader,
            params=params,
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
        on_token: Callable[[str], None] | None = None,
        reader: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Answer:
        """Pack a retrieval's items under ``budget`` and generate the answer.

        The answer's usage includes the LLM calls the retrieval made (``retrieval.usage``).
        ``on_token`` receives the answer's pieces as the LLM streams them; ``reader`` is
        as in :meth:`query`. The offline reader may retrieve once more with ``method`` and
        its ``params`` (its second hop, :mod:`~paretorag.answering.reader.hops`; shown in the
        answer's ``trace["second_hop"]``). The work is :func:`paretorag.answering.answerer.answer`'s.
        """
        hop_method = method or self.default_method()
        hop_params = dict(params or {})

        def again(query: str, k: int) -> tuple[Retrieval, list[ContextItem]]:
            return self.retrieve(query, hop_method, k=k, **hop_params)

        return answer(
            replace(self._answer_models(), retrieve=again),
            question.strip(),
            retrieval,
            items,
            who="" if context_only else self.answerer(reader),
            method=method,
            budget=budget if isinstance(budget, Budget) else Budget(budget),
            max_answer_tokens=max_answer_tokens,
            retrieval_seconds=retrieval_seconds,
            on_token=on_token,
        )

    def answerer(self, reader: str | None = None) -> str:
        """Who answers: ``reader`` (the offline reader), ``extractive`` (evidence sentences) or ``llm``.

        ``None`` picks the index's LLM when it is generative, else the reader.
        """
        return choose_answerer(reader, self._base_llm)

    def _answer_models(self) -> AnswerModels:
        return AnswerModels(
            tokenizer=self.tokenizer,
            base_llm=self._base_llm,
            extractive=self._extractive,
            llm_for=self._llm_for,
            read=self._read,
        )

    def _reader(self) -> Reader:
        base = self._base_llm()
        if isinstance(base, ReaderLLM):
            return base.reader
        with self._view_lock:  # one reader, however many threads ask first
            if self._offline_reader is None:
                self._offline_reader = Reader(CachedEmbedder(self.embedder, self.store))
            return self._offline_reader

    def _extractive(self) -> LLM:
        base = self._base_llm()
        if type(base) is ExtractiveLLM:
            return base
        llm = ExtractiveLLM()
        llm.bind(CachedEmbedder(self.embedder, self.store), self.tokenizer)
        return llm

    def _plain_reader(self) -> Reader:
        """The offline reader without its span model (``reader="reader-nospan"``)."""
        with self._view_lock:
            if self._nospan_reader is None:
                self._nospan_reader = Reader(CachedEmbedder(self.embedder, self.store), span_mode="off")
            return self._nospan_reader

    def _read(self, question: str, ctx: Context, span: bool = True) -> tuple[Context, ReaderResult]:
        """The reader's answer (``span=False``: without its span model), and the context with
        any passage it fetched by title appended."""
        view = self.view
        reader = self._reader() if span else self._plain_reader()
        result = reader.read(
            question,
            passages_of(ctx.items),
            title_lookup(view),
            stored_spans(view) if self.use_stored_spans else None,
        )
        if not result.added:
            return ctx, result
        extra = [view.chunk_item(p.row, 0.0) for p in result.added]
        return replace(ctx, items=tuple(ctx.items) + tuple(extra)), result

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
        if self._damaged:
            raise DamagedIndexError(self._damaged)
        m = self.manifest
        sizes = self.backend.size_bytes()
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
            "model_calls": m.model_calls,
            "methods_available": available_methods(),
            # stored but not committed (a killed write, a server job not finished) and who left it
            "pending": pending_work(self.backend, self.store, m),
        }

    def __enter__(self) -> RAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RAG", "IndexReport"]
