"""Routing overhead of EA-GraphRAG's decision module: spaCy parse + features + MLP per question (JSON).

Target (EA-GraphRAG issue): featurize + MLP <= 2 ms p50 per question on one core. The
questions are the mixed benchmark's (PopQA, MuSiQue, HotpotQA and 2Wiki dev questions
from ../shared/data), scored one at a time as a query would be, with every BLAS and
torch pool limited to one thread. Reports p50 / p95 of each part separately so that the
parse's share is visible.

    python bench/bench_router.py [--router FOLDER] [--per-subset 50]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402

from paretorag.eval.loaders import load_dataset  # noqa: E402
from paretorag.retrieval.router.features import Featurizer, features  # noqa: E402
from paretorag.retrieval.router.model import load_router  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SUBSETS = ("popqa", "musique_dev200", "hotpotqa_dev200", "2wikimultihopqa_dev164")


def _ms(values: list[float]) -> dict[str, float]:
    a = np.asarray(values) * 1000.0
    return {"p50_ms": round(float(np.percentile(a, 50)), 3), "p95_ms": round(float(np.percentile(a, 95)), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--router", default=None, help="router folder (default: the shipped one)")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--per-subset", type=int, default=50)
    args = ap.parse_args()
    questions = [q.text for s in SUBSETS for q in load_dataset(args.data, s, limit=args.per_subset).questions]
    router = load_router(args.router)
    fz = Featurizer()
    for q in questions[:10]:  # warm-up: model load, first-call allocations
        router.score(q)
    parse, feat, mlp, total = [], [], [], []
    for q in questions:
        t0 = time.perf_counter()
        doc = fz.parse(q)
        t1 = time.perf_counter()
        raw = features(doc)
        t2 = time.perf_counter()
        router.score_features(raw)
        t3 = time.perf_counter()
        parse.append(t1 - t0)
        feat.append(t2 - t1)
        mlp.append(t3 - t2)
        total.append(t3 - t0)
    print(
        json.dumps(
            {
                "questions": len(questions),
                "router": str(args.router or "shipped"),
                "spacy_parse": _ms(parse),
                "features": _ms(feat),
                "mlp_numpy": _ms(mlp),
                "featurize_plus_mlp_without_parse": _ms([f + m for f, m in zip(feat, mlp, strict=True)]),
                "total_per_question": _ms(total),
                "target_p50_ms": 2.0,
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
