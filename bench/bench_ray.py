"""Single-process vs local Ray indexing of the combined passage corpora of ../shared/data.

The corpus is every passage corpus of ../shared/data together (2WikiMultihopQA dev and
HippoRAG corpora, HotpotQA dev and train, MuSiQue dev and train, PopQA), deduplicated by
text, with at most ``--per-corpus`` passages from each (all of them: 15,403 passages,
more than this 2-core machine embeds in 20 minutes). Each side runs two stages in fresh
processes: ``index`` for vanilla (chunking + MiniLM embedding + faiss) and the spaCy
``entity_graph`` over those chunks; ``--ray N`` runs both on a local cluster of N CPUs
started by the stage. Reported per stage: wall time, the time inside ``index``/``build``,
and the peak RSS of every process (driver, Ray workers, Ray's own processes, spaCy
workers). The two indexes are compared at the end (chunk ids, vectors, entity graph
sizes). Prints one JSON object::

    nice -n 10 .venv/bin/python bench/bench_ray.py [--per-corpus 300] [--ray 2]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from scale_util import PASSAGE_CORPORA, distinct, passages, run_child


def combined(per_corpus: int | None) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Distinct passages of every corpus (at most ``per_corpus`` each) and the count per corpus."""
    seen: set[str] = set()
    out: list[dict[str, str]] = []
    counts: dict[str, int] = {}
    for name in PASSAGE_CORPORA:
        got = distinct(passages(name), seen)[:per_corpus]
        counts[name] = len(got)
        out.extend(got)
    return out, counts


def _vectors(ix: Path) -> tuple[list[str], np.ndarray]:
    manifest = json.loads((ix / "manifest.json").read_text())
    stem = manifest["vectors"]
    ids = (ix / "vectors" / f"{stem}.ids.txt").read_text().split("\n")
    return ids, np.load(ix / "vectors" / f"{stem}.npy")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-corpus", type=int, default=300, help="passages per corpus (0: all)")
    ap.add_argument("--ray", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="paretorag-ray-"))
    records, counts = combined(args.per_corpus or None)
    path = work / "combined.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    out: dict[str, Any] = {"passages": len(records), "per_corpus": counts, "cpus": os.cpu_count()}
    for side, ray in (("single", 0), ("ray", args.ray)):
        ix = work / f"index-{side}"
        out[side] = {
            "index": run_child({"index": str(ix), "paths": [str(path)], "ray": ray}),
            "entity_graph": run_child({"index": str(ix), "structure": "entity_graph", "ray": ray}),
        }
        print(json.dumps({side: out[side]}), flush=True)
    ids_a, vec_a = _vectors(work / "index-single")
    ids_b, vec_b = _vectors(work / "index-ray")
    stats = [out[s]["entity_graph"]["result"]["stats"] for s in ("single", "ray")]
    keys = ("entities", "edges", "mentions", "spacy_tokens")
    out["same_index"] = {
        "chunk_ids": ids_a == ids_b,
        "max_abs_vector_diff": float(np.abs(vec_a - vec_b).max()) if ids_a == ids_b else None,
        "entity_graph": all(stats[0][k] == stats[1][k] for k in keys),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
