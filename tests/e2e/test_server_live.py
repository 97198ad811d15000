"""A real uvicorn on 127.0.0.1: queries from several clients while an insert and a delete run,
a second writer refused or waiting, the result equal to a sequential build; `paretorag serve`
itself with keys (none of which reaches the log)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

import httpx

from paretorag import RAG, HashEmbedder
from paretorag.ingest.files import make_document
from paretorag.server import create_app

from ..server_util import build_index, free_port, live_server, wait_healthy, write_corpus

HERE = Path(__file__).parents[1]  # the helper scripts stay in tests/
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
NEW = [
    (f"Pond {i}", f"Pond {i} holds newts number {i}, frogs and dragonfly larvae near lily {i}.")
    for i in range(30)
]
QUESTIONS = [
    "Which pond holds newts number 7?",
    "What do otters eat?",
    "Where do herons wade?",
    "lily 12 frogs",
]


class GatedEmbedder(HashEmbedder):
    """The hash embedder, except that a batch of several texts (an insert, never a query)
    waits for ``gate``: the test decides how long the writer stays inside its write."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) > 1:
            self.entered.set()
            self.gate.wait(60)
        return super().embed(texts)


def _contexts(rag: RAG) -> dict[str, list[str]]:
    return {q: [c.chunk_id for c in rag.query(q, k=3, context_only=True).contexts] for q in QUESTIONS}


def _references(tmp: Path, sources: list[Path], deleted: str) -> list[dict[str, list[str]]]:
    """What each committed generation answers, from sequential builds."""
    ref = build_index(tmp / "ref", sources)
    out = []
    with RAG.open(ref, create=False) as rag:
        out.append(_contexts(rag))
        rag.insert([make_document(t, x, f"api#{i}", presplit=True) for i, (t, x) in enumerate(NEW)])
        out.append(_contexts(rag))
        rag.delete([deleted])
        out.append(_contexts(rag))
    return out


def test_queries_keep_answering_while_an_insert_and_a_delete_run(tmp_path):
    sources = write_corpus(tmp_path / "src")
    ix = build_index(tmp_path / "ix", sources)
    with RAG.open(ix, create=False) as rag:
        herons = next(d["doc_id"] for d in rag.documents() if d["title"] == "herons")
    expected = _references(tmp_path, sources, herons)
    assert expected[0] != expected[1] != expected[2]  # the test can tell generations apart

    embedder = GatedEmbedder(64)
    app = create_app(ix, embedder=embedder, readers=3)
    answers: list[tuple[str, list[str]]] = []
    failures: list[str] = []
    stop = threading.Event()

    def reader(n: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            i = n
            while not stop.is_set():
                q = QUESTIONS[i % len(QUESTIONS)]
                i += 1
                try:
                    r = http.post("/query", json={"question": q, "k": 3, "context_only": True})
                except httpx.HTTPError as exc:
                    failures.append(f"{q}: {exc!r}")
                    continue
                if r.status_code != 200:
                    failures.append(f"{q}: {r.status_code} {r.text[:200]}")
                else:
                    answers.append((q, [c["chunk_id"] for c in r.json()["contexts"]]))

    with live_server(app, limit_s=150) as base:
        threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        http = httpx.Client(base_url=base, timeout=30)
        records = [{"title": t, "text": x} for t, x in NEW]
        job = http.post("/documents", json=records).json()["job"]
        assert embedder.entered.wait(30), "the insert did not reach its embedding step"
        # a second writer (the CLI) is refused while the server's insert holds the lock
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "paretorag.cli",
                "insert",
                str(sources[0]),
                "--index",
                str(ix),
                "--no-wait",
            ],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=120,
        )
        assert cli.returncode == 2 and f"pid {os.getpid()}" in cli.stderr, cli.stderr
        assert http.get(f"/jobs/{job['id']}").json()["state"] == "running"
        time.sleep(0.5)  # queries keep coming while the writer is inside its write
        embedder.gate.set()
        done = _wait(http, job["id"])
        assert done["state"] == "done" and done["result"]["added"] == len(NEW), done
        time.sleep(0.5)
        # the server's delete waits for another process holding the lock, and says for whom
        holder = subprocess.Popen(
            [sys.executable, str(HERE / "writer_child.py"), "hold", str(ix), "2"],
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        delete = http.delete(f"/documents/{herons}").json()["job"]
        seen_waiting = ""
        for _ in range(600):
            snap = http.get(f"/jobs/{delete['id']}").json()
            if snap["state"] == "waiting":
                seen_waiting = snap["waiting_for"]
            if snap["state"] in ("done", "failed"):
                break
            time.sleep(0.05)
        holder.wait(30)
        assert snap["state"] == "done", snap
        assert f"pid {holder.pid}" in seen_waiting
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(30)
        http.close()

    assert failures == []
    assert len(answers) > 50
    served = {g: 0 for g in range(3)}
    for q, ids in answers:
        gens = [g for g in range(3) if expected[g][q] == ids]
        assert gens, f"{q}: {ids} matches no committed generation"
        served[gens[-1]] += 1
    assert served[0] and served[2]  # queries were answered before the insert and after the delete
    with RAG.open(ix, create=False) as got, RAG.open(tmp_path / "ref", create=False) as ref:
        assert [d["doc_id"] for d in got.documents()] == [d["doc_id"] for d in ref.documents()]
        assert got.view.chunks.ids == ref.view.chunks.ids
        assert got.manifest.vectors == ref.manifest.vectors
        a = np.load(ix / "vectors" / f"{got.manifest.vectors}.npy")
        b = np.load(tmp_path / "ref" / "vectors" / f"{ref.manifest.vectors}.npy")
        assert np.array_equal(a, b)
        assert _contexts(got) == _contexts(ref)


def _wait(http: httpx.Client, job_id: str) -> dict:
    for _ in range(600):
        snap = http.get(f"/jobs/{job_id}").json()
        if snap["state"] in ("done", "failed"):
            return snap
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish in 30 s: {snap}")


def test_serve_command_with_keys_never_logs_them(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    key_ro, key_rw = "ro-0123456789abcdefXYZ", "rw-0123456789abcdefXYZ"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", "serve", "--index", str(ix), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**ENV, "PARETORAG_API_KEYS": f"ro:{key_ro},{key_rw}"},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, 90)
        # a busy machine can take seconds to answer the first request: no 5 s default timeout
        assert httpx.post(base + "/query", json={"question": "otters"}, timeout=60).status_code == 401
        assert (
            httpx.post(
                base + "/query",
                json={"question": "otters"},
                headers={"X-API-Key": "wrong-0123456789abcdef"},
                timeout=60,
            ).status_code
            == 401
        )
        r = httpx.post(
            base + "/query",
            json={"question": "otters"},
            headers={"Authorization": f"Bearer {key_ro}"},
            timeout=60,
        )
        assert r.status_code == 200 and r.json()["contexts"]
        r = httpx.post(
            base + "/documents", json={"title": "t", "text": "x y"}, headers={"X-API-Key": key_ro}, timeout=60
        )
        assert r.status_code == 403
        r = httpx.post(
            base + "/documents?wait=30",
            json={"title": "t", "text": "x y"},
            headers={"X-API-Key": key_rw},
            timeout=60,
        )
        assert r.status_code == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "2 API key(s) (1 read-only)" in out and "POST /query" in out  # the access log ran
    assert key_ro not in out and key_rw not in out and "wrong-0123456789abcdef" not in out
