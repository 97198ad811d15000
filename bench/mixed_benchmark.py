"""EA-GraphRAG's mixed benchmark from per-subset ``paretorag eval`` runs (JSON and Markdown).

The paper pools simple (NQ, PopQA) and complex (HotpotQA, 2Wiki) questions, each with its
own corpus (§4.2). ``paretorag eval`` runs one subset (one corpus) at a time, so run it per
subset with the same methods and pool the per-question records here:

    paretorag eval --data ../shared/data --subset popqa --limit 400 --k 3,5 --retrieval-only \
        --methods vanilla,entity-walk,hipporag2,ea-graphrag,ea-graphrag-no-fusion \
        --out .eval-out/mixed/popqa
    (the same for musique_dev200, hotpotqa_dev200, 2wikimultihopqa_dev164, without --limit)
    python bench/mixed_benchmark.py .eval-out/mixed

Per method it reports, per subset and pooled ("mix"): Recall@k as the mean fraction of
gold passages (HippoRAG's), as "any gold" (EA-GraphRAG's Table 3 definition) and as "all
gold"; the mean and p50 retrieval latency; and the share of questions on each route
(the retrieval ``mode``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

ORDER = ("popqa", "musique_dev200", "hotpotqa_dev200", "2wikimultihopqa_dev164")


def _mean(values: list[float]) -> float | None:
    return round(100.0 * float(np.mean(values)), 1) if values else None


def summarize(records: list[dict[str, Any]], ks: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(records)}
    for k in ks:
        for name, key in (("R", "recall"), ("Rany", "recall_any"), ("Rall", "recall_all")):
            vals = [r["metrics"][f"{key}@{k}"] for r in records if r["metrics"].get(f"{key}@{k}") is not None]
            out[f"{name}@{k}"] = _mean(vals)
    lat = np.asarray([r["timings_ms"]["retrieval"] for r in records], dtype=np.float64)
    out["latency_mean_ms"] = round(float(lat.mean()), 1) if lat.size else None
    out["latency_p50_ms"] = round(float(np.percentile(lat, 50)), 1) if lat.size else None
    modes: dict[str, int] = {}
    for r in records:
        modes[r["mode"]] = modes.get(r["mode"], 0) + 1
    out["routes"] = {m: round(100.0 * n / max(len(records), 1), 1) for m, n in sorted(modes.items())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", help="folder with one sub-folder (results.json) per subset")
    ap.add_argument("--json", action="store_true", help="print JSON only")
    args = ap.parse_args()
    root = Path(args.folder)
    runs = {p.parent.name: json.loads(p.read_text()) for p in sorted(root.glob("*/results.json"))}
    subsets = [s for s in ORDER if s in runs] + [s for s in runs if s not in ORDER]
    methods = [
        m for m in runs[subsets[0]]["config"]["methods"] if all(m in runs[s]["questions"] for s in subsets)
    ]
    ks = runs[subsets[0]]["config"]["ks"]
    table: dict[str, dict[str, Any]] = {}
    for m in methods:
        table[m] = {s: summarize(runs[s]["questions"][m], ks) for s in subsets}
        table[m]["mix"] = summarize([r for s in subsets for r in runs[s]["questions"][m]], ks)
    if args.json:
        print(json.dumps(table, indent=1))
        return
    for cols, title in ((["R", "Rany"], "Recall@k (mean fraction / any gold)"), (["Rall"], "all gold")):
        print(f"\n{title}\n")
        head = [f"{s} {c}@{k}" for s in [*subsets, "mix"] for c in cols for k in ks]
        print("| method | " + " | ".join(head) + " |")
        print("|---" * (len(head) + 1) + "|")
        for m in methods:
            row = [table[m][s][f"{c}@{k}"] for s in [*subsets, "mix"] for c in cols for k in ks]
            print(f"| `{m}` | " + " | ".join("-" if v is None else f"{v:.1f}" for v in row) + " |")
    print("\n| method | mix questions | mean retrieval ms | p50 ms | routes (% of questions) |")
    print("|---|---|---|---|---|")
    for m in methods:
        mix = table[m]["mix"]
        routes = ", ".join(f"{k} {v}" for k, v in mix["routes"].items())
        print(
            f"| `{m}` | {mix['questions']} | {mix['latency_mean_ms']} | {mix['latency_p50_ms']} | {routes} |"
        )
    print("\n" + json.dumps({m: table[m]["mix"] for m in methods}))


if __name__ == "__main__":
    main()
