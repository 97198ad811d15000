"""RAPTOR on a real index: a cited summary cites the passages it summarises (never an empty
document id), and summaries made by the `extractive` backend cost 0 LLM tokens, their work
counted apart as sentences scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from paretorag import RAG
from paretorag.providers.base import Completion, Request, Task
from paretorag.providers.embedders import RegexTokenizer
from paretorag.providers.extractive import ExtractiveLLM
from paretorag.providers.llm import FakeLLM
from paretorag.providers.wrappers import CountingLLM
from paretorag.types import Usage

TOPICS = {
    "sea": "The sea ship sailed across the ocean waves with sailors and fish.",
    "war": "The army soldiers fought the battle with swords and cannons.",
    "food": "The cook baked bread and soup with butter and salt in the kitchen.",
}


@pytest.fixture(scope="module")
def raptor_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raptor")
    src = root / "src"
    src.mkdir()
    for topic, sentence in TOPICS.items():
        text = " ".join(f"{sentence} Part {i} of the {topic} story." for i in range(12))
        (src / f"{topic}.md").write_text(text, encoding="utf-8")
    ix = root / "ix"
    with RAG.open(
        ix,
        embedder="hash:64",
        chunk_size=40,
        chunk_overlap=0,
        methods=["raptor"],
        builders={"raptor_tree": {"max_clusters": 8}},
    ) as rag:  # the default LLM: extractive
        rag.index([src])
    return ix


def test_extractive_summaries_cost_no_llm_tokens_and_count_their_sentences(raptor_index):
    with RAG.open(raptor_index, create=False) as rag:
        usage = rag.manifest.usage["index.raptor_tree"]
        calls = rag.manifest.model_calls["build.raptor_tree"]
        summaries = rag.manifest.structures["raptor_tree"]["summaries"]
    assert summaries > 0 and usage["calls"] == summaries
    assert usage["prompt_tokens"] == 0 and usage["completion_tokens"] == 0
    assert calls["sentences_scored"] >= 2 * summaries  # each summary scored the sentences it chose from


def test_a_cached_extractive_answer_without_counts_still_costs_no_tokens():
    class OldCacheEntry:  # what CachedLLM returned for an extractive summary cached before
        name = "extractive"
        generative = False

        def complete(self, request: Request) -> Completion:
            return Completion("Soldiers fought.", None, None, cached=True)

    usage = Usage()
    counted = CountingLLM(OldCacheEntry(), usage, "index.raptor_tree", RegexTokenizer())
    counted.complete(Request(()))
    stage = usage.stage("index.raptor_tree")
    assert (stage.calls, stage.cached, stage.prompt_tokens, stage.completion_tokens) == (1, 1, 0, 0)
    texts = ("Otters float on their backs in the sea. Otters eat fish and crabs every day.",)
    fresh = ExtractiveLLM().complete(Request((), task=Task("summarize", texts=texts)))
    assert fresh.text and (fresh.prompt_tokens, fresh.completion_tokens) == (0, 0)


def test_a_cited_summary_cites_the_passages_it_summarises(raptor_index):
    def cite_all(request: Request) -> str:  # an LLM that cites every passage it was given
        n = request.messages[-1].content.count("\n[")
        return "Soldiers fought with swords. " + " ".join(f"[{i}]" for i in range(1, n + 2))

    with RAG.open(raptor_index, create=False, llm=FakeLLM(cite_all)) as rag:
        ans = rag.query("Who fought the battle with swords and cannons?", method="raptor", reader="llm")
        doc_of = {c: d for c, d in zip(rag.view.chunks.ids, rag.view.chunks.doc_ids, strict=True)}
        titles = dict(zip(rag.view.chunks.doc_ids, rag.view.chunks.titles, strict=True))
    summaries = [c for c in ans.contexts if c.chunk_id.startswith("node:raptor:")]
    assert summaries, [c.chunk_id for c in ans.contexts]
    cited = {c.chunk_id: c for c in ans.citations}
    for s in summaries:
        assert s.doc_id and s.sources and all(doc_of[c] == s.doc_id for c in s.sources)
        assert s.title == f"Summary of {titles[s.doc_id]}"
        cite = cited[s.chunk_id]
        assert cite.doc_id == s.doc_id and cite.sources == s.sources
        assert cite.to_json()["sources"] == list(s.sources)
    assert all(c.doc_id for c in ans.citations)
    passage = next(c for c in ans.citations if not c.chunk_id.startswith("node:"))
    assert "sources" not in passage.to_json()  # a passage cites itself


def test_an_answer_trace_names_the_passages_the_budget_left_out(raptor_index):
    with RAG.open(raptor_index, create=False) as rag:
        full = rag.query("Who fought the battle?", method="vanilla", k=5, context_only=True)
        small = rag.query("Who fought the battle?", method="vanilla", k=5, budget=90, context_only=True)
    assert "budget_cut" not in full.trace and len(full.contexts) == 5
    cut = small.trace["budget_cut"]
    kept = [c.chunk_id for c in small.contexts]
    assert 0 < len(kept) < 5 and cut["max_tokens"] == 90 and cut["budget"] == "query"
    assert cut["kept_passages"] == len(kept) and cut["cut_passages"] == len(cut["cut"]) == 5 - len(kept)
    assert sorted(kept + cut["cut"]) == sorted(c.chunk_id for c in full.contexts)
