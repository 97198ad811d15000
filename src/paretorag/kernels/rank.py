"""Scoring and selection kernels: top-k, exact vector search over any row set, and
score aggregation through incidence matrices (node -> chunk, edge -> chunk).

The unified framework's Aggregator operators (§6.1) sum entity scores into relation
scores and relation scores into chunk scores; that is one sparse product each.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..types import FloatArray, IntArray, Scored


def top_k(scores: npt.ArrayLike, k: int, kind: str = "chunk", rows: IntArray | None = None) -> Scored:
    """The ``k`` best of ``scores`` (best first, ties by row), as :class:`Scored`.

    ``rows`` names the rows the scores belong to (default ``0..n-1``). Rows scoring
    ``-inf`` are never returned.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.arange(s.size, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    keep = ~np.isnan(s) & (s != -np.inf)
    s, ids = s[keep], ids[keep]
    if k < s.size:
        part = np.argpartition(-s, k - 1)[:k]
        s, ids = s[part], ids[part]
    order = np.lexsort((ids, -s))
    return Scored(ids[order], s[order].astype(np.float32), kind)


def vector_top_k(
    vectors: FloatArray, query: FloatArray, k: int, kind: str, candidates: IntArray | None = None
) -> Scored:
    """Exact inner-product top-k of ``query`` over the rows of ``vectors`` (or a subset).

    The vector search of every row set the framework indexes (§5): entities,
    relations, communities, tree nodes. Rows are L2-normalized, so this is cosine.
    """
    v = np.asarray(vectors, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if v.shape[0] == 0 or k <= 0:
        return Scored.empty(kind)
    if candidates is None:
        return top_k(v @ q, k, kind)
    rows = np.asarray(candidates, dtype=np.int64)
    return top_k(v[rows] @ q, k, kind, rows=rows)


def aggregate(incidence: sp.csr_matrix, scores: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Scores pushed through an incidence matrix: ``out[c] = sum_i scores[i] * incidence[i, c]``.

    ``incidence`` is (sources x targets), e.g. node -> chunk or edge -> chunk.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    return np.asarray(incidence.T @ s, dtype=np.float64).reshape(-1)


def dense_scores(scored: Scored, n: int, fill: float = 0.0) -> npt.NDArray[np.float64]:
    """A :class:`Scored` as a length-``n`` score vector (rows it does not name get ``fill``)."""
    out = np.full(n, fill, dtype=np.float64)
    out[scored.ids] = scored.scores
    return out


def normalize_rows(x: npt.ArrayLike) -> FloatArray:
    """L2-normalized float32 rows (zero rows stay zero)."""
    v = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.asarray(v / np.where(norms > 0, norms, 1.0), dtype=np.float32)


__all__ = ["aggregate", "dense_scores", "normalize_rows", "top_k", "vector_top_k"]
