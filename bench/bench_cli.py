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

With ``--before SRC`` (the ``src`` folder of another checkout, e.g. one made by
``git worktree add /tmp/cq-base HEAD``) it prints instead the cold wall (a fresh process
each, p50 and best of ``--repeats`` rounds) of ``paretorag --help`` and of
``paretorag query`` on the demo index and on a long-document index (the first two
QuALITY stories of ``../shared/data/quality`` and ``../shared/papers``, 82 chunks,
method ``fusion``), each question asked by both checkouts, ``before`` (SRC first on
PYTHONPATH) and ``after`` (this one) alternating::

    .venv/bin/python bench/bench_cli.py --before /tmp/cq-base/src [--repeats 5]
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
DEMO_QUESTIONS = (
    QUESTION,
    "Why does the index survive a crash?",
    "How do I add documents to an existing index?",
    "Which method is recommended?",
)
LONG_QUESTIONS = (
    "Why did the Tr'en leave Korvin's door unlocked and a weapon nearby?",
    "What did the Ruler want to know from Korvin?",
    "Why did people say the story about Clinton hiding under a blanket was untrue?",
    "How does G2ConS select core chunks?",
    "What does the router in EA-GraphRAG predict?",
)
BACKENDS = ("torch", "onnx")


def demo_index(cache: Path) -> Path:
    ix = cache / "demo-fusion"
    if not (ix / "manifest.json").exists():
        with RAG.open(ix, methods=["fusion"]) as rag:
            rag.index([ROOT / "README.md", ROOT / "docs"])
    return ix


def long_doc_index(cache: Path) -> Path:
    """Two QuALITY stories as text files and the papers, indexed for ``fusion`` (82 chunks)."""
    ix = cache / "long-doc-fusion"
    if not (ix / "manifest.json").exists():
        stories = cache / "quality-stories"
        stories.mkdir(parents=True, exist_ok=True)
        lines = (DATA / "quality" / "quality.jsonl").read_text().splitlines()[:2]
        files = []
        for i, line in enumerate(lines, start=1):
            f = stories / f"story{i}.txt"
            f.write_text(json.loads(line)["input"])
            files.append(f)
        with RAG.open(ix, methods=["fusion"]) as rag:
            rag.index([*files, ROOT.parent / "shared" / "papers"])
    return ix


def cold_ab(before: Path, demo: Path, long_doc: Path, repeats: int) -> dict[str, object]:
    """Cold wall of ``--help`` and ``query`` per checkout, ``before`` and ``after`` alternating."""
    after = ROOT / "src"
    calls: dict[str, list[list[str]]] = {
        "help": [["--help"]],
        "query_demo": [["query", q, "--index", str(demo), "-k", "3"] for q in DEMO_QUESTIONS],
        "query_long_doc": [["query", q, "--index", str(long_doc)] for q in LONG_QUESTIONS],
    }
    sides = {"before": before, "after": after}
    times: dict[str, dict[str, list[float]]] = {c: {s: [] for s in sides} for c in calls}
    answers: dict[str, dict[str, list[str]]] = {c: {s: [] for s in sides} for c in calls}
    for r in range(repeats):
        for name, arg_lists in calls.items():
            for args in arg_lists:
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for side in order:
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(sides[side]), *sys.path])}
                    t0 = time.perf_counter()
                    out = subprocess.run(
                        [sys.executable, "-m", "paretorag.cli", *args],
                        env=env,
                        check=True,
                        capture_output=True,
                    )
                    times[name][side].append(time.perf_counter() - t0)
                    if r == 0 and name != "help":
                        answers[name][side].append(out.stdout.decode().rsplit("\n\n", 1)[0])
    summary: dict[str, object] = {
        name: {
            side: {"p50": round(statistics.median(v), 3), "best": round(min(v), 3), "runs": len(v)}
            for side, v in by.items()
        }
        for name, by in times.items()
    }
    summary["same_answers"] = {
        name: by["before"] == by["after"] for name, by in answers.items() if name != "help"
    }
    return summary


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
    ap.add_argument("--before", type=Path, help="src folder of the checkout to compare against")
    args = ap.parse_args()
    demo = demo_index(args.cache)
    if args.before is not None:
        result = {
            "benchmark": "cold CLI wall, before/after alternating, a fresh process per call",
            "before": str(args.before),
            "cpus": len(os.sched_getaffinity(0)),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "repeats": args.repeats,
            "cold_s": cold_ab(args.before, demo, long_doc_index(args.cache), args.repeats),
        }
        print(json.dumps(result, indent=2))
        return
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
