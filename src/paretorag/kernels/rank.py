"""Scoring and selection kernels: top-k, exact vector search over any row set, and
score aggregation through incidence matrices (node -> chunk, edge -> chunk).

The unified framework's Aggregator operators (§6.1) sum entity scores into relation
scores and relation scores into chunk scores; that is one sparse product each.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def column_sums(matrix: sp.csc_matrix, columns: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Row sums over the named columns, a repeated column counted again: a bag-of-terms
    query against a precomputed document x term score matrix (BM25 as ``bm25s`` scores it)."""
    cols = np.asarray(columns, dtype=np.int64).reshape(-1)
    if cols.size == 0:
        return np.zeros(matrix.shape[0], dtype=np.float64)
    uniq, counts = np.unique(cols, return_counts=True)
    return np.asarray(matrix[:, uniq] @ counts.astype(np.float64), dtype=np.float64).reshape(-1)


__all__ = ["aggregate", "column_sums", "dense_scores", "normalize_rows", "top_k", "vector_top_k"]


RRF_K = 60  # Cormack et al. 2009; EA-GraphRAG Eq. 2 uses the same constant


def rrf(rankings: Sequence[Scored], weights: Sequence[float] | None = None, k: int = RRF_K) -> Scored:
    """Weighted reciprocal rank fusion: ``score(d) = sum_i w_i / (k + rank_i(d))``.

    ``rank_i(d)`` is ``d``'s 1-based position in ``rankings[i]`` (taken in the given
    order, best first); a row missing from a ranking adds nothing. With equal weights
    this is RRF (Cormack, Clarke and Buettcher, SIGIR 2009); with weights ``1 - s(q)``
    and ``s(q)`` it is EA-GraphRAG's complexity-aware fusion (§3.4.3, Eq. 2). Ties are
    broken by row. All rankings must be of one kind.
    """
    if not rankings:
        return Scored.empty()
    kinds = {r.kind for r in rankings}
    if len(kinds) != 1:
        raise ValueError(f"rrf fuses rankings of one kind, got {sorted(kinds)}")
    w = [1.0] * len(rankings) if weights is None else [float(x) for x in weights]
    if len(w) != len(rankings):
        raise ValueError(f"rrf got {len(rankings)} rankings and {len(w)} weights")
    if k < 0:
        raise ValueError(f"rrf constant k must be >= 0, got {k}")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, w, strict=True):
        if weight == 0.0:
            continue
        for pos, row in enumerate(ranking.ids.tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + pos)
    if not fused:
        return Scored.empty(kinds.pop())
    rows = np.fromiter(fused, dtype=np.int64, count=len(fused))
    return top_k(
        np.fromiter(fused.values(), dtype=np.float64, count=len(fused)), len(fused), kinds.pop(), rows
    )
