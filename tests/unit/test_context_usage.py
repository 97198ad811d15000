from __future__ import annotations

import pytest

from paretorag.answering.answer import citations, generate
from paretorag.answering.context import format_block, pack
from paretorag.errors import ConfigError
from paretorag.providers.base import Request, Task, user_prompt
from paretorag.providers.embedders import RegexTokenizer
from paretorag.providers.llm import ExtractiveLLM, FakeLLM
from paretorag.providers.wrappers import CachedLLM, CountingLLM, complete_many
from paretorag.storage.store import Store
from paretorag.types import Budget, ContextItem, Usage

TOK = RegexTokenizer()


def _item(i: int, words: int) -> ContextItem:
    return ContextItem(f"c{i}", f"d{i}", f"T{i}", " ".join(["w"] * words), 1.0 / (i + 1))


def test_pack_under_budget_skips_what_does_not_fit():
    items = [_item(0, 10), _item(1, 50), _item(2, 5)]
    sizes = [TOK.count([format_block(1, it)])[0] for it in items]
    ctx = pack(items, Budget(sizes[0] + sizes[2] + 1), TOK)
    assert [it.chunk_id for it in ctx.items] == ["c0", "c2"]
    assert ctx.n_tokens == sizes[0] + sizes[2] <= sizes[0] + sizes[2] + 1
    assert ctx.text.startswith("[1] T0") and "[2] T2" in ctx.text
    assert len(pack(items, Budget(None), TOK).items) == 3


def test_pack_cuts_first_item_when_nothing_fits():
    ctx = pack([_item(0, 500)], Budget(40), TOK)
    assert len(ctx.items) == 1 and ctx.n_tokens <= 40 and ctx.items[0].text.endswith("…")


def test_budget_must_be_positive():
    with pytest.raises(ConfigError):
        Budget(0)


def test_usage_counting_and_cache(tmp_path):
    usage = Usage()
    fake = FakeLLM(["one two three"])
    store = Store(tmp_path)
    llm = CountingLLM(CachedLLM(fake, store), usage, "index.test", TOK)
    req = user_prompt("hello there world", Task("other"))
    llm.complete(req)
    llm.complete(req)  # cached
    s = usage.stages["index.test"]
    assert s.calls == 2 and s.cached == 1 and len(fake.requests) == 1
    assert s.prompt_tokens == 2 * 3 and s.completion_tokens == 2 * 3
    outs = complete_many(llm, [user_prompt(f"q{i}") for i in range(7)], max_concurrency=3)
    assert len(outs) == 7 and usage.stages["index.test"].calls == 9
    assert usage.llm_calls == 9


def test_extractive_summary_and_answer_with_citations():
    llm = ExtractiveLLM()
    texts = (
        "Marie Curie was a physicist. She won two Nobel prizes. Curie studied radioactivity in Paris.",
        "The Eiffel Tower is in Paris. It was finished in 1889.",
    )
    summary = llm.complete(Request((), Task("summarize", texts=texts))).text
    assert summary and all(s in " ".join(texts) for s in summary.split(". ")[0:1])
    ctx_items = tuple(ContextItem(f"c{i}", f"d{i}", f"t{i}", t, 1.0) for i, t in enumerate(texts))
    from paretorag.types import Context

    ctx = Context(ctx_items, "", 0)
    text, cites = generate(llm, "When was the Eiffel Tower finished?", ctx)
    assert "1889" in text
    assert [c.chunk_id for c in cites] == ["c1"]
    assert citations("see [2] and [9] and [2]", ctx)[0].marker == 2 and len(citations("[2][9][2]", ctx)) == 1
    with pytest.raises(ConfigError, match="extractive"):
        llm.complete(user_prompt("free-form"))


def test_answer_reuses_a_retrieval_and_counts_its_llm_calls(tmp_path):
    from paretorag import RAG
    from paretorag.providers.embedders import HashEmbedder

    (tmp_path / "a.txt").write_text("Lima is the capital of Peru.")
    (tmp_path / "b.txt").write_text("Bogota is the capital of Colombia.")
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32))
    rag.index([tmp_path / "a.txt", tmp_path / "b.txt"])
    r, items = rag.retrieve("capital of Peru", "vanilla", k=1)
    assert [it.title for it in items] == ["a"] and r.usage.llm_calls == 0
    r.usage.stage("query.retrieve").calls = 2  # as if the method had asked an LLM twice
    ans = rag.answer("capital of Peru", r, items, method="vanilla", reader="extractive")
    assert ans.usage.llm_calls == 2 and "query.answer" not in ans.usage.stages  # extractive: no LLM call
    assert ans.contexts == items and "Lima" in ans.text
    read = rag.answer("capital of Peru", r, items, method="vanilla")  # the offline reader: no LLM call
    assert read.answered_by == "reader" and read.usage.llm_calls == 2
    assert read.short == "Lima" and read.found and read.citations[0].marker == 1
    assert rag.manifest.timings["ingest"] > 0 and "embed" in rag.manifest.timings
