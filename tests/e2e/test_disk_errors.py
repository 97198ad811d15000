"""A full disk, a read-only folder and a damaged database give one-line errors, and nothing is
committed half-way; a failed first index leaves no folder behind."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

import paretorag.storage.manifest
from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import IndexFormatError, InputError, StorageError

runner = CliRunner()


def _corpus(root: Path, start: int, n: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(start, start + n):
        out.append(root / f"doc{i}.txt")
        out[-1].write_text(" ".join(f"Item {i} part {j} speaks of word{i} and lakes {j}." for j in range(10)))
    return out


def _open(path: Path, **kw) -> RAG:
    return RAG.open(path, embedder="hash:32", chunk_size=60, chunk_overlap=10, **kw)


def _manifest(ix: Path) -> dict:
    return json.loads((ix / "manifest.json").read_text())


@pytest.fixture
def ix(tmp_path):
    path = tmp_path / "ix"
    with _open(path, methods=["vanilla", "g2cons-concept"]) as rag:
        rag.index(_corpus(tmp_path / "a", 0, 4))
    return path


def _refuse(code: int):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return refuse


@pytest.mark.parametrize(
    ("target", "code", "words"),
    [
        ("structure", errno.ENOSPC, "no space left"),
        ("vectors", errno.ENOSPC, "no space left"),
        ("manifest", errno.EROFS, "read-only file system"),
        ("structure", errno.EACCES, "permission denied"),
    ],
)
def test_a_failed_write_names_cause_and_fix_and_commits_nothing(
    ix, tmp_path, monkeypatch, target, code, words
):
    before = _manifest(ix)
    if target == "structure":
        monkeypatch.setattr(np, "savez", _refuse(code))
    elif target == "vectors":
        monkeypatch.setattr(np, "save", _refuse(code))
    else:
        monkeypatch.setattr(
            paretorag.storage.manifest, "os", SimpleNamespace(replace=_refuse(code), fsync=os.fsync)
        )
    more = _corpus(tmp_path / "b", 10, 2)
    r = runner.invoke(app, ["insert", *map(str, more), "--index", str(ix)])
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, r.output
    assert len([line for line in r.output.splitlines() if line.startswith("error")]) == 1
    assert _manifest(ix) == before  # the last commit, untouched
    assert not [p for p in ix.rglob("*.tmp")]  # no half-written files left behind
    monkeypatch.undo()
    rag = _open(ix)
    assert rag.insert(more).committed and rag.manifest.counts["documents"] == 6
    assert rag.check() == []


def test_sqlite_disk_full_is_one_line(ix, tmp_path):
    rag = _open(ix)
    pages = rag.store.db.read("PRAGMA page_count")[0][0]
    rag.store.db.read(f"PRAGMA max_page_count={pages}")  # what a full disk looks like to SQLite
    big = tmp_path / "big.txt"
    big.write_text(" ".join(f"word{i}" for i in range(50_000)))
    with pytest.raises(StorageError, match=r"database or disk is full.*free some space"):
        rag.insert([big])
    assert rag.manifest.counts["documents"] == 4 and _manifest(ix)["counts"]["documents"] == 4


def test_a_damaged_database_is_reported_by_query_and_inspect(ix, tmp_path):
    db = ix / "index.sqlite"
    data = bytearray(db.read_bytes())
    for off in range(4096, len(data), 4096):  # every page but the header
        data[off : off + 512] = b"\xff" * 512
    db.write_bytes(bytes(data))
    for f in ix.glob("index.sqlite-*"):
        f.unlink()
    new = _corpus(tmp_path / "b", 10, 1)[0]
    for args in (["query", "lakes", "--context-only"], ["inspect"], ["insert", str(new)]):
        r = runner.invoke(app, [*args, "--index", str(ix)])
        assert r.exit_code == 2 and "is damaged" in r.output and "Traceback" not in r.output, (args, r.output)
        assert "backup" in r.output


def test_garbage_instead_of_a_database(ix):
    (ix / "index.sqlite").write_bytes(b"not a database at all" * 100)
    for f in ix.glob("index.sqlite-*"):
        f.unlink()
    r = runner.invoke(app, ["query", "lakes", "--index", str(ix)])
    assert r.exit_code == 2 and "is damaged" in r.output and "Traceback" not in r.output, r.output


# -- item 7 -------------------------------------------------------------------------------


def test_a_failed_first_index_leaves_no_folder(tmp_path):
    r = runner.invoke(app, ["index", str(tmp_path / "missing.txt"), "--index", str(tmp_path / "new")])
    assert r.exit_code == 2 and "does not exist" in r.output
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(InputError):
        _open(tmp_path / "new2").index([tmp_path / "empty.txt"])
    assert not (tmp_path / "new2").exists()
    (tmp_path / "kept").mkdir()  # a folder the user made is left alone
    with pytest.raises(InputError):
        _open(tmp_path / "kept").index([tmp_path / "empty.txt"])
    assert (tmp_path / "kept").is_dir()


def test_querying_an_index_without_documents_says_so(tmp_path):
    rag = _open(tmp_path / "ix")
    with pytest.raises(IndexFormatError, match=r"no committed documents.*paretorag index"):
        rag.query("anything")
    r = runner.invoke(app, ["query", "anything", "--index", str(tmp_path / "ix")])
    assert r.exit_code == 2 and "no committed documents" in r.output
