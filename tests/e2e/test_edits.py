"""Edited files replace their old version: a document is its path (or --id); `index` reports
"added, updated, unchanged, removed"; --prune removes documents whose files are gone; a
SIGKILL between the two halves of a replacement leaves exactly one version answering."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app

runner = CliRunner()
PAUSE_ENV = "PARETORAG_TEST_PAUSE_AT"  # paretorag.cancel.pause_point
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

OLD = "Otters eat crabs and clams in the kelp forest."
NEW = "Otters now eat sea urchins, which keeps the kelp forest alive."
BADGERS = "Badgers dig setts under old oak trees."


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "notes"
    src.mkdir()
    (src / "otters.txt").write_text(OLD)
    (src / "badgers.txt").write_text(BADGERS)
    return src


def _index(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["index", *args])
    return r.exit_code, r.stdout, r.stderr


def _texts(ix: Path, method: str = "vanilla", question: str = "what do otters eat") -> list[str]:
    """The passages the committed index answers with (k above the chunk count: vanilla gives all)."""
    args = ["--index", str(ix), "-m", method, "-k", "50", "--json", "--context-only"]
    r = runner.invoke(app, ["query", question, *args])
    assert r.exit_code == 0, r.output
    return [c["text"] for c in json.loads(r.stdout)["contexts"]]


def _report(stdout: str) -> str:
    return stdout.split(";")[0].strip()


def test_an_edited_file_replaces_its_old_version(tmp_path):
    src, ix = _folder(tmp_path), tmp_path / "ix"
    code, out, err = _index(str(src), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla,bm25")
    assert code == 0, err
    assert _report(out) == "added 2, updated 0, unchanged 0, removed 0"
    assert sorted(_texts(ix)) == sorted([OLD, BADGERS])
    assert _texts(ix, "bm25", "crabs clams") == [OLD]

    (src / "otters.txt").write_text(NEW)
    code, out, err = _index(str(src), "--index", str(ix))
    assert code == 0, err
    assert _report(out) == "added 0, updated 1, unchanged 1, removed 0"
    assert "index has 2 documents" in out
    assert sorted(_texts(ix)) == sorted([NEW, BADGERS])  # the old text answers no more
    assert OLD not in _texts(ix, "bm25", "crabs clams")  # the keyword structure is rebuilt too
    assert _texts(ix, "bm25", "sea urchins")[0] == NEW

    code, out, _ = _index(str(src), "--index", str(ix))  # nothing changed
    assert code == 0 and _report(out) == "added 0, updated 0, unchanged 2, removed 0"
    assert out.rstrip().endswith("nothing to do")

    (src / "otters.txt").write_text(OLD)  # back to the first version, named by its own path
    code, out, _ = _index(str(src / "otters.txt"), "--index", str(ix))
    assert code == 0 and _report(out) == "added 0, updated 1, unchanged 0, removed 0"
    assert sorted(_texts(ix)) == sorted([OLD, BADGERS])
    with RAG.open(ix, create=False) as rag:
        assert rag.store.pending_deletes() == [] and len(rag.store.all_document_ids()) == 2


def test_a_file_that_cannot_be_read_keeps_its_stored_version(tmp_path):
    src, ix = _folder(tmp_path), tmp_path / "ix"
    assert _index(str(src), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla")[0] == 0
    (src / "otters.txt").write_bytes(b"\x00\x01 not text any more")
    code, out, err = _index(str(src), "--index", str(ix), "--prune")
    assert code == 3 and "otters.txt: looks binary" in err
    assert _report(out) == "added 0, updated 0, unchanged 1, removed 0"
    assert sorted(_texts(ix)) == sorted([OLD, BADGERS])


def test_prune_removes_documents_whose_files_are_gone(tmp_path):
    src, ix = _folder(tmp_path), tmp_path / "ix"
    assert _index(str(src), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla")[0] == 0
    elsewhere = tmp_path / "elsewhere.txt"  # outside the folder: never pruned by it
    elsewhere.write_text("Herons stand still in shallow water.")
    assert _index(str(elsewhere), "--index", str(ix))[0] == 0
    (src / "badgers.txt").unlink()
    elsewhere.unlink()

    code, out, _ = _index(str(src), "--index", str(ix))  # without --prune: kept
    assert code == 0 and _report(out) == "added 0, updated 0, unchanged 1, removed 0"
    assert BADGERS in _texts(ix)

    code, out, err = _index(str(src), "--index", str(ix), "--prune")
    assert code == 0, err
    assert _report(out) == "added 0, updated 0, unchanged 1, removed 1" and "index has 2 documents" in out
    texts = _texts(ix)
    assert BADGERS not in texts and OLD in texts and "Herons stand still in shallow water." in texts

    (src / "otters.txt").unlink()  # the folder's last file: pruned too, though nothing is left to read
    code, out, err = _index(str(src), "--index", str(ix), "--prune")
    assert code == 0, err
    assert _report(out) == "added 0, updated 0, unchanged 0, removed 1" and "index has 1 documents" in out
    for extra in ([], ["--prune"]):  # an empty folder is an error, unless something is pruned
        code, _, err = _index(str(src), "--index", str(ix), *extra)
        assert code == 2 and "nothing to index" in err and "has no usable file" in err


def test_id_names_the_document_instead_of_its_path(tmp_path):
    ix = tmp_path / "ix"
    draft, final = tmp_path / "draft.txt", tmp_path / "final.txt"
    draft.write_text(OLD)
    final.write_text(NEW)
    args = ["--index", str(ix), "--embedder", "hash", "--methods", "vanilla"]
    code, out, err = _index(str(draft), "--id", "otter-report", *args)
    assert code == 0 and _report(out) == "added 1, updated 0, unchanged 0, removed 0", err
    code, out, err = _index(str(final), "--id", "otter-report", "--index", str(ix))
    assert code == 0 and _report(out) == "added 0, updated 1, unchanged 0, removed 0", err
    assert _texts(ix) == [NEW]
    code, out, err = _index(str(draft), "--index", str(ix))  # by its path: another document
    assert code == 0 and _report(out) == "added 1, updated 0, unchanged 0, removed 0"
    assert sorted(_texts(ix)) == sorted([OLD, NEW])

    r = runner.invoke(app, ["delete", "otter-report", "--index", str(ix)])  # the --id names it
    assert r.exit_code == 0 and "deleted 1 document(s); 1 remain" in r.output, r.output
    assert _texts(ix) == [OLD]
    r = runner.invoke(app, ["delete", str(draft), "--index", str(ix)])  # and a file's path
    assert r.exit_code == 0 and "deleted 1 document(s); 0 remain" in r.output, r.output

    code, _, err = _index(str(tmp_path), "--id", "x", "--index", str(tmp_path / "ix2"))
    assert code == 2 and "--id 'x' names one document: give exactly one file with it" in " ".join(err.split())


def test_delete_takes_the_path_as_given_to_index_or_the_id(tmp_path, monkeypatch):
    """`delete more/otters.md` names what `index more/` stored, also after an edit (the
    document id, a content hash, changed), indexed with --id, or stored before keys."""
    monkeypatch.chdir(tmp_path)
    more = Path("more")
    more.mkdir()
    (more / "otters.md").write_text(OLD)
    (more / "badgers.md").write_text(BADGERS)
    (more / "herons.md").write_text("Herons stand still in shallow water.")
    assert _index("more", "--index", "ix", "--embedder", "hash", "--methods", "vanilla")[0] == 0
    (more / "otters.md").write_text(NEW)  # edited: a new document id, the same path
    assert _index("more", "--index", "ix")[0] == 0
    r = runner.invoke(app, ["delete", "more/otters.md", "--index", "ix"])
    assert r.exit_code == 0 and "deleted 1 document(s); 2 remain" in r.stdout, r.output
    assert NEW not in _texts(Path("ix"))

    assert _index("more/otters.md", "--id", "otter-report", "--index", "ix")[0] == 0
    r = runner.invoke(app, ["delete", "more/otters.md", "--index", "ix"])  # the file it was read from
    assert r.exit_code == 0 and "deleted 1 document(s); 2 remain" in r.stdout, r.output

    with sqlite3.connect(Path("ix") / "index.sqlite") as db:  # as an older paretorag stored them
        db.execute("UPDATE documents SET doc_key=NULL")
    r = runner.invoke(app, ["delete", str((more / "badgers.md").resolve()), "--index", "ix"])
    assert r.exit_code == 0 and "deleted 1 document(s); 1 remain" in r.stdout, r.output

    r = runner.invoke(app, ["delete", "more/otters.md", "--index", "ix"])  # already gone
    assert r.exit_code == 2 and "unknown document ids: more/otters.md" in r.stderr
    assert "the --id it was indexed with, or its file's path" in " ".join(r.stderr.split())


def test_a_corpus_file_is_replaced_record_by_record(tmp_path):
    corpus, ix = tmp_path / "corpus.jsonl", tmp_path / "ix"
    rows = [{"title": f"T{i}", "text": f"Passage {i} about the river delta."} for i in range(4)]
    corpus.write_text("\n".join(json.dumps(r) for r in rows))
    assert _index(str(corpus), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla")[0] == 0
    rows[1]["text"] = "Passage 1 now about the mountain pass."
    corpus.write_text("\n".join(json.dumps(r) for r in rows[:3]))  # one edited, one dropped
    code, out, err = _index(str(corpus), "--index", str(ix))
    assert code == 0, err
    assert _report(out) == "added 0, updated 1, unchanged 2, removed 1"
    assert sorted(_texts(ix)) == sorted(r["text"] for r in rows[:3])


def test_an_index_made_before_keys_is_updated_by_source(tmp_path):
    src, ix = _folder(tmp_path), tmp_path / "ix"
    assert _index(str(src), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla")[0] == 0
    with sqlite3.connect(ix / "index.sqlite") as db:  # as an older paretorag stored them
        db.execute("UPDATE documents SET doc_key=NULL")
    (src / "otters.txt").write_text(NEW)
    code, out, err = _index(str(src), "--index", str(ix))
    assert code == 0 and _report(out) == "added 0, updated 1, unchanged 1, removed 0", err
    assert sorted(_texts(ix)) == sorted([NEW, BADGERS])


def test_a_database_without_the_key_column_gets_it(tmp_path):
    from paretorag.storage.store import SCHEMA, Store

    old_schema = SCHEMA.replace(",\n    doc_key TEXT", "")
    assert old_schema != SCHEMA
    with sqlite3.connect(tmp_path / Store.FILENAME) as db:
        db.executescript(old_schema)
        db.execute(
            "INSERT INTO documents(doc_id,title,source,text,presplit,n_chars) VALUES ('d1','a','a.txt','x',0,1)"
        )
    store = Store(tmp_path)
    assert store.keyed_documents() == [("d1", None, "a.txt", False, False)]
    store.close()


def _killed_update(ix: Path, src: Path, point: str) -> int:
    """Run `paretorag index` on the edited folder and SIGKILL it at ``point``; its pid."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", "index", str(src), "--index", str(ix)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**ENV, PAUSE_ENV: point},
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        reached = False
        for line in proc.stderr:
            if line.startswith(f"paretorag: paused at {point}"):
                reached = True
                break
            if time.monotonic() > deadline:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert reached, f"the indexer never reached {point}"
    return proc.pid


