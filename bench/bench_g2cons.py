"""Benchmark of the G2ConS concept graph (papers/g2cons.txt §3.2, §3.2.1); prints JSON.

1. Construction scaling: the ``concept_graph`` builder on the 2WikiMultihopQA corpus
   (6,119 passages) replicated 1x, 2x and 4x (copies get altered titles), each size in
   its own process: graph time (TF-IDF concepts + edges + PageRank), embedding time
   (sentences, Eq. 1) reported apart, resident memory before the build and the
   process's peak (``--trace-memory`` adds tracemalloc's peak from a second build). No
   LLM call. Sentence vectors are cached by text hash in ``WORKDIR/embed-cache`` (the
   index's own cache), so a replicated sentence is embedded once: later sizes and
   re-runs pay only for new texts (the altered titles).
2. Retrieval latency of ``g2cons-concept``, ``g2cons`` and ``vanilla`` through
   :meth:`paretorag.RAG.retrieve` on a 1x index: p50/p95 over the first ``--queries``
   questions, with the query embedding timed apart (it is the same for every method).

Usage::

    python bench/bench_g2cons.py                      # MiniLM (slow: ~150 sentences/s on 2 cores)
    python bench/bench_g2cons.py --embedder hash:384  # scaling study without a neural model
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "2wikimultihopqa"
CORPUS = DATA / "2wikimultihopqa_corpus.json"
QUESTIONS = DATA / "2wikimultihopqa_questions.json"


def passages(size: int) -> list[tuple[str, str]]:
    """The corpus ``size`` times; copy r > 0 has the title ``"<title> (copy r)"``."""
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return [
        (p["title"] if r == 0 else f"{p['title']} (copy {r})", p["text"]) for r in range(size) for p in data
    ]


class _Ctx:
    """The part of the Indexer's build context the concept graph uses."""

    def __init__(self, chunks: Any, embedder: Any) -> None:
        from paretorag.progress import NullProgress

        self.chunks = chunks
        self.embedder = embedder
        self.tokenizer = getattr(embedder.inner, "tokenizer", None)
        self.progress = NullProgress()
        self.workers = 1


def build_once(size: int, embedder_spec: str, workdir: Path, trace_memory: bool = False) -> dict[str, Any]:
    """Build the concept graph for one corpus size (run in a child process)."""
    from paretorag.graphs.concepts import ConceptGraph
    from paretorag.indexing.embed_cache import CachedEmbedder
    from paretorag.providers.embedder_spec import make_embedder
    from paretorag.storage.store import ChunkTable, Store
    from paretorag.types import Chunk

    inner = make_embedder(embedder_spec)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "embed-cache").mkdir(exist_ok=True)
    embedder = CachedEmbedder(inner, Store(workdir / "embed-cache"))
    pairs = passages(size)
    counts = inner.tokenizer.count([t for _, t in pairs])
    chunks = ChunkTable.from_chunks(
        [
            Chunk(f"p{i}#0", f"p{i}", 0, 0, len(text), text, n, title)
            for i, ((title, text), n) in enumerate(zip(pairs, counts, strict=True))
        ]
    )
    import sklearn.feature_extraction.text  # noqa: F401  (import time is not build time)

    rss0 = _rss_mb()
    t0 = time.perf_counter()
    data = ConceptGraph().build(_Ctx(chunks, embedder))
    total = time.perf_counter() - t0
    t = data.meta["timings_s"]
    traced: dict[str, float] = {}
    if trace_memory:  # a second, slower build: tracemalloc slows Python allocations several-fold
        tracemalloc.start()
        ConceptGraph().build(_Ctx(chunks, embedder))
        traced["peak_traced_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return {
        "size": size,
        "passages": len(chunks),
        "tokens": int(sum(counts)),
        "concepts": data.meta["n_concepts"],
        "edges": data.meta["n_edges"],
        "sentences": data.meta["n_sentences"],
        "embedded_sentences": data.meta["n_embedded_sentences"],
        "core_chunks": data.meta["core"]["n_core"],
        "graph_s": round(t["concepts_s"] + t["edges_s"] + t["pagerank_s"], 3),
        "graph_steps_s": {k: t[k] for k in ("concepts_s", "edges_s", "pagerank_s")},
        "embed_s": round(t["embed_s"], 3),
        "total_s": round(total, 3),
        "rss_before_mb": round(rss0, 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **traced,
    }


def _rss_mb() -> float:
    """Current resident set size (Linux ``/proc``), in MiB."""
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


def latency(embedder_spec: str, workdir: Path, n_questions: int) -> dict[str, Any]:
    """p50/p95 retrieval latency (ms) on a 1x index through the RAG facade."""
    from paretorag.ingest.files import make_document
    from paretorag.rag import RAG

    methods = ["g2cons-concept", "g2cons", "vanilla"]
    rag = RAG.open(workdir / "index-1x", methods=methods, embedder=embedder_spec)
    t0 = time.perf_counter()
    docs = [make_document(t, x, f"2wiki#{i}", presplit=True) for i, (t, x) in enumerate(passages(1))]
    rag.index(docs)
    index_s = time.perf_counter() - t0
    qs = [q["question"] for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))[:n_questions]]
    embed_ms = []
    for q in qs:  # query embedding, timed apart: the view memoizes each question's vector
        t = time.perf_counter()
        rag.view.embed_query(q)
        embed_ms.append((time.perf_counter() - t) * 1000)
    out: dict[str, Any] = {
        "index_s": round(index_s, 2),
        "questions": len(qs),
        "query_embedding": _percentiles(embed_ms),
        "retrieval_excluding_query_embedding": {},
    }
    for m in methods:
        rag.retrieve(qs[0], method=m)  # loads structures and memoized graphs
        runs = []
        for q in qs:
            t = time.perf_counter()
            rag.retrieve(q, method=m)
            runs.append((time.perf_counter() - t) * 1000)
        out["retrieval_excluding_query_embedding"][m] = _percentiles(runs)
    rag.close()
    return out


def _percentiles(ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--embedder", default="minilm", help="minilm (default) or hash[:DIM] for the scaling study"
    )
    ap.add_argument("--sizes", default="1,2,4", help="corpus replication factors")
    ap.add_argument("--queries", type=int, default=200, help="questions for the latency study (0: skip)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/paretorag-bench-g2cons"))
    ap.add_argument("--trace-memory", action="store_true", help="also build once under tracemalloc")
    ap.add_argument("--build-one", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    workdir = args.workdir / args.embedder.replace(":", "-")
    if args.build_one:
        print(json.dumps(build_once(args.build_one, args.embedder, workdir, args.trace_memory)))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    scaling = []
    for size in sizes:
        cmd = [sys.executable, __file__, "--build-one", str(size), "--embedder", args.embedder]
        cmd += ["--workdir", str(args.workdir)] + (["--trace-memory"] if args.trace_memory else [])
        proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
        scaling.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(scaling[-1]), file=sys.stderr, flush=True)
    report: dict[str, Any] = {"embedder": args.embedder, "corpus": str(CORPUS), "scaling": scaling}
    if len(scaling) > 1:
        base = scaling[0]
        report["growth_vs_1x"] = [
            {
                "size": s["size"],
                "graph_time": round(s["graph_s"] / max(base["graph_s"], 1e-9), 2),
                "build_rss_growth": round(
                    (s["max_rss_mb"] - s["rss_before_mb"])
                    / max(base["max_rss_mb"] - base["rss_before_mb"], 1e-9),
                    2,
                ),
            }
            for s in scaling
        ]
    if args.queries > 0:
        report["latency"] = latency(args.embedder, workdir, args.queries)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
