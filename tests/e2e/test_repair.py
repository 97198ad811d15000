"""Interrupted deletes are finished by the next writer; missing or damaged files are repaired
from SQLite and the caches, and `inspect --check` finds them."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import DamagedIndexError
from paretorag.providers.embedders import HashEmbedder

runner = CliRunner()
QUESTIONS = ["word3 lakes", "part 5 of item 1", "word7"]


class CountingEmbedder(HashEmbedder):
    """A hash embedder that counts the texts it embeds (cache misses of the index)."""

    def __init__(self) -> None:
        super().__init__(32)
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


def _corpus(root: Path, n: int = 8) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        out.append(root / f"doc{i}.txt")
        out[-1].write_text(" ".join(f"Item {i} part {j} speaks of word{i} and lakes {j}." for j in range(10)))
    return out


def _open(path: Path, embedder=None, **kw) -> RAG:
    return RAG.open(path, embedder=embedder or "hash:32", chunk_size=60, chunk_overlap=10, **kw)


def _answers(rag: RAG, method: str = "vanilla") -> list[list[str]]:
    return [[c.chunk_id for c in rag.query(q, method=method, context_only=True).contexts] for q in QUESTIONS]


@pytest.fixture
def built(tmp_path):
    ix = tmp_path / "ix"
    rag = _open(ix, methods=["vanilla", "g2cons-concept"])
    rag.index(_corpus(tmp_path / "src"))
    expected = (_answers(rag), _answers(rag, "g2cons-concept"))
    rag.close()
    return ix, expected


# -- item 3: a delete killed between marking and commit ------------------------------


def _killed_delete(ix: Path) -> str:
    """What a SIGKILL between `delete`'s marking and its commit leaves behind."""
    rag = _open(ix)
    doc = rag.documents()[0]["doc_id"]
    rag.store.mark_deleted([doc])
    rag.close()
    return doc


def test_a_pending_delete_is_shown_and_can_be_deleted_again(built):
    ix, _ = built
    doc = _killed_delete(ix)
    rag = _open(ix)
    listed = {d["doc_id"]: d for d in rag.documents()}
    assert listed[doc]["pending_delete"] is True  # still retrievable, and inspect shows it
    r = runner.invoke(app, ["inspect", "--index", str(ix), "--documents"])
    assert doc in r.output and "delete pending" in r.output
    assert rag.delete([doc]) == [doc]
    assert doc not in {d["doc_id"] for d in rag.documents()}
    assert doc not in {c.doc_id for c in rag.query("lakes", context_only=True, k=100).contexts}


def test_the_next_writer_of_any_kind_finishes_a_pending_delete(built, tmp_path):
    ix, _ = built
    doc = _killed_delete(ix)
    extra = tmp_path / "extra.txt"
    extra.write_text("A new note about harbours.")
    rag = _open(ix)
    assert rag.insert([extra]).committed
    assert doc not in {d["doc_id"] for d in rag.documents()}
    assert rag.manifest.counts["documents"] == 8
    assert rag.store.pending_deletes() == []


# -- item 4: repair -------------------------------------------------------------------


