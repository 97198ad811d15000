"""The warm paths: `paretorag chat` (one process, many questions) and `query --server`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app

from ..server_util import build_index, live_server, write_corpus

runner = CliRunner()


def test_chat_answers_each_line_and_keeps_going_after_a_bad_one(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "docs"))
    questions = "What do otters eat?\n\n" + "x" * 20_000 + "\nWhere do herons wade?\n"
    r = runner.invoke(app, ["chat", "--index", str(ix), "-k", "2", "--json"], input=questions)
    assert r.exit_code == 1  # one question failed
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["question"][:21] for line in lines] == [
        "What do otters eat?",
        "x" * 21,
        "Where do herons wade?",
    ]
    assert lines[0]["contexts"][0]["title"] == "otters" and len(lines[0]["contexts"]) == 2
    assert "error" in lines[1] and "contexts" not in lines[1]
    assert lines[2]["contexts"][0]["title"] == "herons"
    with RAG.open(ix, create=False) as rag:  # what `query` answers, line for line
        want = rag.query("Where do herons wade?", k=2).to_json()
    assert [c["chunk_id"] for c in lines[2]["contexts"]] == [c["chunk_id"] for c in want["contexts"]]
    assert lines[2]["answer"] == want["answer"]


def test_chat_prints_answers_for_people(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "docs"))
    r = runner.invoke(app, ["chat", "--index", str(ix), "--context-only"], input="Where do herons wade?\n")
    assert r.exit_code == 0, r.output
    assert "[1] herons" in r.stdout and "vanilla, 5 passages, " in r.stdout


def test_query_server_gives_the_local_answer(tmp_path):
    pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")
    from paretorag.server import create_app

    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "docs"))
    q = ["query", "What do otters eat?", "-k", "3", "--json"]
    local = json.loads(runner.invoke(app, [*q, "--index", str(ix)]).stdout)
    with live_server(create_app(ix)) as base:
        r = runner.invoke(app, [*q, "--server", base])
        assert r.exit_code == 0, r.output
        remote = json.loads(r.stdout)
        r = runner.invoke(app, ["query", "q", "--server", base, "--method", "nosuch"])
        assert r.exit_code == 2 and "unknown method 'nosuch'" in r.output
    assert [c["chunk_id"] for c in remote["contexts"]] == [c["chunk_id"] for c in local["contexts"]]
    assert remote["answer"] == local["answer"]
    r = runner.invoke(app, [*q, "--server", base])  # the server has stopped
    assert r.exit_code == 2 and "cannot reach" in r.output and "paretorag serve" in r.output
    r = runner.invoke(app, ["query", "q"])
    assert r.exit_code == 2 and "needs --index DIR" in r.output
