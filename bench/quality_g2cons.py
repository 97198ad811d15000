"""Retrieval quality of G2ConS against vanilla at the token budget beta; prints JSON.

G2ConS measures context recall (CR: a normalized gold answer occurs in the retrieved
context) with every method's context cut at beta = 12,000 tokens (papers/g2cons.txt
§4.1). This script does exactly that, plus Recall@5 (gold passages among the first 5
distinct documents, the harness's definition) and CR@5, for ``vanilla`` (dense ranking
cut at beta), ``g2cons-concept``, its Table 4 ablations A-D and the dual-path ``g2cons``.
Data sets, metrics and the index cache are those of ``paretorag eval``
(:mod:`paretorag.eval`), so an index built here is reused by the harness and back.

Usage::

    python bench/quality_g2cons.py --subsets musique_dev200,hotpotqa_dev200,2wikimultihopqa_dev164
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from paretorag.eval import metrics as M
from paretorag.eval.loaders import load_dataset
from paretorag.eval.runner import index_dir_for
from paretorag.rag import RAG

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "vanilla": ("vanilla", {}),
    "g2cons-concept": ("g2cons-concept", {}),
    "A (sentence co-occ.)": ("g2cons-concept", {"cooccurrence": "sentence"}),
    "B (no sim. filter)": ("g2cons-concept", {"similarity_filter": False}),
    "C (chunk-emb. vectors)": ("g2cons-concept", {"concept_vectors": "chunk"}),
    "D (naive rerank)": ("g2cons-concept", {"rerank": "naive"}),
    "g2cons (concept+vanilla@core)": ("g2cons", {}),
}


def evaluate(rag: RAG, ds: Any, variant: str, beta: int) -> dict[str, Any]:
    method, params = VARIANTS[variant]
    doc_ids = rag.view.chunks.doc_ids
    rows: list[dict[str, float]] = []
    seconds: list[float] = []
    for q in ds.questions:
        t0 = time.perf_counter()
        if method == "vanilla":  # dense ranking, cut at beta like the others
            r, items = rag.retrieve(q.prompt(), method=method, k=max(1, beta // 20))
            used = np.cumsum([it.n_tokens for it in items])
            items = items[: int(np.searchsorted(used, beta, side="right"))]
            ranked = [it.doc_id for it in items]
        else:
            r, items = rag.retrieve(q.prompt(), method=method, budget=beta, **params)
            ranked = [doc_ids[int(i)] for i in r.scored.ids]
        seconds.append(time.perf_counter() - t0)
        texts = [it.text for it in items]
        scores = {
            f"CR@{beta}": M.context_recall(texts, q.answers),
            "CR@5": M.context_recall(texts[:5], q.answers),
            "passages": float(len(items)),
            "tokens": float(sum(it.n_tokens for it in items)),
        }
        rec = M.recall_at_k(ranked, q.gold_keys, 5)
        if rec is not None:
            scores["R@5"] = rec["fraction"]
        rows.append(scores)
    keys = sorted({k for r in rows for k in r})
    out: dict[str, Any] = {k: round(float(M.mean(r.get(k) for r in rows) or 0.0), 4) for k in keys}
    out["latency"] = M.latency_summary(seconds)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--subsets", default="musique_dev200,hotpotqa_dev200,2wikimultihopqa_dev164")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names of VARIANTS")
    ap.add_argument("--limit", type=int, default=None, help="first N questions (corpus stays whole)")
    ap.add_argument("--budget", type=int, default=12000, help="beta, context tokens")
    ap.add_argument("--embedder", default=None, help="default MiniLM; hash[:DIM] for a smoke run")
    ap.add_argument("--cache", type=Path, default=Path("eval-out/.index-cache"), help="index cache (as eval)")
    args = ap.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    report: dict[str, Any] = {"budget": args.budget, "embedder": args.embedder or "default", "subsets": {}}
    for subset in [s.strip() for s in args.subsets.split(",") if s.strip()]:
        ds = load_dataset(args.data, subset, limit=args.limit)
        index_dir = index_dir_for(args.cache, ds, args.embedder, "extractive")
        rag = RAG.open(index_dir, methods=["vanilla", "g2cons-concept", "g2cons"], embedder=args.embedder)
        t0 = time.perf_counter()
        rag.index(ds.documents())
        index_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in ds.questions:  # query vectors are memoized: latencies below exclude embedding
            rag.view.embed_query(q.prompt())
        entry: dict[str, Any] = {
            "query_embedding_ms": round(1000 * (time.perf_counter() - t0) / max(1, len(ds.questions)), 2),
            "questions": len(ds.questions),
            "passages": len(ds.passages),
            "index_s": round(index_s, 2),
            "concept_graph": {
                k: rag.view.structure("concept_graph").meta[k] for k in ("n_concepts", "n_edges", "timings_s")
            },
            "variants": {},
        }
        for v in variants:
            entry["variants"][v] = evaluate(rag, ds, v, args.budget)
        rag.close()
        report["subsets"][subset] = entry
        print(json.dumps({subset: entry}), flush=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
