"""A real `paretorag serve` on 127.0.0.1, SIGKILLed while a write job runs: the restarted
server resumes the job from the index's jobs table, the same job id ends `done`, and the
index equals the one the same requests build without a crash (documents, chunk ids, vectors).

The server is held at a named point of the job (``PARETORAG_TEST_PAUSE_AT``, see
:func:`paretorag.cancel.pause_point`) and killed there; the restart runs in this process
(a second `paretorag serve` start costs seconds on a loaded machine), except in the
600-record test, which starts the same command again and reads its start-up log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder
from paretorag.server import create_app

from ..server_util import build_index, free_port, live_server, wait_healthy, write_corpus

PAUSE_ENV = "PARETORAG_TEST_PAUSE_AT"  # paretorag.cancel.pause_point
POINTS = ["before-embedding", "mid-embedding", "before-commit"]
N_RECORDS = 100  # two embedding batches of 64: "mid-embedding" falls between them
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _records(n: int, tag: str) -> list[dict[str, str]]:
    return [
        {"title": f"{tag} {i}", "text": f"{tag} record {i} tells of river {i % 7} and stone {i % 5}."}
        for i in range(n)
    ]


def _jsonl(records: list[dict[str, str]]) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crash-base")
    return build_index(root / "ix", write_corpus(root / "src"))


def _copy(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest)
    return dest


def _victim_doc(base: Path) -> str:
    with RAG.open(base, create=False) as rag:
        return str(rag.documents()[1]["doc_id"])


class Server:
    """`paretorag serve` as a child process; stderr read by a thread; killed at the end
    (or after ``limit_s`` at the latest)."""

    def __init__(self, index: Path, pause: str | None = None, limit_s: float = 120.0) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**ENV, PAUSE_ENV: pause} if pause else {k: v for k, v in ENV.items() if k != PAUSE_ENV}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paretorag.cli", "serve", "--index", str(index), "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._paused = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        self._guard = threading.Timer(limit_s, self.kill)
        self._guard.daemon = True
        self._guard.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("paretorag: paused at"):
                self._paused.set()

    def kill_when_paused(self, timeout: float = 60.0) -> None:
        if not self._paused.wait(timeout):
            self.kill()
            raise AssertionError("the server never reached its pause point:\n" + "".join(self.lines[-30:]))
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._guard.cancel()

    def __enter__(self) -> Server:
        try:
            wait_healthy(self.base, 90)
        except RuntimeError:
            self.kill()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def _submit(base_url: str, kind: str, victim: str, wait: float = 0.0) -> str:
    """Send one write of ``kind``; returns its job id."""
    q = f"?wait={wait}" if wait else ""
    if kind == "records":
        r = httpx.post(f"{base_url}/documents{q}", json=_records(N_RECORDS, "rec"), timeout=60)
    elif kind == "upload":
        files = [("files", ("corpus.jsonl", _jsonl(_records(N_RECORDS, "file")), "application/json"))]
        r = httpx.post(f"{base_url}/documents{q}", files=files, timeout=60)
    else:
        r = httpx.delete(f"{base_url}/documents/{victim}{q}", timeout=60)
    assert r.status_code in (200, 202), r.text
    return str(r.json()["job"]["id"])


def _steps(kind: str, point: str) -> list[str]:
    """The writes of a scenario. A delete computes no vector, so in the mid-embedding case
    it is accepted behind an insert that is killed mid-embedding."""
    if kind == "delete" and point == "mid-embedding":
        return ["records", "delete"]
    return [kind]


def _wait_done(base_url: str, job_id: str, seconds: float = 60.0) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        snap = httpx.get(f"{base_url}/jobs/{job_id}", timeout=10).json()
        if snap["state"] in ("done", "failed"):
            return snap
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {snap}")


def _state(index: Path):
    with RAG.open(index, create=False, embedder=HashEmbedder(64)) as rag:
        view = rag.view
        docs = [(d["doc_id"], d["title"], d["source"], d["n_chunks"]) for d in rag.store.documents()]
        matrix = view.vectors.matrix.copy() if view.vectors is not None else None
        return docs, list(view.chunks.ids), matrix, rag.store.pending_deletes()


@pytest.fixture(scope="module")
def references(base, tmp_path_factory):
    """The index each scenario's writes build without a crash (the same API, in order)."""
    out = {}
    victim = _victim_doc(base)
    for steps in (["records"], ["upload"], ["delete"], ["records", "delete"]):
        ix = _copy(base, tmp_path_factory.mktemp("ref") / "ix")
        with live_server(create_app(ix)) as url:
            for kind in steps:
                assert _wait_done(url, _submit(url, kind, victim, wait=60))["state"] == "done"
        out["+".join(steps)] = _state(ix)
    return out


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("kind", ["records", "upload", "delete"])
def test_sigkill_at_each_point_then_restart_ends_done_and_equal(tmp_path, base, references, kind, point):
    ix = _copy(base, tmp_path / "ix")
    victim = _victim_doc(base)
    steps = _steps(kind, point)
    with Server(ix, pause=point) as srv:
        jobs = [_submit(srv.base, step, victim) for step in steps]
        srv.kill_when_paused()
    # nothing committed by the killed job; its work is stored and named
    with RAG.open(ix, create=False) as rag:
        pending = rag.stats()["pending"]
    assert [j["job_id"] for j in pending["jobs"]] == jobs
    with live_server(create_app(ix)) as url:
        for job_id in jobs:
            snap = _wait_done(url, job_id)
            assert snap["state"] == "done" and snap["resumed"], snap
        first = httpx.get(f"{url}/jobs/{jobs[0]}").json()["result"]
    if steps[0] != "delete":
        assert first["added"] == N_RECORDS and first["unchanged"] == 0
    else:
        assert first["deleted"] == [victim]
    if steps == [kind] and kind != "delete":  # the vectors the killed run cached are not computed again
        calls = json.loads((ix / "manifest.json").read_text())["model_calls"]["vectors"]
        computed = {"before-embedding": N_RECORDS, "mid-embedding": N_RECORDS - 64, "before-commit": 0}
        assert calls.get("embed_texts", 0) == computed[point], calls
    docs, ids, matrix, pending_deletes = _state(ix)
    ref_docs, ref_ids, ref_matrix, _ = references["+".join(steps)]
    assert docs == ref_docs and ids == ref_ids and not pending_deletes
    np.testing.assert_array_equal(matrix, ref_matrix)
    assert not (ix / "uploads").exists() or not any((ix / "uploads").iterdir())


