"""PageRank and personalized PageRank by power iteration (pure numpy/scipy).

G2ConS ranks concepts with PageRank (§3.2); HippoRAG, FastGraphRAG and EA-GraphRAG's
graph path spread a question's seed weights with personalized PageRank (unified
framework §6.1, node PPR operator; EA-GraphRAG §3.4.2). Both are one function; the
semantics are ``networkx.pagerank``'s (tested against it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError

F64 = npt.NDArray[np.float64]


def transition(adjacency: sp.spmatrix | sp.sparray) -> tuple[sp.csr_matrix, np.ndarray]:
    """The transposed row-stochastic matrix of a weighted graph, and its dangling mask.

    Reuse it across queries (:func:`pagerank` accepts it through ``transition_t``).
    """
    w = sp.csr_matrix(adjacency, dtype=np.float64)
    n = w.shape[0]
    out = np.asarray(w.sum(axis=1)).ravel()
    dangling = out <= 0
    inv = np.zeros(n)
    inv[~dangling] = 1.0 / out[~dangling]
    return sp.csr_matrix((sp.diags(inv) @ w).T), dangling


def pagerank(
    adjacency: sp.spmatrix | sp.sparray | None,
    *,
    damping: float = 0.85,
    personalization: npt.ArrayLike | None = None,
    tol: float = 1e-10,
    max_iter: int = 500,
    transition_t: tuple[sp.csr_matrix, np.ndarray] | None = None,
) -> F64:
    """(Personalized) PageRank of a weighted graph by power iteration (Page et al. 1999).

    Edge weights weight the random walk. With ``personalization`` (the restart vector,
    non-negative, normalized here) the walk restarts at its nodes and dangling nodes
    (no out-edges) send their mass there too, as ``networkx.pagerank`` does; without
    it teleportation and dangling mass are uniform.

    Parameters
    ----------
    adjacency : sparse matrix, shape (n, n), or None
        Non-negative weights; ``adjacency[i, j]`` is the weight of edge i -> j. May be
        ``None`` when ``transition_t`` is given.
    damping : float
        Probability of following an edge, in (0, 1) (0.85 in the original paper;
        HippoRAG 2 uses 0.5).
    personalization : array, shape (n,), optional
        Restart weights; all-zero raises.
    tol : float
        Stop when the L1 change of the scores falls below ``n * tol``.
    max_iter : int
        Iteration cap (the iteration converges geometrically with rate ``damping``).
    transition_t : tuple, optional
        :func:`transition` of the graph, precomputed.

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores summing to one.
    """
    if not 0.0 < damping < 1.0:
        raise ConfigError(f"pagerank damping must lie in (0, 1), got {damping!r}")
    d = float(damping)
    if transition_t is None:
        if adjacency is None:
            raise ConfigError("pagerank needs an adjacency or its transition matrix")
        transition_t = transition(adjacency)
    t, dangling = transition_t
    n = t.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    if personalization is None:
        x = np.full(n, 1.0 / n)
        for _ in range(max_iter):
            nxt = d * (t @ x) + (d * float(x[dangling].sum()) + 1.0 - d) / n
            done = float(np.abs(nxt - x).sum()) < n * tol
            x = nxt
            if done:
                break
        return np.asarray(x / x.sum(), dtype=np.float64)
    p = np.asarray(personalization, dtype=np.float64).reshape(-1)
    if p.size != n or (p < 0).any() or not np.isfinite(p).all():
        raise ConfigError(f"personalization must be {n} finite non-negative weights")
    total = float(p.sum())
    if total <= 0:
        raise ConfigError("personalization is all zero: give at least one seed node a positive weight")
    p = p / total
    restart = (1.0 - d) * p
    sinks = np.flatnonzero(dangling)  # gathered by index: the same sum, a fraction of the time
    diff = np.empty(n)
    x = p.copy()
    for _ in range(max_iter):
        # d * (T x + sinks' mass * p) + (1 - d) * p, in place, in the same order of operations
        nxt = t @ x
        if sinks.size:
            nxt += float(x[sinks].sum()) * p
        nxt *= d
        nxt += restart
        np.subtract(nxt, x, out=diff)
        done = float(np.abs(diff, out=diff).sum()) < n * tol
        x = nxt
        if done:
            break
    return np.asarray(x / x.sum(), dtype=np.float64)


__all__ = ["pagerank", "transition"]
