"""The CLI says what it does: uncommitted work and who left it, a resumed insert counted as
added, one stderr line per wait on a model server and a time budget, flags named in errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import ConfigError, LLMError
from paretorag.providers.http import OpenAIClient

from ..llm_server import ok_body, scripted_server
from ..server_util import build_index, write_corpus

runner = CliRunner()
PAUSE_ENV = "PARETORAG_TEST_PAUSE_AT"  # paretorag.cancel.pause_point
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="module")
def base_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli-honest")
    return build_index(root / "ix", write_corpus(root / "src"))


def test_k_zero_names_the_flag(base_index):
    for flag in ("-k", "--top-k"):
        r = runner.invoke(app, ["query", "otters", "--index", str(base_index), flag, "0", "--context-only"])
        assert r.exit_code == 2
        assert "-k/--top-k must be a positive integer, got 0" in r.output and "ChunkVDB" not in r.output


def test_budget_names_the_flag(base_index):
    r = runner.invoke(
        app, ["query", "otters", "--index", str(base_index), "--budget", "-5", "--context-only"]
    )
    assert r.exit_code == 2
    assert "--budget must be a positive number of tokens, got -5" in r.output and "Budget." not in r.output
    r = runner.invoke(app, ["chat", "--index", str(base_index), "--budget", "0"], input="otters\n")
    assert r.exit_code == 2  # refused before any question, as query does
    assert "--budget must be a positive number of tokens, got 0" in r.output and "Budget." not in r.output


def test_k_above_the_limit_names_the_flag_and_the_limit(base_index):
    for args in (["query", "otters"], ["chat"]):
        r = runner.invoke(
            app, [*args, "--index", str(base_index), "-k", "100000000", "--context-only"], input="otters\n"
        )
        assert r.exit_code == 2, r.output
        assert "-k/--top-k must be at most 100 (passages to retrieve), got 100000000" in r.output
    with RAG.open(base_index, create=False) as rag:
        with pytest.raises(ConfigError, match=r"k must be an integer from 1 to 100 \(passages to retrieve\)"):
            rag.query("otters", k=101, context_only=True)
        assert len(rag.query("otters", k=100, context_only=True).contexts) >= 1


def test_a_killed_insert_is_named_by_inspect_and_finished_as_added(tmp_path, base_index):
    import shutil

    ix = Path(shutil.copytree(base_index, tmp_path / "ix"))
    new = write_corpus(tmp_path / "new", [("Newts", "Newts return to ponds."), ("Toads", "Toads walk.")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", "insert", *map(str, new), "--index", str(ix)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**ENV, PAUSE_ENV: "before-embedding"},
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        for line in proc.stderr:
            if line.startswith("paretorag: paused at before-embedding") or time.monotonic() > deadline:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    shown = runner.invoke(app, ["inspect", "--index", str(ix)])
    assert shown.exit_code == 0
    assert re.search(
        rf"pending: 2 document\(s\) stored but not committed, 0 delete\(s\) not committed; left by "
        rf"`paretorag insert` \(pid {proc.pid}\) since ",
        " ".join(shown.output.split()),
    ), shown.output
    assert "newts" in shown.output and "toads" in shown.output
    again = runner.invoke(app, ["insert", *map(str, new), "--index", str(ix)])
    assert again.exit_code == 0, again.output
    assert (
        f"finishing 2 document(s) stored but not committed, left by `paretorag insert` (pid {proc.pid})"
        in (" ".join(again.stderr.split()))
    )
    assert again.stdout.startswith(
        "added 2, updated 0, unchanged 0, removed 0 (resumed); index has 8 documents"
    )
    after = runner.invoke(app, ["inspect", "--index", str(ix)])
    assert "pending: nothing" in after.output


def test_each_wait_on_a_rate_limited_llm_is_one_stderr_line(base_index, monkeypatch):
    limited = (429, b"{}", 0, {"Retry-After": "1"})
    with scripted_server([limited, limited, (200, ok_body("Otters eat fish [1]."), 0)]) as (url, hits):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        r = runner.invoke(
            app, ["query", "What do otters eat?", "--index", str(base_index), "--llm", "openai:m"]
        )
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("rate limited")]
    assert lines == [
        f"rate limited by {url}/chat/completions (HTTP 429); retrying in 1 s, attempt {n} of 6"
        for n in (2, 3)
    ]
    assert "Otters eat fish" in r.stdout and len(hits) == 3


def test_a_huge_retry_after_stops_at_the_time_budget(base_index, monkeypatch):
    with scripted_server([(429, b"{}", 0, {"Retry-After": "999999999"})]) as (url, hits):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        t0 = time.monotonic()
        r = runner.invoke(
            app,
            ["query", "otters?", "--index", str(base_index), "--llm", "openai:m", "--llm-max-wait", "5"],
        )
        spent = time.monotonic() - t0
    assert r.exit_code == 2 and spent < 5 and len(hits) == 1
    message = " ".join(r.output.split())
    assert f"rate limited by {url}/chat/completions (HTTP 429)" in message
    assert "would pass the 5 s budget of one call (--llm-max-wait or PARETORAG_LLM_MAX_WAIT)" in message
    bad = runner.invoke(app, ["query", "otters?", "--index", str(base_index), "--llm-max-wait", "0"])
    assert bad.exit_code == 2 and "--llm-max-wait must be a positive number" in " ".join(bad.output.split())


def test_the_budget_counts_every_wait_of_one_call():
    clock = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock[0] += s

    with scripted_server([(503, b"{}", 0, {"Retry-After": "20"})]) as (url, hits):
        client = OpenAIClient(url, max_retries=5, max_wait=50, sleep=sleep, clock=lambda: clock[0])
        with pytest.raises(LLMError, match=r"stopped after 3 attempt\(s\) and 40 s: the next retry, in 20 s"):
            client.chat(model="m", messages=[{"role": "user", "content": "hi"}])
    assert slept == [20.0, 20.0] and len(hits) == 3


def test_answer_k_zero_names_the_flag(tmp_path):
    r = runner.invoke(app, ["eval", "--data", str(tmp_path), "--subset", "x", "--answer-k", "0"])
    assert r.exit_code == 2 and "--answer-k must be a positive integer, got 0" in r.output, r.output


def test_an_offline_answer_counts_no_llm_call_and_an_llm_answer_does(base_index):
    """The extractive answerer and the reader run no model: 0 LLM calls, on the screen and in
    the JSON record; an LLM (the scripted one) still counts its call."""
    args = ["query", "what do otters eat", "--index", str(base_index), "--method", "vanilla"]
    for reader in ("extractive", "reader"):
        r = runner.invoke(app, [*args, "--reader", reader])
        assert r.exit_code == 0 and "0 LLM call(s)" in r.stdout, (reader, r.output)
        r = runner.invoke(app, [*args, "--reader", reader, "--json"])
        data = json.loads(r.stdout)
        assert data["answered_by"] == reader and data["usage"]["llm_calls"] == 0, data["usage"]
    r = runner.invoke(app, [*args, "--llm", "fake", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["usage"]["llm_calls"] == 1
    assert "1 LLM call(s)" in runner.invoke(app, [*args, "--llm", "fake"]).stdout
