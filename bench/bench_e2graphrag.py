"""E2GraphRAG benchmarks (issue 5): extraction speed, tree cost, retrieval latency, concurrency.

Builds a ~200k-token "book" by concatenating the QuALITY stories and the NQ (L-Eval)
pages of ../shared/data, then measures:

- ``extraction``: spaCy entity extraction in tokens/s with 1 and 2 processes (and the
  rule-based sentencizer) on the book's 1200-token chunks (target: >= 10k tokens/s
  with 2 processes; E2GraphRAG App. D.1 reports ~40 s per 200k-token book);
- ``tree``: LLM calls to build the summary tree against ``sum_k ceil(n / g**k)``
  (App. D.2) and prompt tokens / corpus tokens (target <= 1.3), extractive backend;
- ``latency``: ``e2graphrag`` retrieval once the question is embedded, p50/p95
  (targets 5 ms / 20 ms), with the branch mix of Algorithm 1;
- ``concurrency``: tree summarization and entity extraction run one after the other
  vs concurrently (as the indexer runs independent builders), with the extractive
  backend (CPU-bound, competes for the same 2 cores) and with a remote-LLM stand-in
  (2 s per call, 8 in flight: the GPU-server setting of §3.1).

Usage::

    .venv/bin/python bench/bench_e2graphrag.py [--tokens 200000] [--embedder minilm] [--queries 200]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from paretorag import RAG
from paretorag.graphs.base import StructureData
from paretorag.graphs.entities import EntityGraph
from paretorag.graphs.tree import SummaryTree, expected_calls
from paretorag.ingest.chunking import chunk_document
from paretorag.ingest.files import make_document
from paretorag.progress import NullProgress
from paretorag.providers.base import Completion, Request
from paretorag.providers.embedder_spec import make_embedder
from paretorag.providers.llm import ExtractiveLLM
from paretorag.providers.nlp import EntityExtractor
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.methods.base import QueryOptions
from paretorag.storage.store import ChunkTable

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def build_book(target_tokens: int, count: Any) -> tuple[str, list[str], int]:
    """Stories and pages concatenated up to ``target_tokens``; their questions (first lines)."""
    texts: list[str] = []
    questions: list[str] = []
    seen: set[str] = set()
    total = 0
    for name in ("quality/quality.jsonl", "nq_leval/natural_question.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["input"] in seen:
                continue
            seen.add(rec["input"])
            texts.append(rec["input"])
            questions.extend(q.strip().split("\n")[0] for q in rec["instructions"])
            total += count(rec["input"])
            if total >= target_tokens:
                return "\n\n".join(texts), questions, total
    return "\n\n".join(texts), questions, total


class Ctx:
    """A minimal build context (what :class:`paretorag.indexing.writer.IndexWriter` provides)."""

    def __init__(self, chunks: ChunkTable, embedder: Any, tokenizer: Any, llm: Any, workers: int = 2) -> None:
        self.chunks, self.embedder, self.tokenizer, self._llm = chunks, embedder, tokenizer, llm
        self.progress = NullProgress()
        self.workers = workers

    def llm(self, stage: str) -> Any:
        return self._llm

    def structure(self, name: str) -> StructureData:
        raise KeyError(name)

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        return {}  # measure the extraction itself, never a cache

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        pass


class RemoteLikeLLM:
    """The extractive backend behind a fixed network/GPU latency (a remote server stand-in)."""

    name = "remote-like"
    max_concurrency = 8

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.inner = ExtractiveLLM()

    def complete(self, request: Request) -> Completion:
        time.sleep(self.delay)
        return self.inner.complete(request)


def bench_extraction(texts: list[str], corpus_tokens: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, n_process, sentences in (
        ("1 process", 1, "senter"),
        ("2 processes", 2, "senter"),
        ("2 processes, sentencizer", 2, "sentencizer"),
    ):
        log(f"extraction: {label}")
        ex = EntityExtractor(n_process=n_process, sentences=sentences)  # type: ignore[arg-type]
        ex.entities("Warm up the model, Alice.")
        t0 = time.perf_counter()
        spacy_tokens = sum(e.n_tokens for e in ex.extract(texts))
        dt = time.perf_counter() - t0
        out[label] = {
            "seconds": round(dt, 2),
            "spacy_tokens": spacy_tokens,
            "spacy_tokens_per_s": round(spacy_tokens / dt),
            "corpus_tokens_per_s": round(corpus_tokens / dt),
        }
    return out


def bench_concurrency(chunks: ChunkTable, embedder: Any, tokenizer: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, llm in (
        ("extractive (CPU)", ExtractiveLLM()),
        ("remote-like 2 s/call, 8 in flight", RemoteLikeLLM(2.0)),
    ):
        log(f"concurrency: {label}")
        ctx = Ctx(chunks, embedder, tokenizer, llm)
        embedder.embed(["warm"])
        t0 = time.perf_counter()
        SummaryTree().build(ctx)  # type: ignore[arg-type]
        t_tree = time.perf_counter() - t0
        t0 = time.perf_counter()
        EntityGraph().build(ctx)  # type: ignore[arg-type]
        t_graph = time.perf_counter() - t0
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(b.build, ctx) for b in (SummaryTree(), EntityGraph())]  # type: ignore[arg-type]
            for j in jobs:
                j.result()
        wall = time.perf_counter() - t0
        out[label] = {
            "tree_s": round(t_tree, 2),
            "entity_graph_s": round(t_graph, 2),
            "sequential_s": round(t_tree + t_graph, 2),
            "concurrent_s": round(wall, 2),
            "saving_s": round(t_tree + t_graph - wall, 2),
            "saving_fraction": round(1 - wall / (t_tree + t_graph), 3),
        }
    return out


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
        "mean_ms": round(float(a.mean()), 3),
        "max_ms": round(float(a.max()), 3),
    }


def bench_latency(rag: RAG, questions: list[str]) -> dict[str, Any]:
    view = rag.view
    method = get_method("e2graphrag")
    opts = QueryOptions()
    method.retrieve(view, "Who met the captain at the harbor?", opts)  # loads state and spaCy
    for q in questions:
        view.embed_query(q)  # latency is measured once the question is embedded
    first: list[float] = []
    branches: Counter[str] = Counter()
    parts: dict[str, list[float]] = {"entities": [], "select": [], "format": []}
    for q in questions:
        t0 = time.perf_counter()
        r = method.retrieve(view, q, opts)
        first.append((time.perf_counter() - t0) * 1e3)
        branches[f"{r.mode}/{r.branch}"] += 1
        for key in parts:
            parts[key].append(r.info["timings_ms"][key])
    again: list[float] = []
    for q in questions:  # question entities now memoized: graph work only
        t0 = time.perf_counter()
        method.retrieve(view, q, opts)
        again.append((time.perf_counter() - t0) * 1e3)
    return {
        "questions": len(questions),
        "retrieval_after_embedding": percentiles(first),
        "parts_p50_ms": {k: round(float(np.median(v)), 3) for k, v in parts.items()},
        "retrieval_entities_memoized": percentiles(again),
        "branches": dict(branches.most_common()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=200_000)
    ap.add_argument("--embedder", default="minilm", help="minilm (default) or hash:DIM")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-concurrency", action="store_true")
    args = ap.parse_args()

    embedder = make_embedder(args.embedder)
    tokenizer = getattr(embedder, "tokenizer", None) or make_embedder("hash").tokenizer
    text, questions, corpus_tokens = build_book(args.tokens, lambda t: tokenizer.count([t])[0])
    doc = make_document("book", text, "bench")
    chunks = ChunkTable.from_chunks(chunk_document(doc, tokenizer, size=1200, overlap=100))
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "book": {
            "characters": len(text),
            "tokens": corpus_tokens,
            "chunks": len(chunks),
            "tokenizer": tokenizer.name,
        },
        "extraction": bench_extraction(list(chunks.texts), corpus_tokens),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.txt"
        path.write_text(text, encoding="utf-8")
        rag = RAG.open(Path(tmp) / "index", methods=["e2graphrag"], embedder=embedder)
        log("indexing the book")
        t0 = time.perf_counter()
        rag.index([path])
        index_s = time.perf_counter() - t0
        n = rag.manifest.counts["chunks"]
        tree = rag.usage.stage("index.tree")
        result["tree"] = {
            "chunks": n,
            "llm_calls": tree.calls,
            "expected_sum_ceil_n_over_g_k": expected_calls(n, 5),
            "n_over_g_minus_1": round(n / 4, 1),
            "prompt_tokens": tree.prompt_tokens,
            "completion_tokens": tree.completion_tokens,
            "prompt_over_corpus_tokens": round(tree.prompt_tokens / corpus_tokens, 3),
            "index_seconds": round(index_s, 2),
            "stage_seconds": {
                k: v for k, v in rag.manifest.timings.items() if k.startswith(("build", "embed"))
            },
            "entity_graph": rag.manifest.structures["entity_graph"],
        }
        log("latency")
        result["latency"] = bench_latency(rag, questions[: args.queries])
        rag.close()
    if not args.skip_concurrency:
        result["concurrency"] = bench_concurrency(chunks, embedder, tokenizer)
    result["machine"]["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
