"""Sparse search and rank fusion over chunks: the two steps of hybrid retrieval.

- ``chunk.bm25``: top-k chunks by BM25 over the ``bm25`` structure
  (:mod:`paretorag.graphs.bm25`), the lexical retriever that hybrid systems pair with
  dense search (EA-GraphRAG §3.4.3 fuses a dense and a graph ranking the same way);
- ``chunk.fuse``: weighted reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR
  2009; EA-GraphRAG Eq. 2) of the chunk rankings that earlier steps of the pipeline
  stored under their step names, e.g. ``[("dense", ChunkVDB(k=50)), ("sparse",
  ChunkBM25(k=50)), ("fuse", ChunkFuse(sources=("dense", "sparse")))]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError
from ...graphs.bm25 import STRUCTURE, BM25Index
from ...kernels.rank import RRF_K, rrf, top_k
from ...types import FloatArray, Scored
from .base import Operator, check_nonneg_int, check_positive_int, register_operator

if TYPE_CHECKING:
    from ..query import IndexView, State


def bm25_index(index: IndexView) -> BM25Index:
    """The index's loaded BM25 structure (memoized per index)."""
    loaded: BM25Index = index.cached(f"{STRUCTURE}:index", lambda: BM25Index(index.structure(STRUCTURE)))
    return loaded


def bm25_scores(index: IndexView, question: str) -> np.ndarray:
    """BM25 score of every chunk row for ``question`` (0 where no term matches)."""
    return bm25_index(index).scores(question)


def hybrid_chunk_scores(
    index: IndexView,
    question: str,
    query_vector: FloatArray,
    *,
    weights: Sequence[float] | None = None,
    rrf_k: int = RRF_K,
) -> FloatArray:
    """Every chunk row's RRF score over the full dense and BM25 rankings (dense first).

    For methods that order a candidate set of chunks (G2ConS's reranking) rather than
    search: ordering by this score is ordering by the fused rank. A row that no term
    of the question matches gets only its dense term.
    """
    n = len(index.chunks)
    out = np.full(n, -np.inf, dtype=np.float32)
    if n == 0:
        return out
    dense = index.dense_search(query_vector, n)
    scores = bm25_scores(index, question)
    sparse = top_k(np.where(scores > 0, scores, -np.inf), n, "chunk")
    fused = rrf([dense, sparse], weights, k=rrf_k)
    out[fused.ids] = fused.scores
    return out


@register_operator
class ChunkBM25(Operator):
    """Top-k chunks by BM25 score (Robertson and Zaragoza 2009; ``bm25s`` scoring).

    Only chunks sharing at least one term with the question are returned, so a question
    made of stopwords or unknown words gives an empty result. Ties are broken by row.

    Parameters
    ----------
    k : int
        Number of chunks (5, as ``vanilla``).
    """

    name = "chunk.bm25"
    kind = "chunk"
    produces = "chunk"
    structures = (STRUCTURE,)
    paper = "Robertson and Zaragoza 2009 (BM25); sparse retriever of hybrid search (EA-GraphRAG §3.4.3)"

    def __init__(self, *, k: int = 5) -> None:
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        scores = bm25_scores(index, state.question)
        scores = np.where(scores > 0, scores, -np.inf)  # no shared term: not a match
        return top_k(scores, k, "chunk")


@register_operator
class ChunkFuse(Operator):
    """Weighted reciprocal rank fusion of earlier chunk rankings (RRF, Cormack et al. 2009).

    ``score(d) = sum_i w_i / (rrf_k + rank_i(d))`` over the rankings stored by the steps
    named in ``sources`` (1-based ranks; a chunk missing from a ranking adds nothing).
    Equal weights are plain RRF; EA-GraphRAG's complexity-aware fusion (§3.4.3, Eq. 2)
    is the two-source case with weights ``1 - s(q)`` and ``s(q)``.

    Parameters
    ----------
    sources : sequence of str
        Step names (result keys) of the chunk rankings to fuse (``("dense", "sparse")``).
    weights : sequence of float, optional
        One non-negative weight per source; ``None``: all 1 (plain RRF).
    rrf_k : int
        The RRF constant (60, Cormack et al.; EA-GraphRAG's default).
    k : int
        Number of chunks returned (5).
    """

    name = "chunk.fuse"
    kind = "chunk"
    produces = "chunk"
    consumes = ("dense", "sparse")
    paper = "Cormack, Clarke and Buettcher, SIGIR 2009 (RRF); EA-GraphRAG §3.4.3, Eq. 2 (weighted)"

    def __init__(
        self,
        *,
        sources: Sequence[str] = ("dense", "sparse"),
        weights: Sequence[float] | None = None,
        rrf_k: int = RRF_K,
        k: int = 5,
    ) -> None:
        self.sources = sources
        self.weights = weights
        self.rrf_k = rrf_k
        self.k = k

    def _weights(self) -> list[float] | None:
        if self.weights is None:
            return None
        if isinstance(self.weights, str | bytes) or not isinstance(self.weights, Sequence):
            raise ConfigError(f"ChunkFuse.weights must be a list of numbers, got {self.weights!r}")
        w = list(self.weights)
        if len(w) != len(self.sources) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) and x >= 0 for x in w
        ):
            raise ConfigError(
                f"ChunkFuse.weights must be {len(self.sources)} numbers >= 0, one per source "
                f"{list(self.sources)}; got {self.weights!r}"
            )
        return [float(x) for x in w]

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        rrf_k = check_nonneg_int(self, "rrf_k", self.rrf_k)
        if isinstance(self.sources, str) or not self.sources:
            raise ConfigError(
                f"ChunkFuse.sources must name the earlier steps to fuse, e.g. ('dense', 'sparse'); "
                f"got {self.sources!r}"
            )
        weights = self._weights()
        rankings = [state.get(name) for name in self.sources]
        for name, ranking in zip(self.sources, rankings, strict=True):
            if ranking.kind != "chunk":
                raise ConfigError(f"ChunkFuse fuses chunk rankings; step {name!r} produced {ranking.kind!r}")
        return rrf(rankings, weights, k=rrf_k).top(k)


__all__ = ["ChunkBM25", "ChunkFuse", "bm25_index", "bm25_scores", "hybrid_chunk_scores"]
