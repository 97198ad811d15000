"""Writers exclude each other through the writer lock; readers survive commits and follow them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import IndexLockedError
from paretorag.progress import NullProgress
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.lock import WriterLock

HERE = Path(__file__).parents[1]  # the helper scripts stay in tests/
WRITER_CHILD = HERE / "writer_child.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _corpus(root: Path, start: int, n: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(start, start + n):
        text = " ".join(f"Item {i} part {j} speaks of word{i} and lakes {j}." for j in range(10))
        out.append(root / f"doc{i:03d}.txt")
        out[-1].write_text(text)
    return out


def _open(path: Path, **kw) -> RAG:
    return RAG.open(path, embedder=HashEmbedder(32), chunk_size=60, chunk_overlap=10, **kw)


def _holder(index_dir: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER_CHILD), "hold", str(index_dir), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_writer_fails_with_no_wait_naming_the_holder(tmp_path):
    ix = tmp_path / "ix"
    docs = _corpus(tmp_path / "src", 0, 3)
    _open(ix).index(docs[:1])
    holder = _holder(ix, 30)
    try:
        rag = _open(ix, wait=False)
        with pytest.raises(IndexLockedError, match=f"pid {holder.pid}"):
            rag.insert(docs[1:])
        r = CliRunner().invoke(app, ["insert", str(docs[2]), "--index", str(ix), "--no-wait"])
        assert r.exit_code == 2 and f"pid {holder.pid}" in r.output, r.output
        assert rag.store.counts()["documents"] == 1  # nothing was written
    finally:
        holder.kill()
        holder.wait()
    assert rag.insert(docs[1:]).added == 2  # the OS released the lock of the killed holder


def test_a_waiting_writer_says_whom_it_waits_for_then_writes(tmp_path):
    ix = tmp_path / "ix"
    docs = _corpus(tmp_path / "src", 0, 2)
    rag = _open(ix)
    rag.index(docs[:1])
    messages: list[str] = []
    waiting = _open(ix, on_wait=messages.append, wait=20)
    holder = _holder(ix, 1.5)
    t0 = time.perf_counter()
    report = waiting.insert(docs[1:])
    assert time.perf_counter() - t0 > 0.5 and report.added == 1
    assert len(messages) == 1 and f"waiting for pid {holder.pid}" in messages[0]
    holder.wait()


class _PauseInStructures:
    """A progress that stops the writer inside its structure stage (after its vectors are
    written, before its manifest) until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def task(self, description, total):
        if description.startswith("embedding for"):  # the concept graph embeds its sentences
            self.reached.set()
            self.release.wait(30)
        return NullProgress().task(description, total)


def test_two_concurrent_writers_both_commit_and_the_index_stays_whole(tmp_path):
    ix = tmp_path / "ix"
    a = _corpus(tmp_path / "a", 0, 6)
    b = _corpus(tmp_path / "b", 100, 6)
    _open(ix, methods=["g2cons-concept"]).index(_corpus(tmp_path / "base", 200, 2))
    pause = _PauseInStructures()
    first = threading.Thread(target=lambda: _open(ix).insert(a, progress=pause))
    first.start()
    assert pause.reached.wait(30)
    second = threading.Thread(target=lambda: _open(ix).insert(b))
    second.start()
    second.join(1.0)
    assert second.is_alive()  # waits for the first writer instead of committing under it
    pause.release.set()
    first.join(60)
    second.join(60)
    rag = _open(ix)
    stem = rag.manifest.vectors
    assert all((ix / "vectors" / f"{stem}{ext}").exists() for ext in (".npy", ".faiss", ".ids.txt"))
    assert rag.manifest.counts["documents"] == 14
    assert len(rag.query("word105 lakes", context_only=True, k=3).contexts) == 3
    assert len(rag.query("word105 lakes", method="g2cons-concept", context_only=True).contexts) > 0
    assert rag.check() == []


def test_readers_survive_commits_and_see_the_new_generation(tmp_path):
    ix = tmp_path / "ix"
    _open(ix).index(_corpus(tmp_path / "base", 0, 3))
    new = _corpus(tmp_path / "new", 100, 8)
    long_lived = _open(ix)
    assert long_lived.query("lakes", context_only=True).contexts
    writer = subprocess.Popen(
        [sys.executable, str(WRITER_CHILD), "insert-each", str(ix), *map(str, new)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    errors: list[BaseException] = []
    queries = [0]

    def read_loop() -> None:
        while writer.poll() is None:
            try:
                with RAG.open(ix, embedder=HashEmbedder(32), create=False) as fresh:  # like `paretorag query`
                    fresh.query("word104 lakes", context_only=True)
                long_lived.query("word104 lakes", context_only=True)
                queries[0] += 1
            except Exception as exc:  # noqa: BLE001 - any failure of a reader is the bug under test
                errors.append(exc)
                return

    readers = [threading.Thread(target=read_loop) for _ in range(2)]
    for t in readers:
        t.start()
    assert writer.stdout is not None
    commits = writer.stdout.read().split()
    assert writer.wait(timeout=120) == 0 and commits.count("commit") == 8
    for t in readers:
        t.join()
    assert errors == [] and queries[0] > 5
    # the long-lived reader follows the commits without being reopened
    titles = {c.title for c in long_lived.query("word104 lakes", context_only=True, k=100).contexts}
    assert {f"doc{i}" for i in range(100, 108)} <= titles
    assert long_lived.manifest.counts["documents"] == 11


def test_a_reader_keeps_its_generation_until_it_moves_on(tmp_path):
    ix = tmp_path / "ix"
    docs = _corpus(tmp_path / "src", 0, 5)
    _open(ix).index(docs[:2])
    reader = _open(ix)
    first = reader.view.manifest.vectors
    writer = _open(ix)

    def stems() -> set[str]:
        return {p.name.removesuffix(".npy") for p in (ix / "vectors").glob("*.npy")}

    writer.insert(docs[2:3])
    assert first in stems()  # the reader's lease keeps it
    reader.query("lakes", context_only=True)  # moves to the new generation
    second = reader.view.manifest.vectors
    assert second == writer.manifest.vectors != first
    writer.insert(docs[3:4])
    # the generation before stays leased while queries started on it may still run
    assert {first, second} <= stems()
    reader.query("lakes", context_only=True)  # moves again: the first generation is released
    writer.insert(docs[4:])
    assert first not in stems() and second in stems()
    reader.close()
    writer.delete([writer.documents()[-1]["doc_id"]])
    assert sorted(p.name for p in (ix / "vectors").iterdir()) == sorted(
        f"{writer.manifest.vectors}{ext}" for ext in (".npy", ".faiss", ".ids.txt")
    )


def test_lock_is_exclusive_between_threads_of_one_process(tmp_path):
    with WriterLock(tmp_path), pytest.raises(IndexLockedError):
        WriterLock(tmp_path, wait=False).__enter__()
