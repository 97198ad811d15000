"""Per-step retrieval time of ``hipporag2`` on an evaluation index. Prints one JSON object.

Usage (after ``paretorag eval --subset SUBSET --methods hipporag2 --cache CACHE`` built the index)::

    .venv/bin/python bench/bench_hipporag2.py --cache CACHE [--subset 2wikimultihopqa_dev164] [--n 30]

Each question's vector is computed before its steps are timed, so the figures are the
graph path's own work (fact scoring, seed entities, PPR over phrase + passage nodes).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from paretorag.eval.loaders import load_dataset
from paretorag.eval.runner import index_dir_for
from paretorag.rag import RAG
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.query import QueryOptions, State


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--subset", default="2wikimultihopqa_dev164")
    ap.add_argument("--cache", required=True, help="the eval --cache folder holding the index")
    ap.add_argument("--method", default="hipporag2")
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    ds = load_dataset(args.data, args.subset, limit=args.n)
    ix = index_dir_for(Path(args.cache), ds, None, "extractive")
    method = get_method(args.method)
    times: dict[str, list[float]] = {name: [] for name, _ in method.steps}
    with RAG.open(ix, methods=[args.method], create=False) as rag:
        view = rag.view
        questions = [q.prompt() for q in ds.questions]
        for q in questions[:3]:  # warm-up: models, graph and transition loaded
            method.retrieve(view, q, QueryOptions(k=10))
        for q in questions:
            state = State(q, QueryOptions(k=10))
            state.vector(view)
            for name, op in method.steps:
                t0 = time.perf_counter()
                op(view, state)
                times[name].append(time.perf_counter() - t0)
        graph = rag.stats()["structures"].get("fact_graph", {})
    out = {
        "subset": args.subset,
        "method": args.method,
        "questions": len(questions),
        "p50_ms": {n: round(1000 * float(np.median(v)), 3) for n, v in times.items()},
        "p95_ms": {n: round(1000 * float(np.percentile(v, 95)), 3) for n, v in times.items()},
        "fact_graph": {k: graph.get(k) for k in ("nodes", "facts", "synonym_edges", "seconds")},
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
