"""Many servers, one PostgreSQL index: the same answers, writes seen by both, and a job of a
server killed mid-write resumed by the next one (real uvicorn on 127.0.0.1, real PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from paretorag import RAG
from paretorag.server import create_app

from ..server_util import TOPICS, free_port, live_server, wait_healthy, write_corpus

QUESTIONS = [
    "What do otters eat?",
    "How do beavers change streams?",
    "Where do salmon spawn?",
    "Which bird walks underwater?",
]
CLIENTS = 32


def _index(url: str, tmp_path) -> None:
    with RAG.open(url, embedder="hash:64", methods=["vanilla", "fusion"]) as rag:
        rag.index(write_corpus(tmp_path / "src"))


def _ask(base: str, question: str, method: str) -> dict:
    r = httpx.post(
        f"{base}/query", json={"question": question, "method": method, "context_only": True}, timeout=60
    )
    assert r.status_code == 200, r.text
    body = r.json()
    return {"contexts": [(c["chunk_id"], round(c["score"], 5)) for c in body["contexts"]]}


def _load(bases: list[str], method: str) -> tuple[list[dict], int]:
    """``CLIENTS`` clients per server, each asking every question; answers in order, and errors."""
    jobs = [(b, q) for b in bases for _ in range(CLIENTS) for q in QUESTIONS]
    errors = 0
    out: list[dict] = []
    with ThreadPoolExecutor(max_workers=CLIENTS * len(bases)) as pool:
        for result in pool.map(lambda bq: _try(bq[0], bq[1], method), jobs):
            if result is None:
                errors += 1
            else:
                out.append(result)
    return out, errors


def _try(base: str, question: str, method: str) -> dict | None:
    try:
        return {"q": question, **_ask(base, question, method)}
    except (httpx.HTTPError, AssertionError):
        return None


def test_two_servers_on_one_database_answer_alike_and_see_each_others_writes(pg_url, tmp_path):
    _index(pg_url, tmp_path)
    with live_server(create_app(pg_url)) as one:
        alone = {(q, m): _ask(one, q, m) for q in QUESTIONS for m in ("vanilla", "fusion")}
    with live_server(create_app(pg_url)) as a, live_server(create_app(pg_url)) as b:
        for method in ("vanilla", "fusion"):
            answers, errors = _load([a, b], method)
            assert errors == 0
            assert len(answers) == 2 * CLIENTS * len(QUESTIONS)
            for ans in answers:
                assert ans["contexts"] == alone[(ans["q"], method)]["contexts"]
        # a write through one server is seen by the other after its commit
        r = httpx.post(
            f"{a}/documents?wait=60",
            json=[{"title": "Ospreys", "text": "Ospreys plunge feet first into lakes to seize trout."}],
            timeout=90,
        )
        assert r.status_code == 200 and r.json()["job"]["state"] == "done", r.text
        seen = _ask(b, "Which bird plunges feet first for trout?", "vanilla")["contexts"]
        docs = httpx.get(f"{b}/documents", timeout=30).json()["documents"]
        osprey = [d["doc_id"] for d in docs if d["title"] == "Ospreys"]
        assert len(osprey) == 1 and seen[0][0].startswith(osprey[0])
        assert (
            httpx.get(f"{b}/healthz").json()["generation"] == httpx.get(f"{a}/healthz").json()["generation"]
        )


def _job_of_a_killed_server(pg_url: str, send, **env: str) -> str:
    """Start `paretorag serve` on ``pg_url`` held at before-commit, ``send(base)`` one write
    (202), SIGKILL it once the job reached the pause point; returns the job id."""
    port = free_port()
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "PARETORAG_TEST_PAUSE_AT": "before-commit",
        **env,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", "serve", "--index", pg_url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    paused = threading.Event()
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "paused at before-commit" in line:
                paused.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, 90)
        r = send(base)
        assert r.status_code == 202, r.text
        assert paused.wait(60), "".join(lines[-30:])
        return str(r.json()["job"]["id"])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)


def _finished(url: str, job: str, seconds: float = 60.0) -> dict:
    deadline = time.monotonic() + seconds
    while (snap := httpx.get(f"{url}/jobs/{job}").json())["state"] not in ("done", "failed"):
        assert time.monotonic() < deadline, snap
        time.sleep(0.05)
    return snap


def test_a_server_killed_mid_job_leaves_it_to_the_next_server(pg_url, tmp_path):
    _index(pg_url, tmp_path)
    records = [{"title": f"Note {i}", "text": f"Note {i} is about pond {i} and its frogs."} for i in range(5)]
    job = _job_of_a_killed_server(
        pg_url, lambda base: httpx.post(f"{base}/documents", json=records, timeout=60)
    )
    with RAG.open(pg_url, create=False) as rag:
        assert rag.manifest.counts["documents"] == len(TOPICS)  # nothing of the job committed
        assert [j["job_id"] for j in rag.stats()["pending"]["jobs"]] == [job]
    with live_server(create_app(pg_url)) as url:
        snap = _finished(url, job)
        assert snap["state"] == "done" and snap["resumed"], snap
        assert httpx.get(f"{url}/stats").json()["counts"]["documents"] == len(TOPICS) + 5


def test_a_job_run_by_a_live_server_on_another_host_is_left_to_it(pg_url, tmp_path):
    """Server B starting does not take a job that server A, on another host and alive, owns
    (A's presence lock in the database says so); once A is gone, the next server resumes it."""
    from paretorag.ingest.files import make_document
    from paretorag.server.service import Service
    from paretorag.storage.jobs import JobTable
    from paretorag.storage.postgres import PostgresBackend

    _index(pg_url, tmp_path)
    other = "another-host:4242"
    a = PostgresBackend(pg_url)
    a.hold_presence(other)  # server A, on another host, is alive
    store = a.open_store()
    doc = make_document(
        "Ospreys", "Ospreys plunge feet first into lakes to seize trout.", "api", presplit=True
    )
    JobTable(store).create("job-a", "insert", {}, {"source": "records", "documents": 1}, [doc])
    with store.transaction() as c:
        c.execute("UPDATE jobs SET owner=? WHERE job_id=?", (other, "job-a"))
    b = Service(pg_url)
    assert any("run by the server another-host:4242; not resumed here" in line for line in b.resumed), (
        b.resumed
    )
    assert b.jobs.get("job-a").state == "queued"
    b.close()
    a.close_presence()  # A dies: the database releases its lock
    c2 = Service(pg_url)
    assert any("resuming job job-a" in line for line in c2.resumed), c2.resumed
    deadline = time.monotonic() + 60
    while c2.jobs.get("job-a").state not in ("done", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert c2.jobs.get("job-a").state == "done"
    c2.close()
    store.close()


def test_an_upload_accepted_on_one_host_is_resumed_on_another(pg_url, tmp_path, monkeypatch):
    """The uploaded file's bytes are stored with the job: a server whose upload folder is
    elsewhere (another host) restores them and finishes the killed server's job."""
    import json

    _index(pg_url, tmp_path)
    records = [{"title": f"Pond {i}", "text": f"Pond {i} has frogs, reeds and {i} herons."} for i in range(4)]
    body = "\n".join(json.dumps(r) for r in records).encode()
    job = _job_of_a_killed_server(
        pg_url,
        lambda base: httpx.post(
            f"{base}/documents", files=[("files", ("ponds.jsonl", body, "application/json"))], timeout=60
        ),
        PARETORAG_UPLOAD_DIR=str(tmp_path / "host-a"),
    )
    monkeypatch.setenv("PARETORAG_UPLOAD_DIR", str(tmp_path / "host-b"))  # another host's folder
    with live_server(create_app(pg_url)) as url:
        snap = _finished(url, job)
        assert snap["state"] == "done" and snap["resumed"] and snap["result"]["added"] == 4, snap
        docs = httpx.get(f"{url}/documents", timeout=30).json()["documents"]
        assert sorted(d["source"] for d in docs if d["title"].startswith("Pond")) == [
            f"upload:ponds.jsonl#{i}" for i in range(4)
        ]
    assert not any((tmp_path / "host-b").rglob("*.jsonl"))  # the job's files go when it ends
