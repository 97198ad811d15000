"""The committed index as methods see it: chunk table, vectors, structures loaded at first use."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DamagedIndexError, MissingStructureError
from ..providers.base import LLM, Embedder, Tokenizer
from ..providers.question_nlp import QuestionNLP
from ..storage.backend import IndexBackend
from ..storage.manifest import Manifest
from ..storage.store import ChunkTable, Store
from ..storage.structures import StructureData
from ..types import ContextItem, FloatArray, Scored
from .embed_cache import CachedEmbedder
from .plan import method_needing


class LoadedIndex:
    """The committed index as methods see it (implements :class:`paretorag.retrieval.methods.IndexView`)."""

    def __init__(
        self,
        backend: IndexBackend,
        store: Store,
        manifest: Manifest,
        embedder: Embedder,
        tokenizer: Tokenizer,
        llm_for: Callable[[str], LLM],
    ) -> None:
        self.backend = backend
        self.root = backend.location
        self.manifest = manifest
        ids = backend.vector_ids(manifest.vectors) if manifest.vectors else []
        self.chunks = store.chunk_table(ids) if ids else ChunkTable.from_chunks([])
        self.vectors = backend.load_vectors(manifest.vectors, "exact") if ids else None
        self.nlp = QuestionNLP()
        if self.vectors is not None and len(self.vectors) != len(ids):
            raise DamagedIndexError(
                f"{backend.vector_place(manifest.vectors)} has {len(self.vectors)} rows for {len(ids)} "
                f"chunk ids; run `paretorag repair --index {backend.location}`"
            )
        self._embedder = embedder
        self._cached_embedder = CachedEmbedder(embedder, store)
        self._tokenizer = tokenizer
        self._llm_for = llm_for
        self._memo: dict[str, Any] = {}
        self._query_vectors: dict[str, FloatArray] = {}
        self._structures: dict[str, StructureData] = {}
        # threads sharing this view load each structure and memo once: one lock per key
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _once(self, key: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    def embed_query(self, text: str) -> FloatArray:
        vec = self._query_vectors.get(text)
        if vec is None:
            if len(self._query_vectors) >= 4096:
                self._query_vectors.clear()
            vec = self._query_vectors[text] = self._embedder.embed([text])[0]
        return vec

    def forget_queries(self) -> None:
        """Drop memoized query vectors (so that timings include query embedding again)."""
        self._query_vectors.clear()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cached_embedder.embed(texts)

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        if self.vectors is None:
            return Scored.empty()
        return self.vectors.search(query_vector, k)

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        if self.vectors is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self.vectors.matrix[rows]

    def structure(self, name: str) -> StructureData:
        found = self._structures.get(name)
        if found is not None:
            return found
        with self._once("structure:" + name):
            return self._load_structure(name)

    def _load_structure(self, name: str) -> StructureData:
        if name not in self._structures:
            info = self.manifest.structures.get(name)
            if info is None:
                method = method_needing(name, self.manifest.config.methods)
                raise MissingStructureError(
                    f"this index has no {name!r} structure; build it with "
                    f"`paretorag index --index {self.root} --methods {method}` "
                    f"(or RAG.open(..., methods=[{method!r}]).build())"
                )
            self._structures[name] = self.backend.load_structure(info["dir"])
        return self._structures[name]

    def cached(self, key: str, factory: Callable[[], Any]) -> Any:
        if key in self._memo:
            return self._memo[key]
        with self._once("memo:" + key):
            if key not in self._memo:
                self._memo[key] = factory()
            return self._memo[key]

    def llm(self, stage: str) -> LLM:
        return self._llm_for(stage)

    def count_tokens(self, text: str) -> int:
        return self._tokenizer.count([text])[0]

    def chunk_item(self, row: int, score: float) -> ContextItem:
        c = self.chunks
        return ContextItem(
            c.ids[row],
            c.doc_ids[row],
            c.titles[row],
            c.texts[row],
            float(score),
            int(c.n_tokens[row]),
            row,
            heading=c.heading(row),
        )
