"""Graph kernels at scale: personalized PageRank on a 100k-node, 1M-edge graph (JSON).

Target (operator framework issue): PPR p50 <= 20 ms per query, the transition matrix
computed once per index (:func:`paretorag.kernels.transition`) as the operators do.
Each query restarts from 5 random seed nodes with random weights, damping 0.5
(HippoRAG 2's). Also times a 2-hop BFS from the same seeds.

    python bench/bench_kernels.py [--nodes 100000] [--edges 1000000] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import scipy.sparse as sp

from paretorag.kernels import bfs_levels, pagerank, transition


def random_graph(n: int, m: int, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    keep = src != dst
    w = rng.random(int(keep.sum())).astype(np.float32) + 0.1
    a = sp.coo_matrix((w, (src[keep], dst[keep])), shape=(n, n)).tocsr()
    return sp.csr_matrix(a + a.T)  # undirected: m edges, 2m stored entries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args()
    adj = random_graph(args.nodes, args.edges)
    t0 = time.perf_counter()
    tt = transition(adj)
    prep_s = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    ppr_ms, bfs_ms = [], []
    for _ in range(args.queries):
        seeds = rng.choice(args.nodes, 5, replace=False)
        restart = np.zeros(args.nodes)
        restart[seeds] = rng.random(5) + 0.1
        t0 = time.perf_counter()
        scores = pagerank(None, damping=0.5, personalization=restart, transition_t=tt)
        ppr_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        bfs_levels(adj, seeds, 2)
        bfs_ms.append((time.perf_counter() - t0) * 1e3)
        if not np.isclose(scores.sum(), 1.0):
            raise SystemExit("PPR scores do not sum to one")
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "edges": int(adj.nnz // 2),
                "transition_s": round(prep_s, 3),
                "ppr_ms": {
                    "p50": round(float(np.median(ppr_ms)), 2),
                    "p95": round(float(np.percentile(ppr_ms, 95)), 2),
                },
                "bfs2_ms": {
                    "p50": round(float(np.median(bfs_ms)), 2),
                    "p95": round(float(np.percentile(bfs_ms, 95)), 2),
                },
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
