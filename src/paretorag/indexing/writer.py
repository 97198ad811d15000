"""Writing an index directory, stage by stage (the jobs live in :mod:`paretorag.indexing`).

Stages of a commit (unified framework §3: graph building and index construction):

1. ``ingest``: new documents are chunked and stored, one SQLite transaction each
   (:mod:`~paretorag.indexing.build`);
2. ``embed``: chunk vectors, batch by batch into the embedding cache (by text hash,
   :mod:`~paretorag.indexing.embed_cache`);
3. ``vectors``: the ``.npy`` + faiss files for the live chunk set (:mod:`~paretorag.indexing.commit`);
4. structures required by the configured methods (:mod:`~paretorag.indexing.plan`),
   independent builders in parallel (:mod:`~paretorag.indexing.build`);
5. the manifest is replaced atomically: the commit point (:mod:`~paretorag.indexing.commit`).

A run killed anywhere leaves the previous manifest, which names only complete files,
so the index loads as it was; a re-run skips stored documents, cached vectors and
finished structures, and ends identical to an uninterrupted run. Writers hold the
index's writer lock (:mod:`paretorag.storage.lock`); on Ctrl-C, builder threads stop at their
next step (:mod:`paretorag.cancel`) and finished structures stay on disk for the re-run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..cancel import CancellableLLM, pause_point
from ..errors import DamagedIndexError
from ..graphs.base import Builder
from ..progress import NullProgress, Progress
from ..providers.base import LLM, Embedder, Tokenizer
from ..providers.counting import ModelCalls, counting
from ..providers.wrappers import CachedLLM, CountingLLM
from ..storage.backend import IndexBackend
from ..storage.manifest import Manifest
from ..storage.store import ChunkTable, Store
from ..storage.structures import StructureData
from ..storage.vectors import resolve_ann
from ..types import Document, Usage
from .build import (
    ContextFactory,
    IndexBuildContext,
    build_structures,
    chunk_and_store,
    chunk_and_store_on,
)
from .commit import commit_manifest, write_vectors
from .embed_cache import CachedEmbedder, Labelled
from .plan import pooled_spans, structure_plan, vector_stem

if TYPE_CHECKING:
    from .distributed import RayCluster


class IndexWriter:
    """The write side of an index directory (used by :class:`paretorag.RAG`)."""

    def __init__(
        self,
        backend: IndexBackend,
        store: Store,
        manifest: Manifest,
        embedder: Embedder,
        tokenizer: Tokenizer,
        llm_factory: Callable[[], LLM],
        usage: Usage,
        progress: Progress | None = None,
        cluster: RayCluster | None = None,
    ) -> None:
        self.backend = backend
        self.store = store
        self.manifest = manifest
        self.cancel = threading.Event()  # set on Ctrl-C: builder threads stop at their next step
        self.cluster = cluster
        spec = manifest.config.embedder
        if cluster is not None:
            from ..providers.embedder_spec import make_embedder
            from .distributed import check_embedder

            check_embedder(spec, embedder.name, make_embedder)
        self.embedder = CachedEmbedder(embedder, store, progress, self.cancel, cluster=cluster, spec=spec)
        self.tokenizer = tokenizer
        self._llm_factory = llm_factory
        self._llm: LLM | None = None
        self.usage = usage
        self.progress = progress or NullProgress()
        self.timings: dict[str, float] = {}
        self.calls = ModelCalls()  # embedder texts/batches and spaCy documents per stage
        self.rebuild: frozenset[str] = frozenset()  # structures built afresh, not updated

    def llm_for(self, stage: str) -> LLM:
        if self._llm is None:
            self._llm = CachedLLM(self._llm_factory(), self.store)
        return CountingLLM(CancellableLLM(self._llm, self.cancel), self.usage, stage, self.tokenizer)

    def build_context(
        self, chunks: ChunkTable, built: dict[str, StructureData], label: str = ""
    ) -> IndexBuildContext:
        """What a builder gets: the ``built`` structures, and the cached embedder with its
        progress bars labelled ``label``."""
        embedder: Embedder = self.embedder if not label else Labelled(self.embedder, label)
        return IndexBuildContext(
            chunks,
            built,
            embedder=embedder,
            tokenizer=self.tokenizer,
            progress=self.progress,
            cancel=self.cancel,
            config=self.manifest.config,
            cluster=self.cluster,
            llm_for=self.llm_for,
            store=self.store,
            previous=self.previous,
        )

    def previous(self, name: str) -> StructureData | None:
        """The committed structure ``name`` an updating builder starts from (None: none,
        unreadable, or named in ``rebuild``)."""
        info = self.manifest.structures.get(name)
        if name in self.rebuild or not info or not self.backend.has_structure(info["dir"]):
            return None
        try:
            return self.backend.load_structure(info["dir"])
        except DamagedIndexError:  # built afresh; `paretorag repair` is not needed for it
            return None

    # -- stage 1 --------------------------------------------------------------
    def ingest(
        self, docs: Sequence[Document], replaces: Mapping[str, Sequence[str]] | None = None
    ) -> tuple[int, int]:
        """Chunk and store new documents; returns (added, unchanged).

        ``replaces`` maps a key to the stored ids its documents replace: those are marked
        deleted and the key's new documents stored in one transaction (an edited file).
        """
        cfg = self.manifest.config
        t0 = time.perf_counter()
        if self.cluster is not None:
            added, unchanged = chunk_and_store_on(
                self.cluster,
                self.store,
                docs,
                replaces or {},
                config=cfg,
                progress=self.progress,
                cancel=self.cancel,
            )
        else:
            added, unchanged = chunk_and_store(
                self.store,
                docs,
                replaces or {},
                config=cfg,
                tokenizer=self.tokenizer,
                progress=self.progress,
                cancel=self.cancel,
            )
        if added:
            self.timings["ingest"] = time.perf_counter() - t0
        return added, unchanged

    # -- stages 2-5 -----------------------------------------------------------
    def commit(self) -> None:
        """Bring vectors and structures up to date with the live documents, then commit."""
        m = self.manifest
        chunks = self.store.chunk_table()
        fp = chunks.fingerprint()
        t0 = time.perf_counter()
        before = self.embedder.computed
        titles = m.config.embed_titles
        texts = chunks.embedded_texts(titles)
        spans = pooled_spans(
            structure_plan(m.config, fp), self.backend, chunks, texts, self.embedder.pools_tokens
        )
        pause_point("before-embedding")
        with counting(self.calls, "vectors"):
            if spans is None:
                vectors = self.embedder.embed(texts, description="embedding chunks")
            else:  # one pass per chunk gives its vector and its builders' span vectors
                vectors, _ = self.embedder.embed_spans(texts, spans, description="embedding chunks")
        if self.embedder.computed > before:  # time only real work, not cache reads
            self.timings["embed"] = time.perf_counter() - t0
        ann = resolve_ann(m.config.ann, len(chunks))
        stem = vector_stem(fp, titles, ann)
        seconds = write_vectors(self.backend, m.vectors, stem, vectors, ann, chunks.ids)
        if seconds is not None:
            self.timings["vectors"] = seconds
        structures = build_structures(
            structure_plan(m.config, fp),
            self.backend,
            m.structures,
            self._builder_context(chunks),
            calls=self.calls,
            cancel=self.cancel,
            timings=self.timings,
            rebuild=self.rebuild,
        )
        commit_manifest(
            self.backend,
            m,
            self.store,
            fingerprint=fp,
            stem=stem,
            structures=structures,
            models={"embedder": self.embedder.name, "tokenizer": self.tokenizer.name, "llm": m.config.llm},
            vector_dim=int(self.embedder.dim),
            usage=self.usage.to_json(),
            # this commit's embedder and spaCy calls per stage (LLM calls are in ``usage``)
            model_calls=self.calls.to_json(),
            timings=self.timings,
        )

    def _builder_context(self, chunks: ChunkTable) -> ContextFactory:
        def context(builder: Builder, built: dict[str, StructureData]) -> IndexBuildContext:
            return self.build_context(chunks, built, f"embedding for {builder.name}")  # one bar label each

        return context
