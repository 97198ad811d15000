"""Approximate vector search (``paretorag index --ann``): recall@10 against exact search
and query latency on synthetic unit vectors (JSON on stdout).

Two sets of ``--n`` x ``--dim`` float32 vectors, L2-normalized: ``clustered`` (points
around 1,000 random centers, as much noise as signal: what sentence embeddings look like, many
near-duplicates) and ``normal`` (i.i.d. standard normal: no structure, the hardest case
for any approximate index). For each faiss kind the index is built as ``index`` builds
it (:func:`paretorag.storage.vectors.build_faiss`), then ``--queries`` held-out queries are
searched one at a time on one thread, as a query is served (:class:`VectorIndex`).

    python bench/bench_ann.py [--n 200000] [--dim 384] [--queries 500] [--kinds exact,hnsw,ivf]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from paretorag.storage.vectors import VectorIndex, _faiss, build_faiss, ivf_lists


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def dataset(kind: str, n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return _unit(rng.standard_normal((n, d), dtype=np.float32))
    centers = rng.standard_normal((1000, d), dtype=np.float32)
    return _unit(centers[rng.integers(0, 1000, n)] + rng.standard_normal((n, d), dtype=np.float32))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--kinds", default="exact,hnsw,ivf")
    ap.add_argument("--sets", default="clustered,normal")
    ap.add_argument("--threads", type=int, default=1, help="faiss OpenMP threads (1: as queries are served)")
    args = ap.parse_args()
    _faiss().omp_set_num_threads(args.threads)
    results = []
    for name in args.sets.split(","):
        x = dataset(name, args.n + args.queries, args.dim)
        base, queries = x[: args.n], x[args.n :]
        truth: list[set[int]] | None = None
        for kind in args.kinds.split(","):
            t0 = time.perf_counter()
            index = VectorIndex(base, build_faiss(base, kind))
            build_s = time.perf_counter() - t0
            times, found = [], []
            for q in queries:
                t1 = time.perf_counter()
                hits = index.search(q, args.k)
                times.append(time.perf_counter() - t1)
                found.append(set(hits.ids.tolist()))
            if truth is None:
                truth = (
                    found
                    if kind == "exact"
                    else [set(r.tolist()) for r in build_faiss(base, "exact").search(queries, args.k)[1]]
                )
            recall = float(np.mean([len(f & t) / args.k for f, t in zip(found, truth, strict=True)]))
            ms = np.asarray(times) * 1000
            row = {
                "set": name,
                "kind": kind,
                "n": args.n,
                "dim": args.dim,
                "build_s": round(build_s, 2),
                f"recall@{args.k}": round(recall, 4),
                "p50_ms": round(float(np.percentile(ms, 50)), 3),
                "p95_ms": round(float(np.percentile(ms, 95)), 3),
            }
            if kind == "ivf":
                row["nlist"] = ivf_lists(args.n)
            results.append(row)
            print(json.dumps(row), flush=True)
    print(json.dumps({"results": results}, indent=1))


if __name__ == "__main__":
    main()
