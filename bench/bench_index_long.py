"""Indexing throughput on long documents, old code against new, and the embed stage against
the embedder's raw speed on the same windows (issue 38, item 3).

For each code checkout given (``--code NAME=SRC_DIR``), ``python -m paretorag.cli index
DOCS --methods METHODS`` builds a fresh index in a fresh process (checkouts alternating over
``--repeats``); from each run: wall seconds, chunks per second, and the manifest's stage
seconds (``embed``: the chunk vectors; ``build.*``: each structure, run in parallel threads).
Then, in this process, the embedder's raw throughput on the very windows those chunks are
embedded in (the same model and session settings, batches of 64 windows sorted by length,
best of ``--rounds``), so that the index's embed stage can be compared with it. Prints one
JSON object::

    python bench/bench_index_long.py --docs CORPUS_DIR --code base=/tmp/w-base/src --code new=src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _index(src: str, docs: str, ix: Path, methods: str) -> dict[str, Any]:
    shutil.rmtree(ix, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "paretorag.cli", "index", docs, "--index", str(ix), "--methods", methods],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    m = json.loads((ix / "manifest.json").read_text())
    chunks = int(m["counts"]["chunks"])
    return {
        "wall_s": round(wall, 2),
        "chunks": chunks,
        "chunks_per_s": round(chunks / wall, 3),
        "stages_s": {k: round(float(v), 2) for k, v in sorted(m["timings"].items())},
    }


def _raw_embed(ix: Path, rounds: int) -> dict[str, Any]:
    """Windows per second of the index's embedder over its own chunks' windows."""
    from paretorag import RAG

    titles = bool(json.loads((ix / "manifest.json").read_text())["config"].get("embed_titles", True))
    with RAG.open(ix, create=False) as rag:
        texts = rag.store.chunk_table().embedded_texts(titles)  # what the index embeds
        embedder = rag.embedder
    windows = [w for t in texts for w in (embedder.windows(t) if len(t) > embedder.max_tokens else [t])]
    embedder.load()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for i in range(0, len(windows), 64):
            embedder._encode(windows[i : i + 64])
        best = min(best, time.perf_counter() - t0)
    return {
        "texts": len(texts),
        "windows": len(windows),
        "best_s": round(best, 2),
        "windows_per_s": round(len(windows) / best, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", required=True, help="folder of files to index")
    ap.add_argument("--methods", default="fusion")
    ap.add_argument("--code", action="append", required=True, help="NAME=SRC_DIR (repeatable)")
    ap.add_argument("--work", default="/tmp/bench-index-long")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the raw embedding pass")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.repeats):
        for spec in args.code:
            name, src = spec.split("=", 1)
            runs.setdefault(name, []).append(_index(src, args.docs, work / f"ix-{name}", args.methods))
    summary = {
        name: {
            "wall_s_p50": round(statistics.median(r["wall_s"] for r in rs), 2),
            "chunks_per_s_p50": round(statistics.median(r["chunks_per_s"] for r in rs), 3),
            "embed_s_p50": round(statistics.median(r["stages_s"].get("embed", 0.0) for r in rs), 2),
        }
        for name, rs in runs.items()
    }
    last = args.code[-1].split("=", 1)[0]
    raw = _raw_embed(work / f"ix-{last}", args.rounds)
    out = {
        "docs": args.docs,
        "methods": args.methods,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "summary": summary,
        "raw_embed": raw,
        "embed_stage_over_raw": round(summary[last]["embed_s_p50"] / raw["best_s"], 2),
        "runs": runs,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
