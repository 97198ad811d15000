"""The LLM's context window is a hard limit: the packed context is cut to fit, and the answer says so."""

from __future__ import annotations

import pytest

from paretorag import RAG, FakeLLM
from paretorag.answering.answer import context_room
from paretorag.errors import ConfigError
from paretorag.providers.embedders import RegexTokenizer


def test_context_room_is_window_less_prompt_answer_and_margin():
    assert context_room(4096, 100, 512, margin=64) == 3420
    assert context_room(4096, 100, 512, margin=0) == 3484
    assert context_room(600, 100, 512, margin=0) < 0  # not even an empty context fits


def _index(tmp_path, llm):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        words = " ".join(f"river{i} water{j} flows" for j in range(60))
        (src / f"doc{i}.txt").write_text(f"Rivers number {i}. {words}.")
    rag = RAG.open(tmp_path / "ix", embedder="hash:32", llm=llm, chunk_size=200, chunk_overlap=0)
    rag.index([src])
    return rag


def test_a_small_window_cuts_the_packed_context_and_warns(tmp_path):
    tok = RegexTokenizer()
    window = 400
    seen = []

    def llm_like_llamacpp(request):
        prompt = sum(tok.count([m.content for m in request.messages]))
        seen.append(prompt)
        if prompt + request.max_tokens > window:  # llama.cpp refuses such a request
            raise ConfigError(f"Requested tokens ({prompt + request.max_tokens}) exceed context window")
        return "Rivers flow [1]."

    rag = _index(tmp_path, FakeLLM(llm_like_llamacpp, context_window=window))
    full = rag.query("Where does river water flow?", k=5, context_only=True)
    assert len(full.contexts) == 5 and not full.warnings
    ans = rag.query("Where does river water flow?", k=5, max_answer_tokens=64)
    assert ans.text == "Rivers flow [1]." and seen and seen[-1] + 64 <= window
    assert 1 <= len(ans.contexts) < 5
    assert len(ans.warnings) == 1 and "400-token context window" in ans.warnings[0]
    assert ans.to_json()["warnings"] == ans.warnings
    # the budget is a maximum under the window
    small = rag.query("Where does river water flow?", k=5, budget=150, max_answer_tokens=64)
    assert len(small.contexts) <= len(ans.contexts) and not small.warnings


def test_no_window_no_cut_and_an_impossible_window_is_an_error(tmp_path):
    rag = _index(tmp_path, FakeLLM(["ok [1]"]))
    assert len(rag.query("river water", k=5).contexts) == 5
    rag2 = RAG.open(tmp_path / "ix", llm=FakeLLM(["ok"], context_window=100))
    with pytest.raises(ConfigError, match="lower max_answer_tokens"):
        rag2.query("river water", k=5, max_answer_tokens=512)


def test_cli_prints_the_warning_on_stderr(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from paretorag import cli

    rag = _index(tmp_path, FakeLLM(["ok [1]"], context_window=800))
    rag.close()
    # the CLI imports make_llm when a command runs (not at start-up)
    monkeypatch.setattr(
        "paretorag.answering.llms.make_llm", lambda spec: FakeLLM(["ok [1]"], context_window=800)
    )
    r = CliRunner().invoke(cli.app, ["query", "river water", "--index", str(tmp_path / "ix"), "--llm", "x"])
    assert r.exit_code == 0, r.output
    assert "context window" in r.stderr and "context window" not in r.stdout
