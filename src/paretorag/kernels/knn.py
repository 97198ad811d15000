"""Exact k-nearest-neighbour pairs by blocks (HippoRAG's synonym edges, KGP's TF-IDF passage edges)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..types import FloatArray, IntArray


def knn_pairs(
    x: FloatArray | sp.csr_matrix, *, k: int, threshold: float, block: int = 2048
) -> tuple[IntArray, IntArray, FloatArray]:
    """Pairs ``i < j`` where ``j`` is among the ``k`` rows most similar to ``i`` (or the
    reverse) with similarity ``x_i . x_j >= threshold``.

    Rows are L2-normalized (dense or CSR), so the dot product is the cosine. Exact top-k
    over blocks of ``block`` rows: memory ``block x n``, never ``n x n``. A row is never
    its own neighbour. Returns ``(i, j, similarity)``, each pair once, sorted by ``(i, j)``.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)
    >>> i, j, s = knn_pairs(v, k=1, threshold=0.5)
    >>> i.tolist(), j.tolist(), [round(float(x), 2) for x in s]
    ([0, 1], [1, 2], [0.8, 0.6])
    """
    n = int(x.shape[0])
    kk = min(int(k), n - 1)
    out_i, out_j, out_s = [], [], []
    sparse = sp.csr_matrix(x) if sp.issparse(x) else None
    dense = np.ascontiguousarray(x, dtype=np.float32) if sparse is None else None
    xt = sparse.T.tocsr() if sparse is not None else None
    for a in range(0, n if kk > 0 else 0, block):
        if sparse is not None and xt is not None:
            sims = np.asarray((sparse[a : a + block] @ xt).toarray(), dtype=np.float32)
        elif dense is not None:
            sims = dense[a : a + block] @ dense.T
        rows = np.arange(sims.shape[0])
        sims[rows, a + rows] = -np.inf
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        ts = np.take_along_axis(sims, top, axis=1)
        keep = ts >= threshold
        out_i.append(np.broadcast_to((a + rows)[:, None], top.shape)[keep])
        out_j.append(top[keep])
        out_s.append(ts[keep])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    i, j, s = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    _, first = np.unique(lo * n + hi, return_index=True)
    return lo[first].astype(np.int64), hi[first].astype(np.int64), s[first].astype(np.float32)


__all__ = ["knn_pairs"]
