"""Jobs stored in the index: answered after a restart for the retention period, failed with
the reason when their input is gone; `waiting` always names what it waits for (the writer
lock, a rate-limited model server), in a job and in a streamed answer; /docs offline."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from fastapi.testclient import TestClient

from paretorag import OpenAILLM
from paretorag.providers.http import OpenAIClient
from paretorag.server import create_app
from paretorag.server.jobs import Writer

from ..llm_server import ok_body, scripted_server
from ..server_util import build_index, sse_events, write_corpus


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("jobs")
    return build_index(root / "ix", write_corpus(root / "src"))


@pytest.fixture
def index(base_index, tmp_path) -> Path:
    return Path(shutil.copytree(base_index, tmp_path / "ix"))


def test_a_finished_job_answers_after_a_restart_until_its_retention_ends(index):
    with TestClient(create_app(index)) as c:
        r = c.post("/documents?wait=30", json={"title": "Newts", "text": "Newts breed in ponds."})
        assert r.status_code == 200
        job = r.json()["job"]
    with TestClient(create_app(index)) as c:  # a new server on the same index
        again = c.get(f"/jobs/{job['id']}")
        assert again.status_code == 200
        body = again.json()
        assert body["state"] == "done" and body["result"]["added"] == 1 and not body["resumed"]
        assert body["created"] == job["created"]
    time.sleep(1.1)
    with TestClient(create_app(index, job_retention_s=1.0)) as c:  # pruned at start-up
        gone = c.get(f"/jobs/{job['id']}")
        assert gone.status_code == 404 and "kept" in gone.json()["error"]["message"]


def test_a_job_whose_input_is_gone_ends_failed_with_the_reason(index):
    from paretorag.storage.jobs import JobTable
    from paretorag.storage.store import Store

    store = Store(index)
    table = JobTable(store)
    table.create("aaaaaaaaaaaaaaaa", "insert", {"files": ["notes.md"]}, {"source": "files", "files": {}})
    table.create("bbbbbbbbbbbbbbbb", "insert", {"records": 2}, {"source": "records", "documents": 2})
    store.close()
    app = create_app(index)
    assert app.state.service.resumed == [
        "job aaaaaaaaaaaaaaaa failed: job aaaaaaaaaaaaaaaa: the uploaded file(s) (none) are no longer in "
        f"{index / 'uploads' / 'aaaaaaaaaaaaaaaa'}; upload them again",
        "job bbbbbbbbbbbbbbbb failed: job bbbbbbbbbbbbbbbb was accepted with 2 records, but 0 are stored in "
        f"{index / 'index.sqlite'}; send them again",
    ]
    with TestClient(app) as c:
        for job_id, words in (("aaaaaaaaaaaaaaaa", "upload them again"), ("bbbbbbbbbbbbbbbb", "send them")):
            body = c.get(f"/jobs/{job_id}").json()
            assert body["state"] == "failed" and body["resumed"] and words in body["error"]["message"]


def test_waiting_names_the_lock_then_the_model_server_and_ends(tmp_path):
    """A job that waited for the writer lock is `running` again once it works (it stayed
    `waiting` with an empty `waiting_for`), and a rate-limited model server shows as a
    named wait in the job while the client sleeps."""
    seen: list[tuple[str, str]] = []
    ready = threading.Event()
    writer: Writer

    def look() -> None:
        snap = writer.snapshot(job)
        seen.append((snap["state"], snap["waiting_for"]))

    script = [(429, b"{}", 0, {"Retry-After": "0.6"}), (200, ok_body(), 0)]
    with scripted_server(script) as (url, hits):

        def work(rag, progress):
            writer._on_wait("waiting for the writer lock held by pid 4242 (paretorag insert)")
            look()
            with progress.task("embedding chunks", 2) as task:
                look()
                task.advance(2)
            client = OpenAIClient(url, max_retries=2)  # made first: the poller times the request
            poller = threading.Thread(target=lambda: (ready.wait(5), time.sleep(0.3), look()))
            poller.start()
            ready.set()
            client.chat(model="m", messages=[{"role": "user", "content": "hi"}])
            poller.join()
            look()
            return {"ok": True}

        writer = Writer(lambda on_wait: SimpleNamespace(close=lambda: None, notes=[]))
        job = writer.submit("insert", {}, work)
        assert job.done_event.wait(20) and job.state == "done", job.error
        writer.close()
    assert seen[0] == ("waiting", "waiting for the writer lock held by pid 4242 (paretorag insert)")
    assert seen[1] == ("running", "")
    state, waiting_for = seen[2]
    assert state == "waiting" and re.fullmatch(
        r"rate limited by http://127\.0\.0\.1:\d+/v1/chat/completions \(HTTP 429\); "
        r"retrying in 0\.6 s, attempt 2 of 3",
        waiting_for,
    ), seen
    assert seen[3] == ("running", "") and len(hits) == 2


def test_a_streamed_answer_says_when_the_model_server_makes_it_wait(base_index):
    limited = (429, b'{"error": "slow down"}', 0, {"Retry-After": "1"})
    with scripted_server([limited, limited, (200, ok_body("Otters eat fish [1]."), 0)]) as (url, hits):
        llm = OpenAILLM("m", base_url=url, api_key="", max_retries=3)
        with TestClient(create_app(base_index, llm=llm)) as c:
            r = c.post("/query/stream", json={"question": "What do otters eat?"})
    events = sse_events(r.text)
    kinds = [e for e, _ in events]
    assert kinds == ["contexts", "wait", "token", "done"], r.text
    wait = json.loads(events[1][1])["message"]
    assert wait == f"rate limited by {url}/chat/completions (HTTP 429); retrying in 1 s, attempt 2 of 4"
    assert json.loads(events[-1][1])["answer"] == "Otters eat fish [1]." and len(hits) == 3


def test_api_docs_load_only_same_origin_assets(base_index):
    with TestClient(create_app(base_index)) as c:
        for page in ("/docs", "/redoc"):
            html = c.get(page).text
            urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*'([^']+)'""", html)
            urls = [a or b for a, b in urls]
            assert urls and not [u for u in urls if not u.startswith("/")], (page, urls)
            assert "cdn" not in html and "https://" not in html.replace("https://fastapi.tiangolo.com", "")
            for u in urls:
                r = c.get(u)
                assert r.status_code == 200, u
                if u.endswith(".js"):
                    assert "javascript" in r.headers["content-type"] and len(r.content) > 100_000
                elif u.endswith(".css"):
                    assert r.headers["content-type"].startswith("text/css")


