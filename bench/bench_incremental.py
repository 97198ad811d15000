"""Retrieval of an incrementally grown tree against a fresh build of the same documents.

Loads a benchmark subset with gold supporting passages through the evaluation loaders,
then builds two indexes with methods ``raptor`` (or, with ``--tree e2graphrag``,
``e2graphrag`` over one pooled summary tree, ``scope="corpus"``) and ``vanilla``:

* fresh: the whole corpus in one ``index`` call (a full build);
* incremental: the first ``--base-frac`` of the corpus documents, then the rest inserted
  in ``--batches`` inserts. Each insert must update the tree (the manifest's ``raptor_tree``
  entry says ``mode: incremental``; the E2GraphRAG tree's ``pooled``, ``order kept``), not
  rebuild it: the script fails otherwise.

Every question is retrieved at depth ``--k`` with each method on both indexes; the JSON
printed gives the evaluation's recall@2 / recall@5 (``fraction``, the headline, plus
``all``), the share of questions whose top-k documents are the same set on both indexes,
and the build times. ``vanilla`` is the control: its results must be identical.

    .venv/bin/python bench/bench_incremental.py --subset 2wikimultihopqa_dev164 \\
        --work /tmp/bench-incremental
    .venv/bin/python bench/bench_incremental.py --tree e2graphrag --subset 2wikimultihopqa_dev164 \\
        --work /tmp/bench-incremental-e2
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from paretorag import RAG
from paretorag.eval import metrics as M
from paretorag.eval.loaders import load_dataset
from paretorag.eval.runner import _retrieved_doc_ids, set_seeds
from paretorag.graphs.raptor_update import DRIFT_LIMIT

# per --tree: the methods, the tree's structure, its builder settings, and how its manifest entry
# says it was updated rather than built afresh
TREES: dict[str, dict[str, Any]] = {
    "raptor": {
        "methods": ["raptor", "vanilla"],
        "structure": "raptor_tree",
        "builders": {},
        "updated": ("mode", "incremental"),
    },
    "e2graphrag": {
        "methods": ["e2graphrag", "vanilla"],
        "structure": "tree",
        "builders": {"tree": {"scope": "corpus"}},
        "updated": ("pooled", "order kept"),
    },
}


def _tree_entry(root: Path, tree: str) -> dict[str, Any]:
    """The manifest's entry for the RAPTOR tree (mode, leaves changed, LLM calls, seconds)."""
    entry = json.loads((root / "manifest.json").read_text())["structures"][tree]
    keep = (
        "mode",
        "pooled",
        "seconds",
        "layers",
        "levels",
        "summaries",
        "llm_calls",
        "added_leaves",
        "removed_leaves",
    )
    return {k: entry[k] for k in keep if k in entry}


def _drift(rag: RAG, tree: str) -> dict[str, Any]:
    """The tree's drift record (leaves changed since its last full build)."""
    root = Path(rag.root)
    entry = json.loads((root / "manifest.json").read_text())["structures"][tree]
    meta = json.loads((root / "structures" / entry["dir"] / "meta.json").read_text())
    pooled = meta.get("pooled") or {}
    return dict(meta.get("drift") or {k: pooled[k] for k in ("base", "changed") if k in pooled})


def _index(rag: RAG, docs: list[Any]) -> float:
    t0 = time.perf_counter()
    rag.index(docs)
    return round(time.perf_counter() - t0, 3)


def _retrieve(rag: RAG, questions: list[Any], method: str, k: int) -> list[list[str]]:
    """Top-k distinct document ids per question, as the evaluation runner scores them."""
    rag.view.forget_queries()
    out = []
    for q in questions:
        retrieval, items = rag.retrieve(q.prompt(), method=method, k=k)
        out.append(M.first_distinct(_retrieved_doc_ids(rag, retrieval, list(items)))[:k])
    return out


