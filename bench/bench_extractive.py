"""Per-answer time of the extractive backend, with no response or sentence-vector cache.

Retrieves each question's context once (vanilla, k = 5) from an eval index, then times
``ExtractiveLLM.complete`` alone on it. Run it with this checkout's ``src`` and with an
older one on ``PYTHONPATH`` to compare versions on the same contexts::

    python bench/bench_extractive.py --index .eval-cache/musique_dev200-... --subset musique_dev200 --limit 50
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from paretorag import RAG
from paretorag.answering.answer import answer_request
from paretorag.answering.context import pack
from paretorag.eval.loaders import load_dataset
from paretorag.providers.llm import ExtractiveLLM
from paretorag.types import Budget


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="an eval index directory (MiniLM)")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--subset", required=True)
    ap.add_argument("--limit", type=int, default=50)
    args = ap.parse_args()
    ds = load_dataset(args.data, args.subset, limit=args.limit)
    rag = RAG.open(Path(args.index), create=False)
    llm = ExtractiveLLM()
    bind = getattr(llm, "bind", None)
    if callable(bind):
        bind(rag.embedder, rag.tokenizer)  # the raw embedder: every sentence is embedded
    rag.embedder.embed(["warm up"])
    seconds = []
    for q in ds.questions:
        _, items = rag.retrieve(q.prompt(), "vanilla")
        ctx = pack(items, Budget(None), rag.tokenizer)
        req = answer_request(q.prompt(), ctx)
        t0 = time.perf_counter()
        llm.complete(req)
        seconds.append(time.perf_counter() - t0)
    ms = np.array(seconds) * 1000
    out = {
        "subset": args.subset,
        "questions": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "mean_ms": round(float(ms.mean()), 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
