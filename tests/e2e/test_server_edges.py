"""The server at its edges: uploads with very long file names (and their jobs resumed after a
restart), chunked bodies over the limit, clients that go away while sending a body, the
page's security headers, and the model lists of the compatible routes."""

from __future__ import annotations

import http.client
import json
import logging
import re
import shutil
import socket
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

import httpx
from fastapi.testclient import TestClient

from paretorag.server import create_app
from paretorag.server.routes_page import CYTOSCAPE_STYLE, STATIC
from paretorag.server.service import SAVED_NAME_BYTES, saved_name

from ..server_util import build_index, live_server, write_corpus


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("edges")
    return build_index(root / "ix", write_corpus(root / "src"))


@pytest.fixture
def index(base_index, tmp_path) -> Path:
    """A private copy for tests that write."""
    return Path(shutil.copytree(base_index, tmp_path / "ix"))


# -- long upload names ---------------------------------------------------------------------


LONG = "otters of the northern rivers " * 11  # 330 characters


def test_an_upload_with_a_very_long_name_keeps_its_name(index):
    first, second = LONG + "in spring.md", LONG + "in winter.md"  # the same first 330 characters
    with TestClient(create_app(index)) as c:
        r = c.post(
            "/documents?wait=30",
            files=[
                ("files", (first, b"Otters dig their dens in the banks in spring.")),
                ("files", (second, b"Otters hunt under the ice in winter.")),
            ],
        )
        assert r.status_code == 200, r.text
        job = r.json()["job"]
        assert job["result"]["added"] == 2 and job["detail"]["files"] == [first, second]
        docs = {d["source"]: d for d in c.get("/documents").json()["documents"]}
        for name in (first, second):
            assert docs[f"upload:{name}"]["title"] == name.removesuffix(".md")
        top = c.post("/query", json={"question": "under the ice in winter", "k": 1, "context_only": True})
        assert top.json()["contexts"][0]["title"] == second.removesuffix(".md")
    # saved under short names, which two long names sharing their start do not share
    assert saved_name(first) != saved_name(second)
    assert all(len(saved_name(n).encode()) <= SAVED_NAME_BYTES for n in (first, second, "é" * 300 + ".md"))
    assert saved_name("é" * 300 + ".md").endswith(".md") and saved_name("short.md") == "short.md"


