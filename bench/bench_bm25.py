"""BM25 index build time and query latency on a corpus from ../shared/data (JSON).

Builds the ``bm25`` structure the way the builder does (``title\\ntext`` per passage,
Snowball stemming, the bm25s English stopwords) from a cold process, so the stemmer's
word cache starts empty, then scores every question of the set: ``chunk.bm25``'s work
after the structure is loaded (tokenize + stem the question, sum its term columns, top-k).

    python bench/bench_bm25.py [--corpus 2wikimultihopqa/2wikimultihopqa_corpus.json]
        [--questions 2wikimultihopqa/2wikimultihopqa_dev164.json] [--k 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from paretorag.graphs.bm25 import BM25Index, build_bm25
from paretorag.kernels.rank import top_k

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wikimultihopqa/2wikimultihopqa_corpus.json")
    ap.add_argument("--questions", default="2wikimultihopqa/2wikimultihopqa_dev164.json")
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    records = json.loads((DATA / args.corpus).read_text(encoding="utf-8"))
    texts = [f"{r['title']}\n{r['text']}" if r["title"].strip() else r["text"] for r in records]
    questions = [q["question"] for q in json.loads((DATA / args.questions).read_text(encoding="utf-8"))]
    t0 = time.perf_counter()
    data = build_bm25(texts)
    build_s = time.perf_counter() - t0
    index = BM25Index(data)
    times = []
    for q in questions:
        t1 = time.perf_counter()
        scores = index.scores(q)
        top_k(np.where(scores > 0, scores, -np.inf), args.k)
        times.append((time.perf_counter() - t1) * 1000)
    print(
        json.dumps(
            {
                "passages": len(texts),
                "build_s": round(build_s, 3),
                **data.meta["stats"],
                **data.meta["summary"],
                "questions": len(questions),
                "query_p50_ms": round(float(np.percentile(times, 50)), 3),
                "query_p95_ms": round(float(np.percentile(times, 95)), 3),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