def test_a_job_of_another_running_server_is_left_to_it(index):
    import socket
    import subprocess
    import sys

    from paretorag.storage.jobs import JobTable
    from paretorag.storage.store import Store

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store = Store(index)
        JobTable(store).create("cccccccccccccccc", "delete", {"doc_id": "x"}, {"doc_ids": ["x"]})
        with store.transaction() as c:
            c.execute("UPDATE jobs SET owner=?", (f"{socket.gethostname()}:{other.pid}",))
        store.close()
        app = create_app(index)
        assert app.state.service.resumed == [
            f"job cccccccccccccccc is run by the server {socket.gethostname()}:{other.pid}; not resumed here"
        ]
        with TestClient(app) as c:
            assert c.get("/jobs/cccccccccccccccc").json()["state"] == "queued"
    finally:
        other.kill()
        other.wait(10)
    # once that server is gone, the next one resumes the job; the document is gone, as asked
    with TestClient(create_app(index)) as c:
        deadline = time.monotonic() + 20
        while (body := c.get("/jobs/cccccccccccccccc").json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, body
            time.sleep(0.05)
    assert body["state"] == "done" and body["resumed"] and body["result"]["deleted"] == ["x"]


def test_a_job_the_server_died_in_three_times_is_not_run_again(index):
    from paretorag.storage.jobs import JobTable
    from paretorag.storage.store import Store

    store = Store(index)
    JobTable(store).create("dddddddddddddddd", "delete", {"doc_id": "x"}, {"doc_ids": ["x"]})
    with store.transaction() as c:
        c.execute("UPDATE jobs SET state='running', attempts=3")
    store.close()
    app = create_app(index)
    assert app.state.service.resumed == [
        "job dddddddddddddddd failed: the server stopped 3 times while running job dddddddddddddddd "
        "(killed, out of memory?); it is not run again: see the server's log, then send the write again"
    ]
    with TestClient(app) as c:
        body = c.get("/jobs/dddddddddddddddd").json()
    assert body["state"] == "failed" and "stopped 3 times" in body["error"]["message"]
