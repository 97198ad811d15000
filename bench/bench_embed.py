"""Embedding throughput of MiniLM: torch (sentence-transformers) against ONNX Runtime fp32
and int8, on shared corpus passages, in one run.

Each backend embeds the same passages (``title\\ntext``, as the index embeds chunks) in
``--rounds`` rounds, the backends alternating so that a busy machine slows each alike;
the best round counts. Also: the CPU time per passage (all threads: how much work, not
how it is spread), each backend's smallest and mean cosine to the torch vectors, and the
p50 of embedding one question (the query path). Prints one JSON object.
Usage::

    .venv/bin/python bench/bench_embed.py [--passages 512] [--rounds 3] [--subset musique] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from paretorag.providers.embedders import SentenceTransformerEmbedder
from paretorag.providers.onnx_embedder import THREADS_ENV, OnnxEmbedder, session_threads

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {
    "musique": ("musique/musique_dev200_corpus.json", "musique/musique_dev200.json"),
    "2wiki": (
        "2wikimultihopqa/2wikimultihopqa_dev164_corpus.json",
        "2wikimultihopqa/2wikimultihopqa_dev164.json",
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--subset", choices=sorted(CORPORA), default="musique")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads of every backend (default: torch's and the machine's)",
    )
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        os.environ[THREADS_ENV] = str(args.threads)
    cfile, qfile = CORPORA[args.subset]
    rows = json.loads((DATA / cfile).read_text())[: args.passages]
    texts = [f"{r['title']}\n{r['text']}" for r in rows]
    questions = [q["question"] for q in json.loads((DATA / qfile).read_text())][: args.queries]

    embedders: dict[str, Any] = {
        "torch": SentenceTransformerEmbedder(),
        "onnx_fp32": OnnxEmbedder(variant="fp32"),
        "onnx_int8": OnnxEmbedder(variant="int8"),
    }
    for emb in embedders.values():
        emb.load()
        emb.embed(texts[:8])  # first passes (allocations, kernels) outside the timing
    n_tokens = sum(embedders["torch"].tokenizer.count(texts)) + 2 * len(texts)

    best: dict[str, float] = {name: float("inf") for name in embedders}
    cpu: dict[str, float] = {name: float("inf") for name in embedders}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, emb in embedders.items():
            c0, t0 = time.process_time(), time.perf_counter()
            vectors[name] = emb.embed(texts)
            best[name] = min(best[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)  # CPU seconds of all threads

    query_ms: dict[str, float] = {}
    for name, emb in embedders.items():
        ms = []
        for q in questions:
            t0 = time.perf_counter()
            emb.embed([q])
            ms.append((time.perf_counter() - t0) * 1000)
        query_ms[name] = round(float(np.percentile(ms, 50)), 2)

    ref = vectors["torch"]
    out: dict[str, Any] = {
        "benchmark": f"MiniLM embedding throughput, {args.subset} corpus passages",
        "passages": len(texts),
        "word_pieces": n_tokens,
        "rounds": args.rounds,
        "cpus": len(os.sched_getaffinity(0)),
        "onnx_threads": session_threads(),
        "torch_threads": args.threads or "default",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "passages_per_s": {n: round(len(texts) / s, 1) for n, s in best.items()},
        "speedup_vs_torch": {n: round(best["torch"] / s, 2) for n, s in best.items()},
        "cpu_ms_per_passage": {n: round(1000 * c / len(texts), 2) for n, c in cpu.items()},
        "cosine_to_torch": {
            n: {"min": round(float(c.min()), 6), "mean": round(float(c.mean()), 6)}
            for n, c in ((n, np.sum(v * ref, axis=1)) for n, v in vectors.items())
        },
        "one_question_p50_ms": query_ms,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
