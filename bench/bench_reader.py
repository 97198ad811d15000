"""Per-question time of the offline reader on 5 passages, after retrieval, on one core.

Retrieves each question's top 5 passages once (``--method``, default ``entity-walk``)
from an eval index, then times ``Reader.read`` alone: ``cold`` with the reader's
sentence-parse cache emptied before every question (a new question over new passages),
``warm`` on a later pass with every passage's parse cached (the same passages again). Prints one JSON object::

    python bench/bench_reader.py --index eval-out/.index-cache/musique_dev200-... --subset musique_dev200
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from paretorag import RAG
from paretorag.eval.loaders import load_dataset
from paretorag.reader import Reader, passages_of
from paretorag.reader import spans as reader_spans
from paretorag.reader.core import title_lookup


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "mean_ms": round(float(ms.mean()), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="an eval index directory")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--method", default="entity-walk")
    ap.add_argument("--limit", type=int, default=100)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ds = load_dataset(args.data, args.subset, limit=args.limit)
    rag = RAG.open(Path(args.index), create=False)
    reader = Reader(rag.embedder)
    contexts = []
    for q in ds.questions:
        _, items = rag.retrieve(q.prompt(), args.method, k=5)
        contexts.append((q.prompt(), passages_of(items[:5])))
    lookup = title_lookup(rag.view)
    reader.read("Who is it?", contexts[0][1], lookup)  # load spaCy and the model outside the timing
    cold, warm = [], []
    kinds: dict[str, int] = {}
    for question, passages in contexts:
        reader_spans._CACHE.clear()
        t0 = time.perf_counter()
        result = reader.read(question, passages, lookup)
        cold.append(time.perf_counter() - t0)
        kinds[result.kind] = kinds.get(result.kind, 0) + 1
    for question, passages in contexts:  # fill the parse cache with every question's passages
        reader.read(question, passages, lookup)
    for question, passages in contexts:
        t0 = time.perf_counter()
        reader.read(question, passages, lookup)
        warm.append(time.perf_counter() - t0)
    out = {
        "subset": args.subset,
        "method": args.method,
        "questions": len(contexts),
        "passages": 5,
        "cold": _summary(cold),
        "warm": _summary(warm),
        "kinds": kinds,
        "threads": os.environ.get("OMP_NUM_THREADS"),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
