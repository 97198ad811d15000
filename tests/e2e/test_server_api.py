"""The HTTP API through FastAPI's test client: every endpoint, auth, limits, bad input, LLM down."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from paretorag import RAG, FakeLLM, OpenAILLM
from paretorag.cli import app as cli_app
from paretorag.errors import ConfigError
from paretorag.server import KeyRing, Limits, create_app
from paretorag.server.auth import ENV_VAR

from ..llm_server import scripted_server
from ..server_util import build_index, sse_events, write_corpus

RW = "rw-key-0123456789abcdef"
RO = "ro-key-0123456789abcdef"


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("srv")
    return build_index(root / "ix", write_corpus(root / "src"))


@pytest.fixture
def index(base_index, tmp_path) -> Path:
    """A private copy for tests that write."""
    return Path(shutil.copytree(base_index, tmp_path / "ix"))


def client(index: Path, **kw) -> TestClient:
    return TestClient(create_app(index, **kw))


def test_query_returns_the_same_object_as_query_json(base_index):
    cli = CliRunner().invoke(
        cli_app, ["query", "What do otters eat?", "--index", str(base_index), "--json", "-k", "3"]
    )
    expected = json.loads(cli.stdout)
    with client(base_index) as c:
        r = c.post("/query", json={"question": "What do otters eat?", "k": 3})
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == set(expected)
    for key in ("answer", "method", "mode", "branch", "contexts", "citations", "usage"):
        assert got[key] == expected[key], key
    assert got["contexts"][0]["title"] == "otters" and got["citations"]
    assert set(got["timings_ms"]) - {"second_hop"} == {"retrieval", "generation", "total"}


def test_reader_fields_and_the_reader_choice(base_index):
    with client(base_index) as c:
        read = c.post("/query", json={"question": "What do otters eat?", "k": 3}).json()
        old = c.post(
            "/query", json={"question": "What do otters eat?", "k": 3, "reader": "extractive"}
        ).json()
        bad = c.post("/query", json={"question": "What do otters eat?", "reader": "oracle"})
    assert read["answered_by"] == "reader" and isinstance(read["found"], bool)
    assert 0.0 <= read["confidence"] <= 1.0 and read["evidence"] and read["text"]
    assert all({"sentence", "passage"} == set(e) for e in read["evidence"])
    assert old["answered_by"] == "extractive" and old["found"] is None and old["answer"] == old["text"]
    assert bad.status_code == 422 or bad.status_code == 400


def test_a_misspelt_method_gets_a_suggestion(base_index):
    with client(base_index) as c:
        r = c.post("/query", json={"question": "otters", "method": "vanila"})
    assert r.status_code == 400 and "did you mean 'vanilla'?" in r.json()["error"]["message"]


def test_context_only_and_budget(base_index):
    with client(base_index) as c:
        r = c.post("/query", json={"question": "beaver dams", "context_only": True, "k": 2, "budget": 500})
    body = r.json()
    assert r.status_code == 200 and body["answer"] == "" and len(body["contexts"]) == 2
    assert body["usage"] == {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}


def test_stream_sends_contexts_then_tokens_then_done(base_index):
    llm = FakeLLM(["Otters eat fish and crabs [1], floating on their backs [1]."])
    with client(base_index, llm=llm) as c:
        r = c.post("/query/stream", json={"question": "What do otters eat?", "k": 2})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    kinds = [e for e, _ in events]
    assert kinds[0] == "contexts" and kinds[-1] == "done" and kinds.count("token") >= 5
    tokens = "".join(json.loads(d)["text"] for e, d in events if e == "token")
    done = json.loads(events[-1][1])
    assert tokens.strip() == done["answer"] == llm.responses[0]
    assert done["citations"][0]["marker"] == 1 and done["usage"]["llm_calls"] == 1
    assert json.loads(events[0][1])["contexts"][0]["title"] == "otters"


def test_stream_from_a_backend_that_does_not_stream_is_one_token(base_index):
    with client(base_index) as c:  # the extractive backend answers at once
        r = c.post("/query/stream", json={"question": "What do otters eat?"})
    events = sse_events(r.text)
    assert [e for e, _ in events] == ["contexts", "token", "done"]


def test_openai_backend_streams_through_the_server(base_index):
    chunks = ["Otters ", "eat ", "fish ", "[1]."]
    body = (
        "".join(f"data: {json.dumps({'choices': [{'delta': {'content': c}}]})}\n\n" for c in chunks)
        + "data: [DONE]\n\n"
    )
    with scripted_server([(200, body.encode(), 0, {"Content-Type": "text/event-stream"})]) as (url, hits):
        llm = OpenAILLM("m", base_url=url, api_key="", max_retries=0)
        with client(base_index, llm=llm) as c:
            r = c.post("/query/stream", json={"question": "What do otters eat?"})
    events = sse_events(r.text)
    assert [json.loads(d)["text"] for e, d in events if e == "token"] == chunks
    assert json.loads(events[-1][1])["answer"] == "Otters eat fish [1]." and len(hits) == 1


def test_methods_stats_healthz_metrics(base_index):
    with client(base_index) as c:
        methods = {m["name"]: m for m in c.get("/methods").json()["methods"]}
        assert methods["vanilla"]["available"] and not methods["e2graphrag"]["available"]
        assert [n for n, m in methods.items() if m["recommended"]] == ["fusion"]
        assert not methods["fusion"]["available"]  # this index has no entity graph: vanilla answers
        assert [n for n, m in methods.items() if m["default"]] == ["vanilla"]
        assert (
            c.post("/query", json={"question": "herons", "context_only": True}).json()["method"] == "vanilla"
        )
        stats = c.get("/stats").json()
        cli = CliRunner().invoke(cli_app, ["inspect", "--index", str(base_index), "--json"])
        assert set(stats) == set(json.loads(cli.stdout)) and len(stats["documents"]) == 6
        assert c.get("/healthz").json()["status"] == "ok"
        c.post("/query", json={"question": "herons", "method": "vanilla"})
        c.post("/query", json={"question": "herons", "k": 0})
        text = c.get("/metrics").text
    assert 'paretorag_requests_total{route="/query",verb="POST",status="200"} 2' in text
    assert 'paretorag_requests_total{route="/query",verb="POST",status="400"} 1' in text
    assert 'paretorag_query_seconds_count{method="vanilla"} 2' in text
    assert 'paretorag_query_seconds_bucket{method="vanilla",le="+Inf"} 2' in text
    assert 'paretorag_llm_tokens_total{method="vanilla",kind="prompt"}' in text
    assert "paretorag_index_documents 6" in text


def test_the_page_and_openapi_are_served(base_index):
    with client(base_index, keys=KeyRing.from_pairs([("write", RW)])) as c:
        page = c.get("/")
        assert page.status_code == 200 and 'id="question"' in page.text  # no key needed for the page
        assert c.get("/static/app.js").status_code == 200
        spec = c.get("/openapi.json").json()
    assert {"/query", "/query/stream", "/documents", "/documents/{doc_id}", "/jobs/{job_id}"} <= set(
        spec["paths"]
    )
    assert "multipart/form-data" in spec["paths"]["/documents"]["post"]["requestBody"]["content"]


def test_documents_upload_list_query_delete(index):
    with client(index) as c:
        r = c.post(
            "/documents?wait=30",
            files=[
                (
                    "files",
                    ("newts.md", b"Newts are amphibians that breed in ponds every spring.", "text/markdown"),
                ),
                ("files", ("notes.csv", b"a,b", "text/csv")),
            ],
        )
        assert r.status_code == 415 and r.json()["error"]["field"] == "files"  # nothing was started
        r = c.post(
            "/documents", files=[("files", ("newts.md", b"Newts are amphibians that breed in ponds."))]
        )
        assert r.status_code == 202 and r.headers["location"].startswith("/jobs/")
        job = r.json()["job"]
        for _ in range(300):
            job = c.get(f"/jobs/{job['id']}").json()
            if job["state"] in ("done", "failed"):
                break
        assert job["state"] == "done", job
        assert job["result"]["added"] == 1 and {s["stage"] for s in job["progress"]} >= {"embedding chunks"}
        r = c.post("/documents?wait=30", json=[{"title": "Toads", "text": "Toads have dry, warty skin."}])
        assert r.status_code == 200 and r.json()["job"]["result"]["added"] == 1
        docs = {d["title"]: d for d in c.get("/documents").json()["documents"]}
        assert docs["newts"]["source"] == "upload:newts.md" and docs["Toads"]["source"] == "api#0"
        top = c.post("/query", json={"question": "Newts breed in ponds", "k": 1, "context_only": True}).json()
        assert top["contexts"][0]["title"] == "newts"
        r = c.delete(f"/documents/{docs['newts']['doc_id']}?wait=30")
        assert r.status_code == 200 and r.json()["job"]["result"]["deleted"] == [docs["newts"]["doc_id"]]
        assert "newts" not in {d["title"] for d in c.get("/documents").json()["documents"]}
        assert c.delete(f"/documents/{docs['newts']['doc_id']}").status_code == 404
    with RAG.open(index, create=False) as rag:
        assert rag.manifest.counts["documents"] == 7


@pytest.mark.parametrize(
    ("headers", "path", "status"),
    [
        ({}, "/query", 401),
        ({"Authorization": "Bearer wrong-key-0123456789"}, "/query", 401),
        ({"Authorization": f"Bearer {RO}"}, "/query", 200),
        ({"X-API-Key": RO}, "/query", 200),
        ({"Authorization": f"Bearer {RO}"}, "/documents", 403),
        ({"X-API-Key": RW}, "/documents", 200),
        ({}, "/metrics", 401),
        ({}, "/healthz", 200),
    ],
)
def test_auth(index, headers, path, status):
    keys = KeyRing.from_pairs([("read", RO), ("write", RW)])
    with client(index, keys=keys) as c:
        if path == "/query":
            r = c.post(path, json={"question": "otters"}, headers=headers)
        elif path == "/documents":
            r = c.post(path + "?wait=30", json={"title": "t", "text": "a new text"}, headers=headers)
        else:
            r = c.get(path, headers=headers)
    assert r.status_code == status, r.text
    if status >= 400:
        err = r.json()["error"]
        assert err["status"] == status and ("key" in err["message"])
        assert RO not in r.text and RW not in r.text
    if status == 401:
        assert r.headers["www-authenticate"] == "Bearer"


def test_keys_from_the_environment_and_a_file(tmp_path):
    f = tmp_path / "keys"
    f.write_text(f"# team keys\nro:{RO}\n\n{RW}\n")
    ring = KeyRing.load(f, {ENV_VAR: "ro:env-key-0123456789abcd, rw:env-rw-0123456789abcd"})
    assert ring.role(RO) == "read" and ring.role(RW) == "write"
    assert ring.role("env-key-0123456789abcd") == "read" and ring.role("env-rw-0123456789abcd") == "write"
    assert ring.role("nope-0123456789abcdef") is None
    with pytest.raises(ConfigError, match="shorter than 16"):
        KeyRing.load(None, {ENV_VAR: "short"})
    with pytest.raises(ConfigError, match="no key"):
        (tmp_path / "empty").write_text("# nothing\n")
        KeyRing.load(tmp_path / "empty", {})


def test_a_key_file_that_is_not_utf8_is_refused_naming_the_line_never_the_key(
    base_index, tmp_path, monkeypatch
):
    monkeypatch.delenv(ENV_VAR, raising=False)
    secret = "caf\xe9-key-0123456789abcdef"  # a key saved as Latin-1
    keys = tmp_path / "keys"
    keys.write_bytes(f"# team keys\nro:{RO}\n{secret}\n".encode("latin-1"))
    r = CliRunner().invoke(cli_app, ["serve", "--index", str(base_index), "--api-key-file", str(keys)])
    assert r.exit_code == 2, r.output
    message = " ".join(r.output.split())
    assert f"--api-key-file {keys} is not UTF-8 text (line 3); save it as UTF-8" in message
    assert "0123456789abcdef" not in r.output and "Traceback" not in r.output
    with pytest.raises(ConfigError, match=r"API key #1 in \$PARETORAG_API_KEYS is not UTF-8 text") as caught:
        KeyRing.load(None, {ENV_VAR: "ro:caf\udce9-key-0123456789abcdef"})  # undecodable bytes, as os.environ
    assert "0123456789abcdef" not in str(caught.value)


def test_serve_refuses_other_hosts_without_a_key(base_index, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    r = CliRunner().invoke(cli_app, ["serve", "--index", str(base_index), "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "PARETORAG_API_KEYS" in r.output
    r = CliRunner().invoke(cli_app, ["serve", "--index", str(base_index.parent / "none")])
    assert r.exit_code == 2 and "--create" in r.output


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"question": "x" * 2001}, 400, "question"),
        ({"question": "   "}, 400, "question"),
        ({"question": "otters", "k": 0}, 400, "k"),
        ({"question": "otters", "k": 101}, 400, "k"),
        ({"question": "otters", "budget": -5}, 400, "budget"),
        ({"question": "otters", "method": "nope"}, 400, "method"),
        ({"question": "otters", "method": "e2graphrag"}, 409, "method"),
        ({"question": "otters", "colour": "red"}, 422, "colour"),
        ({"question": 3}, 422, "question"),
        ({}, 422, "question"),
    ],
)
def test_bad_queries_get_a_4xx_naming_the_field(base_index, body, status, field):
    with client(base_index) as c:
        r = c.post("/query", json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["field"] == field and err["message"]


def test_limits_and_bad_requests(index):
    with client(index, limits=Limits(max_body_bytes=1000, max_upload_bytes=5000)) as c:
        big = c.post(
            "/query",
            content=json.dumps({"question": "x" * 2000}),
            headers={"content-type": "application/json"},
        )
        assert big.status_code == 413 and big.json()["error"]["field"] == "body"
        up = c.post("/documents", files=[("files", ("big.txt", b"word " * 2000))])
        assert up.status_code == 413 and "split the upload" in up.json()["error"]["message"]
        assert "--max-upload-mb" in up.json()["error"]["message"]
        assert (
            c.post("/query", content=b"{nope", headers={"content-type": "application/json"}).status_code
            == 422
        )
        assert (
            c.post("/documents", content=b"text", headers={"content-type": "text/plain"}).status_code == 415
        )
        assert c.post("/documents", json={"title": "no text"}).json()["error"]["field"] == "documents[0].text"
        assert c.post("/documents", json=[]).status_code == 400
        assert c.delete("/documents/../../etc").status_code == 404
        assert c.delete("/documents/NOT-AN-ID").json()["error"]["field"] == "doc_id"
        assert c.delete("/documents/0123456789abcdef").status_code == 404
        assert c.get("/jobs/nope").status_code == 404
        r = c.get("/no/such/route")
        assert r.status_code == 404 and r.json()["error"]["message"].endswith("see /docs for the endpoints")
        r = c.post("/documents?wait=30", files=[("files", ("empty.md", b"   "))])
        assert r.status_code == 400 and r.json()["job"]["state"] == "failed"  # the job's own error
        assert c.post("/query", json={"question": "otters"}).status_code == 200  # still serving


def test_llm_backend_down_is_a_502_and_a_timeout_a_504(base_index):
    down = OpenAILLM("m", base_url="http://127.0.0.1:9/v1", api_key="", max_retries=0)
    with client(base_index, llm=down) as c:
        r = c.post("/query", json={"question": "What do otters eat?"})
        assert r.status_code == 502 and "cannot connect" in r.json()["error"]["message"]
        s = c.post("/query/stream", json={"question": "What do otters eat?"})
        events = sse_events(s.text)
        assert events[0][0] == "contexts" and events[-1][0] == "error"
        assert json.loads(events[-1][1])["status"] == 502
        ok = c.post("/query", json={"question": "What do otters eat?", "context_only": True})
        assert ok.status_code == 200  # retrieval goes on without the LLM
    with scripted_server([(200, b"{}", 2.0)]) as (url, _):
        slow = OpenAILLM("m", base_url=url, api_key="", timeout=0.3, max_retries=0)
        with client(base_index, llm=slow) as c:
            r = c.post("/query", json={"question": "What do otters eat?"})
    assert r.status_code == 504 and "timed out" in r.json()["error"]["message"]


@pytest.mark.slow
def test_real_minilm_index_through_the_api(tmp_path, minilm, popqa_slice):
    docs, questions = popqa_slice
    with RAG.open(tmp_path / "ix", embedder=minilm) as rag:
        rag.index(docs)
    hits = 0
    with client(tmp_path / "ix", embedder=minilm) as c:
        for question, gold in questions[:10]:
            r = c.post("/query", json={"question": question, "k": 5, "context_only": True})
            assert r.status_code == 200, r.text
            hits += any(ctx["doc_id"] in gold for ctx in r.json()["contexts"])
    assert hits >= 8  # the same passages the library finds (vanilla's any-gold recall@5 on PopQA is 96%)