def _damage(ix: Path, what: str) -> None:
    m = json.loads((ix / "manifest.json").read_text())
    if what == "vectors":
        (ix / "vectors" / f"{m['vectors']}.npy").unlink()
    elif what == "ids":
        (ix / "vectors" / f"{m['vectors']}.ids.txt").unlink()
    elif what == "structure":
        (ix / "structures" / m["structures"]["concept_graph"]["dir"] / "arrays.npz").unlink()
    elif what == "garbled structure":
        (ix / "structures" / m["structures"]["concept_graph"]["dir"] / "arrays.npz").write_bytes(
            b"PK\x03\x04 no"
        )
    elif what == "manifest":
        text = (ix / "manifest.json").read_text()
        (ix / "manifest.json").write_text(text[: len(text) // 2])


@pytest.mark.parametrize("what", ["vectors", "ids", "structure", "garbled structure", "manifest"])
def test_repair_rebuilds_from_sqlite_and_the_caches(built, what):
    ix, expected = built
    _damage(ix, what)
    r = runner.invoke(app, ["inspect", "--index", str(ix), "--check"])
    assert r.exit_code != 0 and "paretorag repair" in r.output and "Traceback" not in r.output, r.output
    with pytest.raises(DamagedIndexError, match="paretorag repair --index"):
        rag = _open(ix)
        _answers(rag)
        _answers(rag, "g2cons-concept")
    embedder = CountingEmbedder()
    rag = _open(ix, embedder)
    report = rag.repair()
    assert report.rebuilt
    named = {  # what the report must name: the damaged file, or the manifest it recovered
        "vectors": ".npy",
        "ids": ".ids.txt",
        "structure": "concept_graph",
        "garbled structure": "concept_graph",
        "manifest": "manifest",
    }[what]
    said = [str(p) for p in report.problems] + list(report.notes)
    assert any(named in line for line in said), said
    assert embedder.texts == 0  # every vector came from the embedding cache
    assert (_answers(rag), _answers(rag, "g2cons-concept")) == expected
    assert rag.check() == []
    r = runner.invoke(app, ["inspect", "--index", str(ix), "--check"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("what", ["vectors", "structure", "manifest"])
def test_index_repairs_instead_of_saying_nothing_to_do(built, tmp_path, what):
    ix, expected = built
    _damage(ix, what)
    r = runner.invoke(app, ["index", str(tmp_path / "src"), "--index", str(ix)])
    assert r.exit_code == 0 and "nothing to do" not in r.output, r.output
    rag = _open(ix)
    assert (_answers(rag), _answers(rag, "g2cons-concept")) == expected
    assert rag.check() == []


def test_a_manifest_without_backup_is_rebuilt_from_sqlite_or_the_defaults(built):
    ix, expected = built
    (ix / "manifest.json.bak").unlink()
    _damage(ix, "manifest")
    r = runner.invoke(app, ["repair", "--index", str(ix)])
    assert r.exit_code == 0 and "index.sqlite" in r.output and "repaired" in r.output, r.output
    rag = _open(ix)
    assert (_answers(rag), _answers(rag, "g2cons-concept")) == expected
    assert rag.manifest.config.chunk_size == 60
    rag.close()
    # with the configuration gone from SQLite too: the defaults, said so; --methods etc. restore the rest
    (ix / "manifest.json.bak").unlink()
    _damage(ix, "manifest")
    with sqlite3.connect(ix / "index.sqlite") as db:
        db.execute("DELETE FROM kv")
    rag = _open(ix)
    report = rag.repair()
    assert any("default configuration" in n for n in report.notes)
    assert rag.manifest.counts["documents"] == 8 and _answers(rag) == expected[0]


def test_check_reports_counts_that_do_not_match(built):
    ix, _ = built
    m = json.loads((ix / "manifest.json").read_text())
    npy = ix / "vectors" / f"{m['vectors']}.npy"
    np.save(npy, np.load(npy)[:-1])
    problems = _open(ix).check()
    assert len(problems) == 1 and "rows" in problems[0]
    assert _open(ix).repair().rebuilt and _open(ix).check() == []


# -- a commit killed before its garbage collection -----------------------------------------------


def _generation_files(ix: Path) -> set[str]:
    return {f"{d.name}/{f.name}" for d in (ix / "vectors", ix / "structures") for f in d.iterdir()}


def test_repair_removes_the_files_a_commit_killed_before_its_garbage_collection_left(
    built, tmp_path, monkeypatch
):
    ix, _ = built
    before = _generation_files(ix)
    # the insert commits, and is killed before it collects the files it replaced
    monkeypatch.setattr("paretorag.storage.backend.FolderBackend.collect_garbage", lambda *a, **k: [])
    rag = _open(ix)
    rag.index(_corpus(tmp_path / "src", 9)[-1:])
    expected = (_answers(rag), _answers(rag, "g2cons-concept"))
    rag.close()
    monkeypatch.undo()
    m = json.loads((ix / "manifest.json").read_text())
    current = {f"vectors/{m['vectors']}{ext}" for ext in (".npy", ".faiss", ".ids.txt")} | {
        f"structures/{s['dir']}" for s in m["structures"].values()
    }
    left = _generation_files(ix) - current
    assert left and left <= before and current <= _generation_files(ix)

    # a reader still on the previous generation keeps its files
    old_stem = next(f for f in left if f.endswith(".npy"))[len("vectors/") : -len(".npy")]
    old_dirs = [f.partition("/")[2] for f in left if f.startswith("structures/")]
    lease = ix / "readers" / "reader-on-the-old-generation.json"
    lease.parent.mkdir(exist_ok=True)
    lease.write_text(json.dumps({"pid": os.getpid(), "vectors": old_stem, "structures": old_dirs}))
    r = runner.invoke(app, ["repair", "--index", str(ix)])
    assert r.exit_code == 0 and "nothing to repair" in r.output, r.output
    assert _generation_files(ix) == current | left

    lease.unlink()  # that reader is gone
    r = runner.invoke(app, ["repair", "--index", str(ix)])
    assert r.exit_code == 0 and f"removed {len(left)} file(s) of earlier generations" in r.output, r.output
    assert _generation_files(ix) == current
    rag = _open(ix)
    assert (_answers(rag), _answers(rag, "g2cons-concept")) == expected
    assert rag.check() == []
    assert rag.repair().removed == []  # nothing left the next time