def test_600_records_killed_while_embedding_resume_under_the_same_id(tmp_path, base):
    ix = _copy(base, tmp_path / "ix")
    records = _records(600, "tiny")
    with Server(ix, pause="mid-embedding") as srv:
        r = httpx.post(f"{srv.base}/documents", json=records, timeout=60)
        assert r.status_code == 202
        job_id = r.json()["job"]["id"]
        srv.kill_when_paused()
    with Server(ix) as srv:  # the same command again
        snap = _wait_done(srv.base, job_id)
        log = "".join(srv.lines)
        restarted = httpx.get(f"{srv.base}/jobs/{job_id}").json()
    assert f"resuming job {job_id}: 600 documents" in log
    assert snap["state"] == "done" and snap["resumed"] and snap["result"]["added"] == 600
    assert restarted["id"] == job_id and restarted["state"] == "done"
    with RAG.open(ix, create=False, embedder=HashEmbedder(64)) as rag:
        view = rag.view
        titles = {d["title"] for d in rag.documents()}
        assert {r["title"] for r in records} <= titles and len(titles) == 606
        assert rag.stats()["pending"]["documents"] == [] and rag.stats()["pending"]["jobs"] == []
        # every committed chunk holds its own vector, row for row
        assert view.vectors is not None and len(view.vectors.matrix) == len(view.chunks.ids)
        expected = HashEmbedder(64).embed(view.chunks.embedded_texts(rag.manifest.config.embed_titles))
        np.testing.assert_allclose(view.vectors.matrix, expected, rtol=1e-6, atol=1e-6)