def test_an_upload_job_with_a_long_name_is_resumed_after_a_restart(index):
    """What a server killed after accepting the upload leaves: the file saved under its short
    name, the job stored with the uploaded name."""
    from paretorag.storage.jobs import JobTable
    from paretorag.storage.store import Store

    name = LONG + ".md"
    job_id = "eeeeeeeeeeeeeeee"
    saved = index / "uploads" / job_id / "000" / saved_name(name)
    saved.parent.mkdir(parents=True)
    saved.write_text("Otters sleep in holts along the river bank.")
    store = Store(index)
    JobTable(store).create(
        job_id,
        "insert",
        {"files": [name]},
        {"source": "files", "files": {str(saved.relative_to(index)): name}, "documents": 1},
    )
    store.close()
    app = create_app(index)
    assert app.state.service.resumed == [f"resuming job {job_id}: 1 uploaded file(s)"]
    with TestClient(app) as c:
        deadline = time.monotonic() + 30
        while (body := c.get(f"/jobs/{job_id}").json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, body
            time.sleep(0.05)
        assert body["state"] == "done" and body["resumed"] and body["result"]["added"] == 1, body
        docs = {d["source"]: d for d in c.get("/documents").json()["documents"]}
        assert docs[f"upload:{name}"]["title"] == LONG
    assert not (index / "uploads" / job_id).exists()


# -- chunked bodies and clients that go away -------------------------------------------------


def _chunked(port: int, path: str, body: bytes) -> tuple[int, dict]:
    """POST ``body`` with Transfer-Encoding: chunked (no Content-Length), in 8 KiB pieces."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for i in range(0, len(body), 8192):
            piece = body[i : i + 8192]
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.send(b"0\r\n\r\n")
        r = conn.getresponse()
        is_json = "json" in (r.getheader("content-type") or "")
        return r.status, json.loads(r.read()) if is_json else {}
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/query", "/query/stream", "/v1/chat/completions"])
def test_a_chunked_body_over_the_limit_is_a_413(base_index, path):
    big = json.dumps({"question": "x" * 70_000, "model": "vanilla", "messages": []}).encode()
    small = json.dumps(
        {"question": "What do otters eat?", "context_only": True}
        if path.startswith("/query")
        else {"model": "vanilla", "messages": [{"role": "user", "content": "What do otters eat?"}]}
    ).encode()
    with live_server(create_app(base_index)) as base:
        port = int(base.rsplit(":", 1)[1])
        status, body = _chunked(port, path, big)
        assert status == 413, body
        error = body["error"]
        if path.startswith("/query"):
            assert error["type"] == "too_large" and error["field"] == "body"
        assert "larger than 65,536 bytes" in (error if isinstance(error, str) else error["message"])
        assert _chunked(port, path, small)[0] == 200  # a chunked body under the limit is read


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


PART = b'--b0undary\r\nContent-Disposition: form-data; name="files"; filename="a.md"\r\n\r\nOtters'


@pytest.mark.parametrize(
    ("path", "ctype", "start"),
    [
        ("/documents", "multipart/form-data; boundary=b0undary", PART),
        ("/v1/chat/completions", "application/json", b'{"model": "vanilla", "mess'),
        ("/query", "application/json", b'{"quest'),
    ],
)
def test_a_client_gone_while_sending_its_body_is_one_warning(base_index, path, ctype, start):
    seen = _Records()
    loggers = [logging.getLogger(n) for n in ("uvicorn", "paretorag.server")]
    for lg in loggers:
        lg.addHandler(seen)
    try:
        with live_server(create_app(base_index)) as base:
            port = int(base.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port)) as s:
                head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: 10000\r\n\r\n"
                s.sendall(head.encode() + start)
                time.sleep(0.3)
            deadline = time.monotonic() + 10
            while path != "/query" and not any("went away" in r.getMessage() for r in seen.records):
                assert time.monotonic() < deadline, [r.getMessage() for r in seen.records]
                time.sleep(0.05)
            time.sleep(0.3)  # anything logged after the warning
            assert _chunked(port, "/query", b'{"question": "otters", "context_only": true}')[0] == 200
            metrics = httpx.get(base + "/metrics").text
    finally:
        for lg in loggers:
            lg.removeHandler(seen)
    messages = [r.getMessage() for r in seen.records if r.levelno >= logging.WARNING]
    assert not [r for r in seen.records if r.exc_info], messages
    assert not [m for m in messages if "Exception in ASGI application" in m or "unexpected" in m], messages
    # FastAPI reads the body of /query itself and answers a gone client's 400 to no one
    went = [m for m in messages if "went away" in m]
    assert went == ([] if path == "/query" else [f"POST {path}: the client went away while sending its body"])
    status = "400" if path == "/query" else "499"  # 499: the client closed the request
    assert f'paretorag_requests_total{{route="{path}",verb="POST",status="{status}"}} 1' in metrics


# -- security headers ------------------------------------------------------------------------


def test_the_page_has_a_strict_content_security_policy(base_index):
    with TestClient(create_app(base_index)) as c:
        page = c.get("/")
        script = c.get("/static/app.js")
        error = c.post("/query", json={})
        vendor = c.get("/static/vendor/cytoscape.min.js").text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert page.headers["x-frame-options"] == "DENY"
    for r in (page, script, error):
        assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in script.headers  # only the page (and not /docs) has one
    # no inline script, style or handler in the page: the policy would block them
    html = (STATIC / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html) and "<style" not in html
    assert not re.search(r"\s(style|on[a-z]+)\s*=", html)
    # the one inline style allowed by its hash is the one the vendored cytoscape.js adds
    assert 's="__________cytoscape_container"' in vendor
    assert 'textContent="."+s+" { position: relative; }"' in vendor
    assert CYTOSCAPE_STYLE == ".__________cytoscape_container { position: relative; }"


# -- model lists -----------------------------------------------------------------------------


def test_the_model_lists_leave_out_presets_which_still_answer(base_index):
    with TestClient(create_app(base_index)) as c:
        ids = [m["id"] for m in c.get("/v1/models").json()["data"]]
        tags = [m["name"] for m in c.get("/api/tags").json()["models"]]
        methods = {m["name"]: m for m in c.get("/methods").json()["methods"]}
        preset = c.get("/v1/models/ix/ea-graphrag-dense-only")
        chat = c.post(
            "/v1/chat/completions",
            json={
                "model": "ix/ea-graphrag-dense-only",
                "messages": [{"role": "user", "content": "What do otters eat?"}],
            },
        )
        unknown = c.get("/v1/models/ix/nope")
    assert methods["ea-graphrag-dense-only"]["available"]  # built, and a preset of ea-graphrag
    assert ids == tags == ["ix/vanilla", "ix/zeroshot"]
    assert preset.status_code == 200 and preset.json()["id"] == "ix/ea-graphrag-dense-only"
    assert chat.status_code == 200 and chat.json()["paretorag"]["method"] == "ea-graphrag-dense-only"
    assert unknown.status_code == 404 and "ix/vanilla, ix/zeroshot (and the presets" in unknown.text
