"""Approximate Steiner trees (pure scipy; G-retriever's subgraph, unified framework §6.1 Steiner).

A Steiner tree connects given terminal nodes at least total edge weight; finding the
best one is NP-hard, so the unified framework (like networkx) uses the classic
2-approximations:

- ``"kou"`` (Kou, Markowsky and Berman 1981): the metric closure over the terminals
  (all-pairs shortest paths between them), its minimum spanning tree, each tree edge
  expanded to its shortest path, a minimum spanning tree of that union, and non-terminal
  leaves pruned;
- ``"mehlhorn"`` (Mehlhorn 1988): the same with the closure replaced by the cheaper
  graph of Voronoi-region boundary edges (one multi-source Dijkstra instead of one per
  terminal).

Both give the same total weight as ``networkx.algorithms.approximation.steiner_tree``
with the same ``method`` on graphs with distinct path weights (tested on random
weighted graphs); ties between equally short paths may be broken differently, which
can change the tree, not the guarantee. Terminals in different connected components
give a Steiner forest (one tree per component).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError
from ..types import IntArray

SteinerMethod = Literal["kou", "mehlhorn"]


def _undirected(adjacency: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """One positive weight per unordered pair (the smaller direction); zero weights are no edge."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    if (a.data < 0).any() or not np.isfinite(a.data).all():
        raise ConfigError("steiner_tree needs finite non-negative edge weights")
    a.eliminate_zeros()
    coo = sp.coo_matrix(a)
    r, c, w = coo.row, coo.col, coo.data
    lo, hi = np.minimum(r, c), np.maximum(r, c)
    keep = lo != hi
    lo, hi, w = lo[keep], hi[keep], w[keep]
    n = a.shape[0]
    # one weight per unordered pair: the smallest of the two directions
    key = lo.astype(np.int64) * n + hi
    order = np.lexsort((w, key))
    key, lo, hi, w = key[order], lo[order], hi[order], w[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    lo, hi, w = lo[first], hi[first], w[first]
    return sp.csr_matrix(
        (np.concatenate([w, w]), (np.concatenate([lo, hi]), np.concatenate([hi, lo]))), shape=a.shape
    )


def _path(pred: npt.NDArray[np.int32], target: int) -> list[int]:
    """Nodes from the predecessor row's source to ``target`` (both included)."""
    out = [target]
    while pred[out[-1]] >= 0:
        out.append(int(pred[out[-1]]))
    return out


def _mst_edges(m: sp.csr_matrix) -> tuple[IntArray, IntArray]:
    from scipy.sparse.csgraph import minimum_spanning_tree  # with scipy.linalg: 0.15 s of every CLI query

    tree = sp.coo_matrix(minimum_spanning_tree(m))
    return tree.row.astype(np.int64), tree.col.astype(np.int64)


def _prune(n: int, u: IntArray, v: IntArray, terminals: set[int]) -> tuple[IntArray, IntArray]:
    """Remove non-terminal leaves until every leaf is a terminal."""
    alive = np.ones(u.size, dtype=bool)
    degree = np.bincount(np.concatenate([u, v]), minlength=n)
    incident: dict[int, list[int]] = {}
    for j, (a, b) in enumerate(zip(u.tolist(), v.tolist(), strict=True)):
        incident.setdefault(a, []).append(j)
        incident.setdefault(b, []).append(j)
    stack = [x for x in incident if degree[x] == 1 and x not in terminals]
    while stack:
        x = stack.pop()
        if degree[x] != 1:
            continue
        for j in incident[x]:
            if alive[j]:
                alive[j] = False
                other = int(v[j]) if int(u[j]) == x else int(u[j])
                degree[x] -= 1
                degree[other] -= 1
                if degree[other] == 1 and other not in terminals:
                    stack.append(other)
                break
    return u[alive], v[alive]


def steiner_tree(
    adjacency: sp.spmatrix | sp.sparray,
    terminals: npt.ArrayLike,
    *,
    method: SteinerMethod = "kou",
) -> IntArray:
    """Edges of an approximate minimum Steiner tree connecting ``terminals``.

    Parameters
    ----------
    adjacency : sparse matrix, shape (n, n)
        Non-negative edge weights (the edge's length); read as undirected (the
        smaller weight when both directions are given).
    terminals : array of int
        Nodes to connect (repeats ignored).
    method : {"kou", "mehlhorn"}
        The approximation (see the module docstring); both within ``2 - 2/l`` of the
        optimum for ``l`` terminals.

    Returns
    -------
    ndarray of int64, shape (m, 2)
        Tree edges ``(u, v)`` with ``u < v``, sorted; empty for fewer than two
        connected terminals.
    """
    if method not in ("kou", "mehlhorn"):
        raise ConfigError(f"steiner_tree method must be 'kou' or 'mehlhorn', got {method!r}")
    g = _undirected(adjacency)
    n = g.shape[0]
    terms = np.unique(np.asarray(terminals, dtype=np.int64).reshape(-1))
    if terms.size and (terms.min() < 0 or terms.max() >= n):
        raise ConfigError(f"steiner_tree terminals must be node rows in [0, {n})")
    if terms.size < 2:
        return np.zeros((0, 2), dtype=np.int64)
    from scipy.sparse.csgraph import dijkstra  # see _mst_edges

    pos = {int(t): i for i, t in enumerate(terms.tolist())}
    t = terms.size
    if method == "kou":
        dist, pred = dijkstra(g, directed=False, indices=terms, return_predecessors=True)
        closure = dist[:, terms]
        closure[~np.isfinite(closure)] = 0.0  # no path: no edge (a forest)
        a, b = _mst_edges(sp.csr_matrix(np.triu(closure)))
        paths = [_path(pred[i], int(terms[j])) for i, j in zip(a.tolist(), b.tolist(), strict=True)]
    else:
        dist, pred, src = dijkstra(g, directed=False, indices=terms, return_predecessors=True, min_only=True)
        coo = sp.coo_matrix(sp.triu(g, k=1))
        r, c, w = coo.row, coo.col, coo.data
        ok = (src[r] >= 0) & (src[c] >= 0) & (src[r] != src[c])
        r, c, w = r[ok], c[ok], w[ok]
        length = dist[r] + w + dist[c]
        sr = np.array([pos[int(s)] for s in src[r]], dtype=np.int64)
        sc = np.array([pos[int(s)] for s in src[c]], dtype=np.int64)
        lo, hi = np.minimum(sr, sc), np.maximum(sr, sc)
        # the shortest boundary edge per pair of regions
        order = np.lexsort((length, hi, lo))
        lo, hi, length, r, c = lo[order], hi[order], length[order], r[order], c[order]
        first = np.ones(lo.size, dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        lo, hi, length, r, c = lo[first], hi[first], length[first], r[first], c[first]
        best = {(int(x), int(y)): (int(p), int(q)) for x, y, p, q in zip(lo, hi, r, c, strict=True)}
        a, b = _mst_edges(sp.csr_matrix((length, (lo, hi)), shape=(t, t)))
        paths = []
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            p, q = best[(min(x, y), max(x, y))]
            paths.append([*reversed(_path(pred, p)), *_path(pred, q)])
    us: list[int] = []
    vs: list[int] = []
    for path in paths:
        us.extend(path[:-1])
        vs.extend(path[1:])
    if not us:
        return np.zeros((0, 2), dtype=np.int64)
    u, v = np.array(us, dtype=np.int64), np.array(vs, dtype=np.int64)
    pairs = np.unique(np.stack([np.minimum(u, v), np.maximum(u, v)], axis=1), axis=0)
    weights = np.asarray(g[pairs[:, 0], pairs[:, 1]]).reshape(-1)
    mu, mv = _mst_edges(sp.csr_matrix((weights, (pairs[:, 0], pairs[:, 1])), shape=(n, n)))
    mu, mv = _prune(n, mu, mv, set(pos))
    out = np.stack([np.minimum(mu, mv), np.maximum(mu, mv)], axis=1)
    return out[np.lexsort((out[:, 1], out[:, 0]))]


def tree_weight(adjacency: sp.spmatrix | sp.sparray, edges: IntArray) -> float:
    """Total weight of ``edges`` (rows ``(u, v)``) in the undirected reading of ``adjacency``."""
    g = _undirected(adjacency)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return float(np.asarray(g[e[:, 0], e[:, 1]]).sum()) if e.size else 0.0


__all__ = ["SteinerMethod", "steiner_tree", "tree_weight"]