@pytest.mark.parametrize(
    ("point", "stored_after_kill"),
    [
        ("mid-replace", False),  # old version marked deleted, new one not stored: rolled back
        ("before-commit", True),  # both halves stored, the manifest not replaced yet
    ],
)
def test_a_kill_between_the_halves_leaves_exactly_one_version(tmp_path, point, stored_after_kill):
    src, ix = _folder(tmp_path), tmp_path / "ix"
    assert _index(str(src), "--index", str(ix), "--embedder", "hash", "--methods", "vanilla")[0] == 0
    (src / "otters.txt").write_text(NEW)
    _killed_update(ix, src, point)

    texts = _texts(ix)  # the committed index answers with the old version only
    assert sorted(texts) == sorted([OLD, BADGERS])
    with RAG.open(ix, create=False) as rag:
        assert rag.manifest.counts["documents"] == 2
        assert len(rag.store.pending_deletes()) == (1 if stored_after_kill else 0)
    with sqlite3.connect(ix / "index.sqlite") as db:
        otters = db.execute(
            "SELECT text, deleted FROM documents WHERE title='otters' ORDER BY seq"
        ).fetchall()
    assert otters == ([(OLD, 1), (NEW, 0)] if stored_after_kill else [(OLD, 0)])

    code, out, err = _index(str(src), "--index", str(ix))  # the next run finishes the update
    assert code == 0, err
    resumed = " (resumed)" if stored_after_kill else ""
    assert _report(out) == f"added 0, updated 1, unchanged 1, removed 0{resumed}"
    assert sorted(_texts(ix)) == sorted([NEW, BADGERS])
    with sqlite3.connect(ix / "index.sqlite") as db:
        assert db.execute("SELECT text FROM documents WHERE title='otters'").fetchall() == [(NEW,)]


def test_the_python_api_reports_the_same_counts(tmp_path):
    src = _folder(tmp_path)
    with RAG.open(tmp_path / "ix", embedder="hash:32", methods=["vanilla"]) as rag:
        first = rag.index([src])
        assert (first.added, first.updated, first.unchanged, first.removed) == (2, 0, 0, 0)
        (src / "otters.txt").write_text(NEW)
        (src / "badgers.txt").unlink()
        again = rag.index([src], prune=True)
        assert (again.added, again.updated, again.unchanged, again.removed) == (0, 1, 0, 1)
        assert [c.text for c in rag.query("otters", context_only=True, k=10).contexts] == [NEW]
        keyed = rag.index([src / "otters.txt"], key="otters")  # a new key: a new document
        assert (keyed.added, keyed.unchanged) == (0, 1)  # same text: stored once, under its path
