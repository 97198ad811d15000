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
    x = p.copy()
    for _ in range(max_iter):
        nxt = d * (t @ x + float(x[dangling].sum()) * p) + (1.0 - d) * p
        done = float(np.abs(nxt - x).sum()) < n * tol
        x = nxt
        if done:
            break
    return np.asarray(x / x.sum(), dtype=np.float64)


def out_edges(transition_t: tuple[sp.csr_matrix, np.ndarray]) -> sp.csr_matrix:
    """The row-stochastic matrix ``P`` (row ``u``: where the walk goes from ``u``) of a
    :func:`transition`, as CSR, for :func:`ppr_push`."""
    return sp.csr_matrix(transition_t[0].T)


def ppr_push(
    out: sp.csr_matrix,
    dangling: np.ndarray,
    personalization: npt.ArrayLike,
    *,
    damping: float = 0.5,
    eps: float = 1e-9,
) -> tuple[F64, float]:
    """Personalized PageRank by local push (Andersen, Chung and Lang 2006), batched.

    Every node whose residual exceeds ``eps`` pushes at once: it keeps ``1 - damping``
    of its residual as score and spreads the rest over its out-edges (``out``, from
    :func:`out_edges`); a dangling node sends its share back to the restart nodes, as
    :func:`pagerank` does. Only the nodes the walk reaches are touched, so one query
    costs what the seeds' neighbourhood costs, not what the whole graph does; the
    result is the same PPR up to the residual left behind.

    Returns
    -------
    (scores, residual)
        Unnormalized scores (summing to ``1 - residual``) and the residual mass left,
        an upper bound on the L1 distance to the exact PPR vector.
    """
    if not 0.0 < damping < 1.0:
        raise ConfigError(f"ppr_push damping must lie in (0, 1), got {damping!r}")
    if not eps > 0:
        raise ConfigError(f"ppr_push eps must be positive, got {eps!r}")
    n = out.shape[0]
    p = np.asarray(personalization, dtype=np.float64).reshape(-1)
    if p.size != n or (p < 0).any() or not np.isfinite(p).all():
        raise ConfigError(f"personalization must be {n} finite non-negative weights")
    total = float(p.sum())
    if total <= 0:
        raise ConfigError("personalization is all zero: give at least one seed node a positive weight")
    seeds = np.flatnonzero(p)
    seed_w = p[seeds] / total
    d = float(damping)
    x = np.zeros(n)
    r = np.zeros(n)
    r[seeds] = seed_w
    frontier = seeds[r[seeds] > eps]
    while frontier.size:
        mass = r[frontier]
        r[frontier] = 0.0
        x[frontier] += (1.0 - d) * mass
        rows = out[frontier]
        w = rows.data * np.repeat(d * mass, np.diff(rows.indptr))
        cols, inverse = np.unique(rows.indices, return_inverse=True)
        r[cols] += np.bincount(inverse, weights=w, minlength=cols.size)
        lost = d * float(mass[dangling[frontier]].sum())
        if lost > 0:
            r[seeds] += lost * seed_w
            cols = np.union1d(cols, seeds)
        frontier = cols[r[cols] > eps]
    return x, float(r.sum())


__all__ = ["out_edges", "pagerank", "ppr_push", "transition"]