def _recall(ranked: list[list[str]], questions: list[Any], ks: tuple[int, ...]) -> dict[str, float | None]:
    scores: dict[str, float | None] = {}
    for k in ks:
        rows = [M.recall_at_k(r, q.gold_keys, k) for r, q in zip(ranked, questions, strict=True)]
        for kind in ("fraction", "all"):
            name = f"recall@{k}" if kind == "fraction" else f"recall_all@{k}"
            v = M.mean(r[kind] if r is not None else None for r in rows)
            scores[name] = round(v, 4) if v is not None else None
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--subset", default="2wikimultihopqa_dev164")
    ap.add_argument("--limit", type=int, default=None, help="first N questions (the corpus stays whole)")
    ap.add_argument(
        "--corpus", default="full", choices=["full", "own"], help="own: only the questions' own passages"
    )
    ap.add_argument("--shuffle-corpus", type=int, default=None, help="index the corpus in a seeded order")
    ap.add_argument("--embedder", default=None, help="embedder spec (default: MiniLM)")
    ap.add_argument("--base-frac", type=float, default=0.85, help="share of documents in the first build")
    ap.add_argument("--batches", type=int, default=3, help="inserts for the remaining documents")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--work", default="/tmp/bench-incremental")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tree", choices=sorted(TREES), default="raptor", help="which tree to grow")
    args = ap.parse_args()
    tree_kind = TREES[args.tree]
    methods, tree_name = tree_kind["methods"], tree_kind["structure"]
    flag, updated = tree_kind["updated"]

    set_seeds(args.seed)
    ds = load_dataset(
        args.data_dir, args.subset, limit=args.limit, corpus=args.corpus, shuffle_corpus=args.shuffle_corpus
    )
    docs = ds.documents()
    questions = [q for q in ds.questions if q.gold_keys]
    n0 = round(args.base_frac * len(docs))
    rest = docs[n0:]
    step = -(-len(rest) // args.batches)
    batches = [rest[i : i + step] for i in range(0, len(rest), step)]

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    opts = {"methods": methods, "embedder": args.embedder, "builders": tree_kind["builders"]}

    with RAG.open(work / "fresh", **opts) as fresh:
        fresh_s = _index(fresh, docs)
        fresh_tree = _tree_entry(work / "fresh", tree_name)
        fresh_chunks = int(fresh.manifest.counts.get("chunks", 0))
        set_seeds(args.seed)
        fresh_ranked = {m: _retrieve(fresh, questions, m, args.k) for m in methods}

    inserts = []
    with RAG.open(work / "incremental", **opts) as inc:
        base_s = _index(inc, docs[:n0])
        base_tree = _tree_entry(work / "incremental", tree_name)
        base_chunks = int(inc.manifest.counts.get("chunks", 0))
        for batch in batches:
            seconds = _index(inc, batch)
            tree = _tree_entry(work / "incremental", tree_name)
            inserts.append(
                {"documents": len(batch), "wall_s": seconds, "tree": tree, "drift": _drift(inc, tree_name)}
            )
            if tree.get(flag) != updated:
                raise SystemExit(f"insert of {len(batch)} documents rebuilt the tree: {tree}")
        inc_chunks = int(inc.manifest.counts.get("chunks", 0))
        set_seeds(args.seed)
        inc_ranked = {m: _retrieve(inc, questions, m, args.k) for m in methods}

    ks = tuple(k for k in (2, 5) if k <= args.k) or (args.k,)
    results: dict[str, Any] = {}
    for m in methods:
        same = [set(a) == set(b) for a, b in zip(fresh_ranked[m], inc_ranked[m], strict=True)]
        results[m] = {
            "fresh": _recall(fresh_ranked[m], questions, ks),
            "incremental": _recall(inc_ranked[m], questions, ks),
            f"same_top{args.k}_set": round(sum(same) / max(len(same), 1), 4),
            f"same_top{args.k}_order": round(
                sum(a == b for a, b in zip(fresh_ranked[m], inc_ranked[m], strict=True)) / max(len(same), 1),
                4,
            ),
        }
    out = {
        "tree_kind": args.tree,
        "subset": ds.name,
        "corpus": args.corpus,
        "shuffle_corpus": args.shuffle_corpus,
        "embedder": args.embedder or "default (MiniLM)",
        "documents": len(docs),
        "chunks": {"fresh": fresh_chunks, "incremental_base": base_chunks, "incremental_final": inc_chunks},
        "questions": len(questions),
        "k": args.k,
        "drift_limit": DRIFT_LIMIT,
        "base_documents": n0,
        "inserted_documents": [len(b) for b in batches],
        "build_s": {
            "fresh_full": fresh_s,
            "incremental_base": base_s,
            "incremental_inserts": [i["wall_s"] for i in inserts],
        },
        "tree": {"fresh": fresh_tree, "incremental_base": base_tree, "inserts": inserts},
        "retrieval": results,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
