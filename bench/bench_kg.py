"""Knowledge-graph building benchmarks (issue 10 §2): spaCy speed, LLM cost per chunk, Leiden.

- ``spacy``: the LLM-free ``kg`` build on the 2WikiMultihopQA corpus (6,119 passages):
  spaCy tokens/s with ``--processes`` worker processes (target >= 10k tokens/s with 2),
  graph assembly time, nodes / edges, peak RSS of this process and of the workers;
- ``llm_cost``: LLM calls and prompt tokens per 1,200-token chunk to build ``kg``,
  ``tkg`` and ``rkg`` with a counting fake LLM answering in each paper's format
  (answers sized like real ones), next to the peers' figures (HippoRAG 2.0 calls /
  ~3.1k prompt tokens; LightRAG 2.0 / ~7.2k; nano-graphrag 2.15 / ~7.2k); tokens are
  counted with the index's default tokenizer (MiniLM word pieces);
- ``leiden``: hierarchical Leiden (``communities``' :func:`leiden_levels`) on a random
  graph of ``--nodes`` nodes and ``--edges`` edges: seconds, communities, peak RSS.

Each part runs in its own process, so peak RSS is the part's own. Usage::

    PYTHONPATH=src .venv/bin/python bench/bench_kg.py [--parts spacy,llm_cost,leiden]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
PEERS = {
    "kg": {"peer": "HippoRAG", "calls": 2.0, "prompt_tokens": 3100},
    "tkg": {"peer": "nano-graphrag", "calls": 2.15, "prompt_tokens": 7200},
    "rkg": {"peer": "LightRAG", "calls": 2.0, "prompt_tokens": 7200},
}


def _rss_mb() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"peak_rss_mb": round(own, 1), "peak_rss_children_mb": round(kids, 1)}


def _ctx(texts: list[str], llm: Any, tokenizer: Any = None, workers: int = 2) -> Any:
    from paretorag.progress import NullProgress
    from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
    from paretorag.storage.store import ChunkTable
    from paretorag.types import Chunk

    class Ctx:
        chunks = ChunkTable.from_chunks(
            [Chunk(f"c{i}", f"c{i}", 0, 0, len(t), t, len(t.split()), "") for i, t in enumerate(texts)]
        )
        embedder = HashEmbedder(64)
        progress = NullProgress()

        def __init__(self) -> None:
            self.tokenizer = tokenizer or RegexTokenizer()
            self.workers = workers

        def llm(self, stage: str) -> Any:
            return llm

        def structure(self, name: str) -> Any:
            raise KeyError(name)

    return Ctx()


def part_spacy(args: argparse.Namespace) -> dict[str, Any]:
    from paretorag.graphs.base import get_builder
    from paretorag.providers.nlp_kg import extract_kg

    records = json.loads(CORPUS.read_text(encoding="utf-8"))
    texts = [f"{r['title']}\n{r['text']}" for r in records][: args.passages or None]
    t0 = time.perf_counter()
    exs = extract_kg(texts, n_process=args.processes, batch_size=16)
    spacy_s = time.perf_counter() - t0
    tokens = sum(e.n_tokens for e in exs)
    t1 = time.perf_counter()  # the builder finds every extraction memoized: this is assembly + vectors
    data = get_builder("kg", n_process=args.processes).build(_ctx(texts, _NoLLM()))
    build_s = time.perf_counter() - t1
    return {
        "passages": len(texts),
        "processes": args.processes,
        "spacy_tokens": tokens,
        "spacy_seconds": round(spacy_s, 2),
        "spacy_tokens_per_s": round(tokens / spacy_s),
        "triples": sum(len(e.triples) for e in exs),
        "assembly_seconds": round(build_s, 2),
        "graph": data.meta["summary"],
        **_rss_mb(),
    }


class _NoLLM:
    name = "extractive"
    generative = False


def _fake_answers(req: Any) -> str:
    """Answers shaped and sized like real extraction answers (per 1,200-token chunk)."""
    last = req.messages[-1].content
    body = last.rsplit("Text:", 1)[-1].rsplit("Paragraph:", 1)[-1]
    words = sorted({w.strip(".,()") for w in body.split() if w[:1].isupper() and len(w) > 3})[:25]
    if last.startswith("MANY"):
        return (
            "\n".join(
                f'("entity"<|>"{w}X"<|>"EVENT"<|>"{w}X is mentioned once in the text.")##' for w in words[:4]
            )
            + "<|COMPLETE|>"
        )
    if "RDF" in last:
        return json.dumps(
            {"triples": [[words[i], "is related to", words[i + 1]] for i in range(min(20, len(words) - 1))]}
        )
    if "named entities" in last:
        return json.dumps({"named_entities": words[:20]})
    ents = [
        f'("entity"<|>"{w}"<|>"PERSON"<|>"{w} is a person mentioned in the text, who did several things.")'
        for w in words[:15]
    ]
    kw = '<|>"link, theme"' if "relationship_keywords" in last else ""
    rels = [
        f'("relationship"<|>"{words[i]}"<|>"{words[i + 1]}"<|>"{words[i]} and {words[i + 1]} appear together."{kw}<|>7)'
        for i in range(min(12, len(words) - 1))
    ]
    return "##\n".join(ents + rels) + "<|COMPLETE|>"


def part_llm_cost(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from paretorag.graphs.base import get_builder
    from paretorag.providers.embedders import WordPieceTokenizer, default_model_path
    from paretorag.providers.llm import FakeLLM
    from paretorag.providers.wrappers import CountingLLM
    from paretorag.types import Usage

    tok = WordPieceTokenizer(AutoTokenizer.from_pretrained(str(default_model_path())), "minilm")
    records = json.loads(CORPUS.read_text(encoding="utf-8"))
    chunks: list[str] = []
    cur: list[str] = []
    size = 0
    for r in records:  # 1,200-token chunks of consecutive passages
        text = f"{r['title']}\n{r['text']}"
        cur.append(text)
        size += tok.count([text])[0]
        if size >= 1200:
            chunks.append("\n\n".join(cur))
            cur, size = [], 0
            if len(chunks) == args.chunks:
                break
    chunk_tokens = float(np.mean(tok.count(chunks)))
    out: dict[str, Any] = {"chunks": len(chunks), "mean_chunk_tokens": round(chunk_tokens)}
    for name in ("kg", "tkg", "rkg"):
        usage = Usage()
        llm = CountingLLM(FakeLLM(_fake_answers), usage, f"index.{name}", tok)
        get_builder(name).build(_ctx(chunks, llm, tok))
        s = usage.stage(f"index.{name}")
        out[name] = {
            "calls_per_chunk": round(s.calls / len(chunks), 2),
            "prompt_tokens_per_chunk": round(s.prompt_tokens / len(chunks)),
            "completion_tokens_per_chunk": round(s.completion_tokens / len(chunks)),
            **PEERS[name],
        }
    return out


def part_leiden(args: argparse.Namespace) -> dict[str, Any]:
    import scipy.sparse as sp

    from paretorag.graphs.communities import leiden_levels

    rng = np.random.default_rng(0)
    n, m = args.nodes, args.edges
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    adj = sp.coo_matrix((np.ones(int(keep.sum()), np.float32), (a[keep], b[keep])), shape=(n, n)).tocsr()
    adj = (adj + adj.T).tocsr()
    t0 = time.perf_counter()
    comms = leiden_levels(adj, max_cluster_size=10)
    seconds = time.perf_counter() - t0
    levels = [lv for lv, _, _ in comms]
    return {
        "nodes": n,
        "edges": int(adj.nnz // 2),
        "seconds": round(seconds, 2),
        "communities": len(comms),
        "levels": max(levels) + 1 if levels else 0,
        "level0_communities": levels.count(0),
        **_rss_mb(),
    }


PARTS = {"spacy": part_spacy, "llm_cost": part_llm_cost, "leiden": part_leiden}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="spacy,llm_cost,leiden")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--passages", type=int, default=0, help="0 = all 6,119")
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--edges", type=int, default=1_000_000)
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(PARTS[args.one](args)))
        return
    result: dict[str, Any] = {}
    for part in args.parts.split(","):
        cmd = [sys.executable, __file__, "--one", part, *sys.argv[1:]]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode:
            result[part] = {"error": done.stderr[-2000:]}
        else:
            result[part] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
