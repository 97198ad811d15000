"""Path kernels over CSR adjacency (unified framework §6.1, KhopPath and AgentPath; DALK).

- :func:`shortest_path`: a fewest-hops path between two nodes, at most ``max_hops`` long;
- :func:`k_hop_paths`: every simple path of at most ``max_hops`` edges between pairs of
  given nodes, bounded in number;
- :func:`merge_paths`: drop paths contained in longer ones ("A->B->C" and
  "A->B->C->D" merge into "A->B->C->D", §6.1 KhopPath);
- :func:`cover_paths`: the KhopPath loop of §6.1: repeatedly join an entity to the
  nearest other entity of the set within ``max_hops``, drop the entities the path
  visits, and merge the paths found.

Paths are lists of node rows, edges read as undirected (a path may walk an edge
against its direction, as a KG triple read backwards).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError
from .bfs import neighbors


def _undirected(adjacency: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    a = sp.csr_matrix(adjacency)
    a = sp.csr_matrix(((a + a.T) != 0).astype(np.int8))
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return a


def _check_hops(max_hops: int) -> int:
    if isinstance(max_hops, bool) or not isinstance(max_hops, int) or max_hops < 0:
        raise ConfigError(f"max_hops must be a non-negative integer, got {max_hops!r}")
    return max_hops


def shortest_path(
    adjacency: sp.spmatrix | sp.sparray, source: int, target: int, max_hops: int
) -> list[int] | None:
    """A fewest-hops path ``source .. target`` of at most ``max_hops`` edges, or ``None``.

    Breadth-first from ``source``; among equally short paths, the one through the
    lowest-numbered predecessor at each level.
    """
    _check_hops(max_hops)
    return _bfs_path(_undirected(adjacency), int(source), int(target), max_hops)


def _bfs_path(a: sp.csr_matrix, source: int, target: int, max_hops: int) -> list[int] | None:
    if source == target:
        return [source]
    n = a.shape[0]
    parent = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    seen[source] = True
    frontier = np.array([source], dtype=np.int64)
    for _ in range(max_hops):
        if frontier.size == 0:
            break
        starts = a.indptr[frontier]
        lengths = a.indptr[frontier + 1] - starts
        nb = neighbors(a.indptr, a.indices, frontier).astype(np.int64)
        owner = np.repeat(frontier, lengths)
        fresh = ~seen[nb]
        nb, owner = nb[fresh], owner[fresh]
        # first (lowest) owner per new node: owners come in increasing frontier order
        order = np.lexsort((owner, nb))
        nb, owner = nb[order], owner[order]
        first = np.ones(nb.size, dtype=bool)
        first[1:] = nb[1:] != nb[:-1]
        nb, owner = nb[first], owner[first]
        parent[nb] = owner
        seen[nb] = True
        if seen[target]:
            path = [int(target)]
            while path[-1] != source:
                path.append(int(parent[path[-1]]))
            return path[::-1]
        frontier = nb
    return None


def k_hop_paths(
    adjacency: sp.spmatrix | sp.sparray,
    nodes: npt.ArrayLike,
    max_hops: int,
    *,
    max_paths: int = 1000,
) -> list[list[int]]:
    """Every simple path of 1..``max_hops`` edges between two distinct ``nodes``.

    Each unordered pair is reported once (from the endpoint listed first in ``nodes``);
    paths come in depth-first order, neighbours in increasing row order, and the
    search stops after ``max_paths`` paths (hubs make the count explode).
    """
    _check_hops(max_hops)
    a = _undirected(adjacency)
    ends = [int(x) for x in dict.fromkeys(np.asarray(nodes, dtype=np.int64).reshape(-1).tolist())]
    rank = {x: i for i, x in enumerate(ends)}
    out: list[list[int]] = []
    for i, s in enumerate(ends):
        stack: list[tuple[int, list[int]]] = [(s, [s])]
        while stack and len(out) < max_paths:
            x, path = stack.pop()
            if len(path) > 1 and rank.get(x, -1) > i:
                out.append(path)
            if len(path) - 1 == max_hops:
                continue
            nb = a.indices[a.indptr[x] : a.indptr[x + 1]]
            on_path = set(path)
            stack.extend((int(y), [*path, int(y)]) for y in nb[::-1].tolist() if y not in on_path)
        if len(out) >= max_paths:
            break
    return out[:max_paths]


def _contains(long: Sequence[int], short: Sequence[int]) -> bool:
    """Whether ``short`` is a contiguous run of ``long``, read either way."""
    m = len(short)
    if m > len(long):
        return False
    fwd, back = list(short), list(short)[::-1]
    return any(list(long[i : i + m]) in (fwd, back) for i in range(len(long) - m + 1))


def merge_paths(paths: Sequence[Sequence[int]]) -> list[list[int]]:
    """Paths with every path contained in a longer (or earlier equal) one removed.

    ``[A, B, C]`` and ``[A, B, C, D]`` give ``[[A, B, C, D]]`` (§6.1 KhopPath); a path
    read backwards counts as the same path. Order: longest first, then first seen.
    """
    order = sorted(range(len(paths)), key=lambda i: (-len(paths[i]), i))
    kept: list[list[int]] = []
    for i in order:
        p = [int(x) for x in paths[i]]
        if not any(_contains(q, p) for q in kept):
            kept.append(p)
    return kept


def cover_paths(adjacency: sp.spmatrix | sp.sparray, nodes: npt.ArrayLike, max_hops: int) -> list[list[int]]:
    """The KhopPath operator's loop (§6.1): paths joining the given entities, merged.

    Take the first entity left; find the nearest other entity left within
    ``max_hops`` (ties: the one listed first); record the shortest path between them
    and remove every listed entity on it. An entity with no other within reach is
    removed alone. Repeat until no entity is left, then :func:`merge_paths`.
    """
    _check_hops(max_hops)
    a = _undirected(adjacency)
    left = [int(x) for x in dict.fromkeys(np.asarray(nodes, dtype=np.int64).reshape(-1).tolist())]
    found: list[list[int]] = []
    while left:
        s = left[0]
        best: list[int] | None = None
        for t in left[1:]:
            path = _bfs_path(a, s, t, max_hops if best is None else len(best) - 2)
            if path is not None and (best is None or len(path) < len(best)):
                best = path
                if len(best) == 2:
                    break
        if best is None:
            left.pop(0)
            continue
        on = set(best)
        left = [x for x in left if x not in on]
        found.append(best)
    return merge_paths(found)


__all__ = ["cover_paths", "k_hop_paths", "merge_paths", "shortest_path"]
