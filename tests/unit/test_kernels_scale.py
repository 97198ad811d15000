"""Graph kernels at a million nodes: sparse all the way (no dense n x n anywhere).

A synthetic sparse graph of 1M nodes and ~5M directed edges; PageRank, personalized
PageRank (with a precomputed transition), BFS and top-k must finish within seconds
and allocate at most a stated bound, far below a dense n x n matrix (8 TB here).
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from paretorag.kernels import bfs_levels, pagerank, top_k, transition

N = 1_000_000
EDGES = 5_000_000
# The graph itself (float64 CSR, int32 indices) is ~68 MB; the transition another ~68 MB.
# 600 MB allows the transient copies scipy makes and still rules out anything of size
# n x n (8 TB dense, or even one n-sized float64 array per node).
PEAK_BOUND_MB = 600


@pytest.fixture(scope="module")
def graph() -> sp.csr_matrix:
    rng = np.random.default_rng(0)
    src = rng.integers(0, N, EDGES, dtype=np.int32)
    # a power-law-ish target distribution: some hubs, many leaves
    dst = (rng.pareto(1.2, EDGES) * 1000).astype(np.int64) % N
    w = rng.random(EDGES).astype(np.float64) + 0.1
    return sp.csr_matrix((w, (src, dst.astype(np.int32))), shape=(N, N))


@pytest.mark.slow
def test_ppr_and_bfs_on_a_million_nodes_stay_sparse(graph: sp.csr_matrix) -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        tt = transition(graph)
        pr = pagerank(None, transition_t=tt, tol=1e-9)
        seeds = np.zeros(N)
        seeds[[5, 77, 123_456]] = [1.0, 2.0, 1.0]
        ppr = pagerank(None, personalization=seeds, damping=0.5, transition_t=tt, tol=1e-9)
        best = top_k(ppr, 10)
        nodes, level = bfs_levels(graph, np.asarray([5, 77]), 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    seconds = time.perf_counter() - t0
    assert pr.shape == (N,) and abs(pr.sum() - 1.0) < 1e-9
    assert abs(ppr.sum() - 1.0) < 1e-9
    assert set(best.ids[:3].tolist()) & {5, 77, 123_456}  # restart mass stays near the seeds
    assert nodes.size > 0 and level.max() <= 2
    print(f"1M nodes, {graph.nnz} edges: peak {peak / 2**20:.0f} MB, {seconds:.1f} s")
    assert peak / 2**20 < PEAK_BOUND_MB, f"peak {peak / 2**20:.0f} MB"
    assert seconds < 30, f"{seconds:.1f} s"
