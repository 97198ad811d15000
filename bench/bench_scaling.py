"""Index time and peak RSS at 1x, 2x, 4x, 8x of the 2WikiMultihopQA dev corpus, and the growth exponent.

1x is ``2wikimultihopqa_dev164_corpus.json`` (1,028 passages). Larger sizes add distinct
passages (deduplicated by text, never copies) taken round-robin from the other passage
corpora of ../shared/data, so each size holds the smaller ones. Each size is indexed
for ``vanilla`` (chunking + MiniLM embedding + faiss) in a fresh index, then each
structure is built over those chunks in its own process (its time and memory alone;
spaCy, tokenizing and sentence embedding start from empty caches).

The growth exponent is the least-squares slope of log(seconds) on log(passages) (1.0 is
linear), for wall time and for CPU time (user + system of the stage's process and the
processes it waited for), which other jobs on a shared machine hardly move. Prints one JSON line per size as it finishes, then a summary JSON object::

    nice -n 10 .venv/bin/python bench/bench_scaling.py [--sizes 1,2,4,8] \
        [--structures entity_graph,bm25,concept_graph,tree] [--set tree.scope=auto] \
        [--work DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from scale_util import PASSAGE_CORPORA, distinct, passages, run_child


def corpus(multiple: int) -> list[dict[str, str]]:
    """``multiple`` x the 2Wiki dev corpus in distinct passages (see the module docstring)."""
    seen: set[str] = set()
    base = distinct(passages(PASSAGE_CORPORA[0]), seen)
    want = multiple * len(base)
    others = [distinct(passages(name), seen) for name in PASSAGE_CORPORA[1:]]
    out = list(base)
    i = 0
    while len(out) < want and any(i < len(o) for o in others):
        for o in others:
            if i < len(o) and len(out) < want:
                out.append(o[i])
        i += 1
    if len(out) < want:
        raise SystemExit(f"only {len(out)} distinct passages for {multiple}x ({want})")
    return out


def exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) on log(x)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return round(sum((p[0] - mx) * (p[1] - my) for p in pts) / den, 3) if den else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,2,4,8")
    ap.add_argument("--structures", default="entity_graph,bm25")
    ap.add_argument("--work", type=Path, default=None, help="folder for the indexes (default: temporary)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="STRUCTURE.NAME=VALUE",
        help="builder setting (JSON value or string), e.g. --set tree.scope=auto",
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="keep the vanilla indexes already in --work (their vanilla row is then not measured)",
    )
    args = ap.parse_args()
    settings: dict[str, dict[str, Any]] = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        name, _, field = key.partition(".")
        if not (eq and name and field):
            raise SystemExit(f"--set {item!r}: expected STRUCTURE.NAME=VALUE, e.g. tree.scope=auto")
        try:
            settings.setdefault(name, {})[field] = json.loads(value)
        except json.JSONDecodeError:
            settings.setdefault(name, {})[field] = value
    sizes = [int(s) for s in args.sizes.split(",")]
    structures = [s for s in args.structures.split(",") if s]
    work = args.work or Path(tempfile.mkdtemp(prefix="paretorag-scaling-"))
    rows: list[dict[str, Any]] = []
    for m in sizes:
        records = corpus(m)
        path = work / f"corpus-{m}x.json"
        path.write_text(json.dumps(records), encoding="utf-8")
        ix = work / f"index-{m}x"
        row: dict[str, Any] = {"multiple": m, "passages": len(records), "loadavg_before": os.getloadavg()}
        if not (args.reuse and (ix / "manifest.json").exists()):
            row["vanilla"] = run_child({"index": str(ix), "paths": [str(path)]})
        for s in structures:
            row[s] = run_child({"index": str(ix), "structure": s, "settings": settings.get(s, {})})
        print(json.dumps(row), flush=True)
        rows.append(row)
    n = [float(r["passages"]) for r in rows]
    summary: dict[str, Any] = {"sizes": sizes, "passages": n}
    for stage in [s for s in ["vanilla", *structures] if all(s in r for r in rows)]:
        secs = [float(r[stage]["wall_s"]) for r in rows]
        cpu = [float(r[stage]["cpu_s"]) for r in rows]
        key = "index_s" if stage == "vanilla" else "build_s"
        inner = [float(r[stage]["result"][key]) for r in rows]
        rss = [max(v[0] for v in r[stage]["peak_rss_mib"].values()) for r in rows]
        summary[stage] = {
            "wall_s": secs,
            f"{key}": inner,
            "cpu_s": cpu,
            "cpu_exponent": exponent(n, cpu),
            "max_process_peak_rss_mib": rss,
            "time_exponent": exponent(n, inner),
            "rss_exponent": exponent(n, rss),
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
