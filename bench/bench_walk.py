"""Query cost of ``entity-walk``'s PPR as the corpus grows (JSON).

A synthetic passage-entity graph stands in for a corpus: ``n`` passages, each mentioning
8 entities drawn from a Zipf law (exponent 1.1) over ``n / 2`` entities, so a few
entities are in very many passages and most are rare, as with spaCy entities on the
shared benchmarks (about 20 mentions per passage there, 8 here to keep 1M passages in
memory). The walk restarts at 5 random passages with decreasing weights, as
``chunk.entity_walk`` does after a dense search. Per size it reports the transition's
build time and size, the p50 / p95 time of one walk with each solver of
``chunk.entity_walk`` (``exact``: power iteration over the whole graph; ``local``: over the
restart passages' neighbourhood, hubs above ``hub_df`` passages left out), and how often
the two agree on the top 10 passages.

A batched local push (Andersen, Chung and Lang 2006) in numpy was tried and lost at every
size (161 ms against 12 ms at 20k passages, 1.07 s against 0.16 s at 200k): the hub
entities spread the push frontier over most of the graph within a few rounds.

    python bench/bench_walk.py [--sizes 20000,200000,1000000] [--queries 20] [--hub-df 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
import scipy.sparse as sp

from paretorag.graphs.graph import Graph
from paretorag.kernels.pagerank import pagerank
from paretorag.retrieval.operators.walk import idf_bipartite, local_walk, transition


def synthetic(n_passages: int, mentions: int = 8, seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    n_entities = max(1, n_passages // 2)
    ents = (rng.zipf(1.1, size=n_passages * mentions) - 1) % n_entities
    rows = np.repeat(np.arange(n_passages), mentions)
    occ = sp.csr_matrix((np.ones(rows.size), (ents, rows)), shape=(n_entities, n_passages))
    occ.data[:] = 1.0
    return Graph(
        names=[str(i) for i in range(n_entities)],
        kinds=["entity"] * n_entities,
        adjacency=sp.csr_matrix((n_entities, n_entities)),
        node_chunks=occ,
    )


def _ms(x: list[float]) -> dict[str, float]:
    a = np.asarray(x) * 1000.0
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2)}


def run(n: int, queries: int, hub_df: int) -> dict[str, object]:
    g = synthetic(n)
    t0 = time.perf_counter()
    b = idf_bipartite(g)
    b_t = sp.csr_matrix(b.T)
    t = transition(sp.bmat([[None, b], [b.T, None]], format="csr"))
    build_s = time.perf_counter() - t0
    n_nodes = t[0].shape[0]
    rng = np.random.default_rng(1)
    exact_s: list[float] = []
    local_s: list[float] = []
    sizes: list[int] = []
    agree = 0
    for _ in range(queries):
        seeds = rng.choice(n, 5, replace=False)
        weights = np.array([0.2, 0.1, 0.05, 0.02, 0.01]) ** 2
        restart = np.zeros(n_nodes)
        restart[seeds] = weights
        t0 = time.perf_counter()
        exact = pagerank(None, damping=0.5, personalization=restart, transition_t=t)[:n]
        exact_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rows, mass = local_walk(b, b_t, dict(zip(seeds.tolist(), weights.tolist(), strict=True)), 0.5, hub_df)
        local_s.append(time.perf_counter() - t0)
        sizes.append(int(rows.size))
        top_local = rows[np.argsort(-mass, kind="stable")[:10]].tolist()
        agree += len(set(top_local) & set(np.argsort(-exact, kind="stable")[:10].tolist()))
    return {
        "passages": n,
        "nodes": n_nodes,
        "edges": int(t[0].nnz),
        "transition_build_s": round(build_s, 2),
        "exact": _ms(exact_s),
        "local": _ms(local_s),
        "local_passages_p50": int(np.median(sizes)),
        "top10_overlap": round(agree / (10 * queries), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,200000,1000000")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--hub-df", type=int, default=1000)
    args = ap.parse_args()
    rows = [run(int(n), args.queries, args.hub_df) for n in args.sizes.split(",")]
    print(
        json.dumps(
            {
                "results": rows,
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
