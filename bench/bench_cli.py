"""Start-up and warm latency of the query path: torch against ONNX Runtime, in one run.

Prints one JSON object:

- ``cli_s``: wall time of ``paretorag --help``, ``paretorag query`` (answered by the
  offline reader) and ``paretorag query --context-only`` on the demo index (this
  project's README.md and docs/, method ``fusion``, as ``make demo`` builds it, asked with
  the recommended method as ``make demo`` asks), each in a fresh process: median and best of ``--repeats``, the two backends
  alternating. ``torch`` is ``PARETORAG_EMBEDDER_BACKEND=torch`` (the path before the
  ONNX embedder), ``onnx`` the default.
- ``warm_ms``: retrieval latency p50/p95 of vanilla and entity-walk on musique_dev200
  (2,597 passages, 160 questions) in one warm process per backend, every question's
  query embedding included (the query-vector memo is cleared before each question).

The indexes are built on the first run into ``--cache`` and reused. Usage::

    .venv/bin/python bench/bench_cli.py [--repeats 5] [--questions 160] [--cache .bench-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from paretorag import RAG
from paretorag.eval.loaders import load_dataset

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
QUESTION = "What happens when indexing is killed halfway?"
BACKENDS = ("torch", "onnx")


def demo_index(cache: Path) -> Path:
    ix = cache / "demo-fusion"
    if not (ix / "manifest.json").exists():
        with RAG.open(ix, methods=["fusion"]) as rag:
            rag.index([ROOT / "README.md", ROOT / "docs"])
    return ix


def musique_index(cache: Path) -> tuple[Path, list[str]]:
    ds = load_dataset(DATA, "musique_dev200")
    ix = cache / "musique_dev200-index"
    with RAG.open(ix, methods=["vanilla", "entity-walk"]) as rag:
        rag.index(ds.documents())  # nothing to do once built
    return ix, [q.text for q in ds.questions]


def cli_times(ix: Path, repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    cli = [sys.executable, "-m", "paretorag.cli"]
    calls = {
        "help": ["--help"],
        "query": ["query", QUESTION, "--index", str(ix), "-k", "3"],  # the recommended method
        "query_context_only": ["query", QUESTION, "--index", str(ix), "--context-only"],
    }
    times: dict[str, dict[str, list[float]]] = {b: {c: [] for c in calls} for b in BACKENDS}
    for _ in range(repeats):
        for name, args in calls.items():
            for backend in BACKENDS:
                env = {
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join(sys.path),
                    "PARETORAG_EMBEDDER_BACKEND": backend,
                }
                t0 = time.perf_counter()
                subprocess.run([*cli, *args], env=env, check=True, capture_output=True)
                times[backend][name].append(time.perf_counter() - t0)
    return {
        b: {c: {"median": round(statistics.median(v), 3), "best": round(min(v), 3)} for c, v in by.items()}
        for b, by in times.items()
    }


def embedder_for(backend: str) -> object:
    from paretorag.providers.embedders import SentenceTransformerEmbedder
    from paretorag.providers.onnx_embedder import OnnxEmbedder

    emb = SentenceTransformerEmbedder() if backend == "torch" else OnnxEmbedder()
    emb.load()
    return emb


def warm(ix: Path, questions: list[str], backend: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with RAG.open(ix, create=False, embedder=embedder_for(backend)) as rag:  # type: ignore[arg-type]
        for q in questions[:5]:  # structures and the first passes load here
            rag.query(q, method="entity-walk", k=5, context_only=True)
        for method in ("vanilla", "entity-walk"):
            ms = []
            for q in questions:
                rag.view.forget_queries()
                ms.append(rag.query(q, method=method, k=5, context_only=True).timings["retrieval"] * 1000)
            out[method] = {
                "p50": round(float(np.percentile(ms, 50)), 2),
                "p95": round(float(np.percentile(ms, 95)), 2),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--questions", type=int, default=160)
    ap.add_argument("--cache", type=Path, default=ROOT / ".bench-cache")
    args = ap.parse_args()
    demo = demo_index(args.cache)
    ix, questions = musique_index(args.cache)
    questions = questions[: args.questions]
    out = {
        "benchmark": "CLI start-up on the demo index; warm retrieval on musique_dev200 (query embedding included)",
        "cpus": len(os.sched_getaffinity(0)),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cli_s": cli_times(demo, args.repeats),
        "warm_ms": {b: warm(ix, questions, b) for b in BACKENDS},
        "questions": len(questions),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
