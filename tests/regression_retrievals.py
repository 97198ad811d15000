"""Retrievals of the E2GraphRAG and G2ConS methods on slices of ../shared/data, as JSON.

The framework regression test (``test_framework_regression.py``) rebuilds these
indexes and compares every retrieval with the recorded file
``tests/data/framework_regression.json``: same chunk ids in the same order, same
mode, branch and evidence text. Re-record only when a change of results is intended::

    python tests/regression_retrievals.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
FIXTURE = ROOT / "tests" / "data" / "framework_regression.json"

METHODS: list[tuple[str, dict[str, Any]]] = [
    ("e2graphrag", {}),
    ("e2graphrag", {"dense_only": True}),
    ("e2graphrag", {"graph_filter": False}),
    ("e2graphrag", {"entity_aware": False}),
    ("e2graphrag", {"dense": False}),
    ("e2graphrag", {"occurrence": False}),
    ("e2graphrag", {"dense": False, "occurrence": False}),
    ("g2cons-concept", {}),
    ("g2cons-concept", {"rerank": "naive"}),
    ("g2cons-concept", {"cooccurrence": "sentence"}),
    ("g2cons-concept", {"similarity_filter": False}),
    ("g2cons", {}),
]


def _corpora(tmp: Path) -> list[tuple[str, list[Any], list[str], dict[str, Any]]]:
    """(name, sources, questions, RAG.open settings) of each slice."""
    from paretorag.ingest import make_document

    corpus = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_dev164_corpus.json").read_text())
    docs = [make_document(r["title"], r["text"], "2wiki", presplit=True) for r in corpus[:300]]
    qs = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_dev164.json").read_text())
    questions = [q["question"] for q in qs[:30]]
    record = json.loads((DATA / "quality" / "quality.jsonl").read_text().splitlines()[0])
    story = tmp / "story.txt"
    story.write_text(record["input"], encoding="utf-8")
    return [
        ("2wiki300", docs, questions, {}),
        ("quality1", [story], list(record["instructions"]), {"chunk_size": 300, "chunk_overlap": 30}),
    ]


def record(tmp: Path) -> dict[str, Any]:
    from paretorag import RAG

    out: dict[str, Any] = {}
    names = sorted({m for m, _ in METHODS})
    for name, sources, questions, settings in _corpora(tmp):
        # the fixture predates titled chunk vectors, the entity graph's max_df="auto" and
        # pooled sentence vectors: record and compare with text-only vectors, the paper's
        # entity graph and sentences embedded on their own
        rag = RAG.open(
            tmp / name,
            methods=names,
            embedder="hash:128",
            workers=1,
            embed_titles=False,
            builders={"entity_graph": {"max_df": 1.0}, "concept_graph": {"sentence_vectors": "separate"}},
            **settings,
        )
        rag.index(sources)
        rows: list[dict[str, Any]] = []
        for method, params in METHODS:
            for q in questions:
                r, items = rag.retrieve(q, method, budget=4000, **params)
                rows.append(
                    {
                        "method": method,
                        "params": params,
                        "question": q,
                        "rows": r.scored.ids.tolist(),
                        "items": [it.chunk_id for it in items],
                        "mode": r.mode,
                        "branch": r.branch,
                        "context_sha": hashlib.sha256((r.context_text or "").encode()).hexdigest()[:16],
                    }
                )
        out[name] = rows
        rag.close()
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        result = record(Path(d))
    if "--write" in sys.argv:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(result, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({k: len(v) for k, v in result.items()}))
