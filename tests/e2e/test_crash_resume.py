"""SIGKILL the indexer at several points: the index loads, and a re-run ends identical."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paretorag import RAG
from paretorag.errors import IndexFormatError
from paretorag.providers.embedders import HashEmbedder

CHILD = Path(__file__).parents[1] / "crash_child.py"
QUESTIONS = ["topic 3 river", "alpha gamma", "section 17 mountains"]


def _corpus(root: Path, start: int, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        text = " ".join(
            f"Document {i} section {j} covers topic {(i * j) % 11} about rivers and mountains."
            for j in range(12)
        )
        (root / f"doc{i:03d}.txt").write_text(text)
    return root


def _run(index_dir: Path, paths: list[Path], kill_on: str | None = None, methods: str = "vanilla") -> bool:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), f"--methods={methods}", str(index_dir), *map(str, paths)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    killed = False
    for line in proc.stdout:
        if kill_on and line.startswith(kill_on):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
    proc.wait(timeout=120)
    if not killed:
        assert proc.returncode == 0
    return killed


def _snapshot(index_dir: Path):
    rag = RAG.open(index_dir, embedder=HashEmbedder(32), create=False)
    view = rag.view
    results = [[c.chunk_id for c in rag.query(q, context_only=True, k=4).contexts] for q in QUESTIONS]
    matrix = None if view.vectors is None else view.vectors.matrix.copy()
    counts = {k: v for k, v in rag.manifest.counts.items() if k != "llm_cache_entries"}
    snap = (list(view.chunks.ids), list(view.chunks.texts), matrix, results, counts, rag.documents())
    rag.close()
    return snap


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    return _corpus(base / "a", 0, 24), _corpus(base / "b", 100, 6)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpora):
    a, b = corpora
    ref = tmp_path_factory.mktemp("ref") / "ix"
    _run(ref, [a])
    first = _snapshot(ref)
    _run(ref, [b])
    return first, _snapshot(ref)


def _same(x, y) -> None:
    ids, texts, mat, results, counts, docs = x
    ids2, texts2, mat2, results2, counts2, docs2 = y
    assert ids == ids2 and texts == texts2 and results == results2 and counts == counts2
    assert [d["doc_id"] for d in docs] == [d["doc_id"] for d in docs2]
    np.testing.assert_array_equal(mat, mat2)


@pytest.mark.parametrize("kill_on", ["chunking 5", "embedding chunks 64", "end embedding chunks"])
def test_kill_during_first_index(tmp_path, corpora, reference, kill_on):
    a, _ = corpora
    ix = tmp_path / "ix"
    assert _run(ix, [a], kill_on)
    # the index loads; before the first commit a query says so, and a re-run completes it
    rag = RAG.open(ix, embedder=HashEmbedder(32))
    if rag.manifest.vectors:
        assert rag.query("rivers", context_only=True).contexts
    else:
        with pytest.raises(IndexFormatError, match="no committed documents"):
            rag.query("rivers", context_only=True)
    rag.close()
    _run(ix, [a])
    _same(_snapshot(ix), reference[0])


@pytest.mark.parametrize("kill_on", ["chunking 3", "embedding chunks ", "end embedding chunks"])
def test_kill_during_insert_keeps_last_commit(tmp_path, corpora, reference, kill_on):
    a, b = corpora
    ix = tmp_path / "ix"
    _run(ix, [a])
    assert _run(ix, [b], kill_on)
    _same(_snapshot(ix), reference[0])  # the last committed index, as it was
    _run(ix, [b])
    _same(_snapshot(ix), reference[1])
    manifest = json.loads((ix / "manifest.json").read_text())
    assert manifest["counts"]["documents"] == 30


def test_kill_during_summary_tree_resumes_from_the_llm_cache(tmp_path, corpora):
    """A structure build (E2GraphRAG's tree, extractive LLM) killed halfway: the re-run
    reuses the cached summaries and ends identical to an uninterrupted build."""
    a, _ = corpora
    ref, ix = tmp_path / "ref", tmp_path / "ix"
    _run(ref, [a], methods="e2graphrag")
    # killed after every summary is cached but before the structures are saved (the
    # entity graph, built in parallel, is still running)
    assert _run(ix, [a], "end summary tree", methods="e2graphrag")
    assert not json.loads((ix / "manifest.json").read_text())["structures"]
    _run(ix, [a], methods="e2graphrag")
    m_ref = json.loads((ref / "manifest.json").read_text())
    m_ix = json.loads((ix / "manifest.json").read_text())
    assert {k: v["dir"] for k, v in m_ref["structures"].items()} == {
        k: v["dir"] for k, v in m_ix["structures"].items()
    }
    tree_ref, tree_ix = m_ref["usage"]["index.tree"], m_ix["usage"]["index.tree"]
    assert tree_ix["calls"] == tree_ref["calls"] and tree_ref["cached"] == 0
    assert tree_ix["cached"] == tree_ix["calls"] > 0  # no summary was asked again
    for name in m_ref["structures"]:
        d = m_ref["structures"][name]["dir"]
        with (
            np.load(ref / "structures" / d / "arrays.npz") as x,
            np.load(ix / "structures" / d / "arrays.npz") as y,
        ):
            assert x.files == y.files
            for key in x.files:
                np.testing.assert_array_equal(x[key], y[key])
        metas = [json.loads((r / "structures" / d / "meta.json").read_text()) for r in (ref, ix)]
        assert metas[0].get("summaries") == metas[1].get("summaries")
    results = []
    for root in (ref, ix):
        rag = RAG.open(root, embedder=HashEmbedder(32), create=False)
        results.append(
            [
                [c.chunk_id for c in rag.query(q, method="e2graphrag", context_only=True).contexts]
                for q in QUESTIONS
            ]
        )
        rag.close()
    assert results[0] == results[1]
