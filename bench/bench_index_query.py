"""Indexing throughput and vanilla query latency on the 2WikiMultihopQA corpus (6,119 passages).

Prints one JSON object. Usage::

    .venv/bin/python bench/bench_index_query.py [--limit N] [--queries 200] [--embedder minilm]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paretorag import RAG
from paretorag.ingest.files import make_document

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "2wikimultihopqa"


def startup_s(root: Path, question: str, repeats: int = 3) -> dict[str, float]:
    """Best-of-``repeats`` wall time of CLI calls in a fresh interpreter (start-up included)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli = [sys.executable, "-m", "paretorag.cli"]
    calls = {
        "help": ["--help"],
        "inspect": ["inspect", "--index", str(root)],
        "query_context_only": ["query", question, "--index", str(root), "--context-only"],
    }
    out: dict[str, float] = {}
    for name, args in calls.items():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([*cli, *args], env=env, check=True, capture_output=True)
            best = min(best, time.perf_counter() - t0)
        out[name] = round(best, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None, help="first N passages only")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--keep", type=Path, default=None, help="index directory to keep (default: temporary)")
    args = ap.parse_args()

    corpus = json.loads((DATA / "2wikimultihopqa_corpus.json").read_text())[: args.limit]
    docs = [make_document(p["title"], p["text"], f"2wiki#{i}", presplit=True) for i, p in enumerate(corpus)]
    questions = [q["question"] for q in json.loads((DATA / "2wikimultihopqa_questions.json").read_text())]
    questions = questions[: args.queries]

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-ix-"))
    if root.exists() and args.keep is None:
        shutil.rmtree(root)
    t0 = time.perf_counter()
    rag = RAG.open(root, embedder=args.embedder, methods=["vanilla"])
    load = getattr(rag.embedder, "load", None)
    if callable(load):
        load()  # the model loads lazily; time it here
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    report = rag.index(docs)
    index_s = time.perf_counter() - t1
    n_chunks = rag.manifest.counts["chunks"]
    n_tokens = rag.manifest.counts["tokens"]
    stages = rag.manifest.timings

    rag.query(questions[0], context_only=True)  # warm-up (view load, first forward pass)
    total, search = [], []
    for q in questions:
        a = rag.query(q, method="vanilla", k=5, context_only=True)
        total.append(a.timings["retrieval"] * 1000)
        vec = rag.view.embed_query(q)
        s0 = time.perf_counter()
        rag.view.dense_search(vec, 5)
        search.append((time.perf_counter() - s0) * 1000)

    def pct(xs: list[float]) -> dict[str, float]:
        return {"p50": round(float(np.percentile(xs, 50)), 3), "p95": round(float(np.percentile(xs, 95)), 3)}

    out = {
        "benchmark": "index+query vanilla, 2wikimultihopqa corpus",
        "embedder": rag.embedder.name,
        "passages": len(docs),
        "chunks": n_chunks,
        "tokens": n_tokens,
        "added": report.added,
        "model_load_s": round(load_s, 2),
        "index_s": round(index_s, 2),
        "chunks_per_s": round(n_chunks / index_s, 1),
        "tokens_per_s": round(n_tokens / index_s, 1),
        "stages_s": stages,
        "stage_chunks_per_s": {k: round(n_chunks / v, 1) for k, v in stages.items() if v > 0},
        "stage_tokens_per_s": {k: round(n_tokens / v, 1) for k, v in stages.items() if v > 0},
        "queries": len(questions),
        "query_latency_ms_with_embedding": pct(total),
        "dense_search_ms": pct(search),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "cli_startup_s": startup_s(root, questions[0]),
    }
    print(json.dumps(out, indent=2))
    rag.close()
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
