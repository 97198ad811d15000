"""Breadth-first kernels over CSR adjacency (pure numpy/scipy, no Python loop per edge).

- :func:`neighbors`: all neighbours of a frontier, gathered in one vectorized step;
- :func:`bfs_levels`: nodes reached in 1..h hops from seeds, with their hop count
  (G2ConS's concept expansion, §3.2.1; the Onehop operators of the unified framework, §6.1);
- :func:`hop_distances`: exact pairwise hop counts between a few sources, bounded at
  ``h`` (E2GraphRAG's Graph Filter, Equation 1), by bidirectional search.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..types import IntArray


def neighbors(indptr: np.ndarray, indices: np.ndarray, frontier: IntArray) -> np.ndarray:
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
        nb = neighbors(self.indptr, self.indices, self.frontier)
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


def bfs_levels(adjacency: sp.csr_matrix, seeds: IntArray, hops: int) -> tuple[IntArray, IntArray]:
    """Nodes first reached at hop 1..``hops`` from ``seeds`` (seeds excluded), nearest first.

    Returns ``(nodes, hop)``; within a hop nodes are in increasing row order.
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise ConfigError(f"hops must be a non-negative integer, got {hops!r}")
    adjacency = sp.csr_matrix(adjacency)
    n = adjacency.shape[0]
    visited = np.zeros(n, dtype=bool)
    frontier = np.unique(np.asarray(seeds, dtype=np.int64))
    visited[frontier] = True
    ids: list[IntArray] = []
    levels: list[IntArray] = []
    for hop in range(1, hops + 1):
        if frontier.size == 0:
            break
        reached = np.unique(neighbors(adjacency.indptr, adjacency.indices, frontier)).astype(np.int64)
        frontier = reached[~visited[reached]]
        visited[frontier] = True
        ids.append(frontier)
        levels.append(np.full(frontier.size, hop, dtype=np.int64))
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(ids), np.concatenate(levels)


def k_hop(adjacency: sp.csr_matrix, seeds: IntArray, hops: int) -> IntArray:
    """The seeds and every node within ``hops`` hops of them, sorted."""
    reached, _ = bfs_levels(adjacency, seeds, hops)
    return np.unique(np.concatenate([np.asarray(seeds, dtype=np.int64), reached]))


__all__ = ["bfs_levels", "hop_distances", "k_hop", "neighbors"]
