"""E2GraphRAG retrieval operators (E2GraphRAG §3.2; Algorithm 1, App. A).

Pure numpy/scipy steps over the entity graph (:mod:`paretorag.graphs.entities`) and
the summary tree (:mod:`paretorag.graphs.tree`); the method
(:mod:`paretorag.methods.e2graphrag`) composes them.

- :func:`map_entities`: query entities -> graph vertices; unknown ones are ignored.
- :func:`hop_distances` + :class:`GraphFilter`: keep query-entity pairs within ``h``
  hops (Equation 1), exact hop counts by a BFS bounded at ``h`` hops.
- :class:`IndexMapping`: union over the pairs of the intersection of the two
  entities' chunk sets (Equation 2).
- :class:`CollapsedTreeSearch`: dense top-k over every tree node (RAPTOR's collapsed tree).
- :class:`OccurrenceRanking`: a chunk's weight is its number of query-entity
  occurrences, a summary's the sum of its children's, recursively.
- :class:`EntityAwareRanking`: distinct query entities covered, then occurrences.

The evidence format of §3.2 is in :mod:`paretorag.operators.e2graphrag_evidence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..types import FloatArray, IntArray, Scored
from .base import Operator, check_positive_int


def map_entities(terms: Sequence[str], ids: Mapping[str, int]) -> IntArray:
    """Vertex ids of the query's entity terms, first mention first (§3.2).

    Terms that are not graph vertices are ignored ("likely noise introduced by the
    entity extractor"); repeated vertices are kept once.
    """
    out: dict[int, None] = {}
    for t in terms:
        v = ids.get(t)
        if v is not None:
            out.setdefault(v, None)
    return np.fromiter(out, dtype=np.int64, count=len(out))


def _neighbors(indptr: np.ndarray, indices: np.ndarray, frontier: IntArray) -> np.ndarray:
    """All neighbors of the frontier vertices (with repeats), gathered without a Python loop."""
    starts = indptr[frontier]
    lengths = indptr[frontier + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=indices.dtype)
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return indices[offsets + np.arange(total)]


class _Ball:
    """A breadth-first search from one vertex, grown one level at a time on demand."""

    _UNSEEN = np.iinfo(np.int16).max // 2

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, n: int, source: int) -> None:
        self.indptr, self.indices = indptr, indices
        self.dist = np.full(n, self._UNSEEN, dtype=np.int16)
        self.dist[source] = 0
        self.frontier = np.array([source], dtype=np.int64)
        self.radius = 0

    def cost(self) -> int:
        """Edges the next level would scan (its frontier's degrees)."""
        return int((self.indptr[self.frontier + 1] - self.indptr[self.frontier]).sum())

    def grow(self) -> None:
        nb = _neighbors(self.indptr, self.indices, self.frontier)
        nb = np.unique(nb[self.dist[nb] == self._UNSEEN])
        self.radius += 1
        self.dist[nb] = self.radius
        self.frontier = nb


def _pair_distance(a: _Ball, b: _Ball, max_hops: int) -> int:
    """Exact hop count between two balls' sources if at most ``max_hops``, else ``max_hops + 1``.

    Bidirectional search: grow the cheaper side until the two balls meet. Once they
    share a vertex, the least ``dist_a + dist_b`` over shared vertices is the distance
    (a shortest path has a vertex within both radii); with ``radius_a + radius_b >=
    max_hops`` and nothing shared, the sources are farther apart than ``max_hops``.
    """
    while True:
        best = int((a.dist.astype(np.int32) + b.dist).min())
        if best <= a.radius + b.radius:
            return min(best, max_hops + 1)
        if a.radius + b.radius >= max_hops:
            return max_hops + 1
        side = min((x for x in (a, b) if x.frontier.size), key=_Ball.cost, default=None)
        if side is None:  # both components exhausted without meeting: no path
            return max_hops + 1
        side.grow()


def hop_distances(
    adjacency: sp.csr_matrix, sources: IntArray, max_hops: int, component: np.ndarray | None = None
) -> IntArray:
    """Exact shortest-path hop counts between the ``sources``, capped at ``max_hops + 1``.

    Bounded bidirectional breadth-first search per pair (:func:`_pair_distance`); each
    source's search is grown lazily and shared by all its pairs, and always from the
    side with the smaller frontier, so a pair next to a hub ("man", "time") does not
    scan the whole graph. Sources in different connected components (``component``)
    are not searched. ``d[i, j] == max_hops + 1`` means "farther than ``max_hops``,
    or no path" (``Dist_G = inf`` in Equation 1).
    """
    m = int(sources.size)
    far = max_hops + 1
    dist = np.full((m, m), far, dtype=np.int64)
    np.fill_diagonal(dist, 0)
    n = adjacency.shape[0]
    balls: dict[int, _Ball] = {}

    def ball(i: int) -> _Ball:
        if i not in balls:
            balls[i] = _Ball(adjacency.indptr, adjacency.indices, n, int(sources[i]))
        return balls[i]

    for i in range(m):
        for j in range(i + 1, m):
            if sources[i] == sources[j]:
                dist[i, j] = dist[j, i] = 0
            elif max_hops >= 1 and (component is None or component[sources[i]] == component[sources[j]]):
                dist[i, j] = dist[j, i] = _pair_distance(ball(i), ball(j), max_hops)
    return dist


class GraphFilter(Operator):
    """Query-entity pairs within ``h`` hops (Equation 1, §3.2).

    Parameters
    ----------
    h : int
        Hop threshold (paper default 4; Algorithm 1 lowers it while too many chunks map).
    """

    def __init__(self, *, h: int = 4) -> None:
        self.h = h

    def __call__(self, distances: IntArray) -> IntArray:
        """Index pairs ``(i, j)``, ``i < j``, into the sources with ``Dist <= h`` (shape ``(P, 2)``)."""
        if isinstance(self.h, bool) or not isinstance(self.h, int) or self.h < 0:
            raise ConfigError(f"GraphFilter.h must be a non-negative integer (hops), got {self.h!r}")
        i, j = np.nonzero(np.triu(distances <= self.h, 1))
        return np.stack([i, j], axis=1).astype(np.int64)


class IndexMapping(Operator):
    """Chunks shared by both entities of any selected pair (Equation 2, §3.2).

    ``C = U_{(a,b) in P} I_e->c(a) ∩ I_e->c(b)`` through the entity -> chunk index.
    """

    def __call__(self, entity_chunks: sp.csr_matrix, sources: IntArray, pairs: IntArray) -> IntArray:
        """Sorted chunk rows."""
        if pairs.size == 0:
            return np.zeros(0, dtype=np.int64)
        ptr, idx = entity_chunks.indptr, entity_chunks.indices
        rows = [idx[ptr[v] : ptr[v + 1]] for v in sources]
        hits = [np.intersect1d(rows[a], rows[b], assume_unique=True) for a, b in pairs]
        return np.unique(np.concatenate(hits)).astype(np.int64)


def chunk_occurrences(entity_chunks: sp.csr_matrix, sources: IntArray) -> np.ndarray:
    """Occurrences of the query entities in every chunk: ``w(c) = Count(c, E_q)`` (§3.2)."""
    n_chunks = entity_chunks.shape[1]
    if sources.size == 0:
        return np.zeros(n_chunks, dtype=np.int64)
    return np.asarray(entity_chunks[sources].sum(axis=0), dtype=np.int64).reshape(n_chunks)


def node_weights(
    chunk_weights: np.ndarray, first_row: np.ndarray, last_row: np.ndarray, nodes: IntArray
) -> IntArray:
    """Occurrence weights of tree nodes: a summary's is the sum of its children's (§3.2).

    Applied recursively, that is the sum over the summary's leaves, which are the
    contiguous chunk rows ``first_row .. last_row``: a range sum over a prefix sum.
    """
    prefix = np.concatenate([[0], np.cumsum(chunk_weights, dtype=np.int64)])
    return (prefix[last_row[nodes] + 1] - prefix[first_row[nodes]]).astype(np.int64)


class CollapsedTreeSearch(Operator):
    """Dense top-k over all tree nodes, chunks and summaries alike (§3.2, as RAPTOR).

    Parameters
    ----------
    k : int
        Nodes returned, by inner product with the query vector, best first.
    """

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def __call__(
        self, chunk_hits: Scored, summary_vectors: FloatArray, n_chunks: int, query_vector: FloatArray
    ) -> Scored:
        """Merge the chunk hits (top-k from the chunk vectors) with every summary's score.

        ``chunk_hits`` must hold at least the ``k`` best chunks; the result's ids are
        tree nodes (chunk rows, then ``n_chunks + i`` for summary ``i``).
        """
        k = check_positive_int(self, "k", self.k)
        ids = [chunk_hits.ids]
        scores = [chunk_hits.scores]
        if summary_vectors.shape[0]:
            ids.append(n_chunks + np.arange(summary_vectors.shape[0], dtype=np.int64))
            scores.append((summary_vectors @ np.asarray(query_vector, dtype=np.float32)).astype(np.float32))
        allid, allsc = np.concatenate(ids), np.concatenate(scores)
        order = np.lexsort((allid, -allsc))[:k]
        return Scored(allid[order], allsc[order], kind="node")


class OccurrenceRanking(Operator):
    """Re-rank candidate tree nodes by query-entity occurrences, keep ``k`` (§3.2).

    Ties (and zero weights) keep the candidates' incoming (dense) order.

    Parameters
    ----------
    k : int
        Nodes kept.
    """

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def __call__(self, candidates: Scored, weights: IntArray) -> Scored:
        k = check_positive_int(self, "k", self.k)
        order = np.argsort(-np.asarray(weights), kind="stable")[:k]
        return Scored(
            candidates.ids[order], np.asarray(weights, dtype=np.float32)[order], kind=candidates.kind
        )


def coverage_and_occurrence(
    chunk_entities: sp.csr_matrix, rows: IntArray, sources: IntArray
) -> tuple[IntArray, IntArray]:
    """Per chunk row: distinct query entities present, and their total occurrences (§3.2)."""
    if rows.size == 0 or sources.size == 0:
        z = np.zeros(rows.size, dtype=np.int64)
        return z, z.copy()
    sub = chunk_entities[rows][:, sources].toarray()
    return (sub > 0).sum(axis=1).astype(np.int64), sub.sum(axis=1).astype(np.int64)


class EntityAwareRanking(Operator):
    """Keep the ``k`` chunks covering the most query entities, then with most occurrences (§3.2).

    Ties keep document (row) order.

    Parameters
    ----------
    k : int
        Chunks kept.
    """

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def __call__(self, rows: IntArray, chunk_entities: sp.csr_matrix, sources: IntArray) -> Scored:
        k = check_positive_int(self, "k", self.k)
        rows = np.sort(np.asarray(rows, dtype=np.int64))
        cov, occ = coverage_and_occurrence(chunk_entities, rows, sources)
        order = np.lexsort((rows, -occ, -cov))[:k]
        score = cov[order] + occ[order] / (1.0 + float(occ.max(initial=0)))
        return Scored(rows[order], score.astype(np.float32), kind="chunk")


__all__ = [
    "CollapsedTreeSearch",
    "EntityAwareRanking",
    "GraphFilter",
    "IndexMapping",
    "OccurrenceRanking",
    "chunk_occurrences",
    "coverage_and_occurrence",
    "hop_distances",
    "map_entities",
    "node_weights",
]
