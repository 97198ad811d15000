"""Algorithm 1 of E2GraphRAG (App. A, §3.2), branch by branch, on hand-built graphs.

Entity terms of each chunk are given directly (no spaCy), the tree is built by the
real builder with a scripted LLM, and questions' entities are pre-seeded in the
method's per-index state, so each test controls exactly which branch is taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from paretorag.answering.context import pack
from paretorag.errors import ConfigError
from paretorag.graphs.base import StructureData
from paretorag.graphs.entities import graph_from_mentions
from paretorag.graphs.graph import graph_to_structure
from paretorag.graphs.tree import SummaryTree
from paretorag.progress import NullProgress
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.llm import FakeLLM
from paretorag.providers.question_nlp import QuestionNLP
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.methods.base import METHODS, QueryOptions
from paretorag.retrieval.methods.e2graphrag import E2GraphRAG
from paretorag.retrieval.operators.e2graphrag import E2State
from paretorag.storage.store import ChunkTable
from paretorag.types import Budget, Chunk, ContextItem, FloatArray, Scored

N = 40


def mentions() -> list[list[list[str]]]:
    """Entity terms per sentence for 40 chunks, one document (see the module docstring)."""
    per: list[list[list[str]]] = [[["filler", f"thing{i}"]] for i in range(N)]
    for i in range(0, N, 3):  # 'harry' in every third chunk, more in later ones
        per[i].append(["harry"] * (1 + i // 10))
    # chunk 0: a and z both present but 5 hops apart (a-b1-b2-b3-b4-z), in separate sentences
    per[0] += [["a", "b1"], ["b1", "b2"], ["b2", "b3"], ["b3", "b4"], ["b4", "z"]]
    # chunks 1-3: harry and snape co-occur
    for i in (1, 2, 3):
        per[i].append(["harry", "snape"])
    # shrink: p-q adjacent in chunks 10-11; p..r 4 hops (p-c1-c2-c3-r) share chunks 12-17
    per[10].append(["p", "q"])
    per[11].append(["q", "p"])
    per[12] += [["p", "c1"], ["c1", "c2"], ["c2", "c3"], ["c3", "r"]]
    for i in range(13, 18):
        per[i] += [["p"], ["r"]]
    # revert: u-w-v (2 hops); u and v share chunks 20-25 (separate sentences), counts vary
    per[20] += [["u", "w"], ["w", "v"]]
    for i, (nu, nv) in zip(range(21, 26), [(1, 1), (3, 2), (1, 4), (2, 2), (1, 1)], strict=True):
        per[i] += [["u"] * nu, ["v"] * nv]
    # no shared chunk: a2 - m - z2 within 2 hops, never in the same chunk
    per[30].append(["a2", "m"])
    per[31].append(["m", "z2"])
    return per


def chunk_table(per: list[list[list[str]]]) -> ChunkTable:
    chunks, pos = [], 0
    for i, sents in enumerate(per):
        text = f"Chunk {i}. " + " ".join(" ".join(s) + "." for s in sents) + " "
        chunks.append(Chunk(f"doc#{i}", "doc", i, pos, pos + len(text), text, len(text.split()), "Book"))
        pos += len(text)
    return ChunkTable.from_chunks(chunks)


class BuildCtx:
    def __init__(self, chunks: ChunkTable, llm: FakeLLM) -> None:
        self.chunks = chunks
        self.embedder = HashEmbedder(32)
        self.tokenizer = RegexTokenizer()
        self.progress = NullProgress()
        self.workers = 1
        self._llm = llm

    def llm(self, stage: str) -> FakeLLM:
        assert stage == "index.tree"
        return self._llm

    def structure(self, name: str) -> StructureData:
        raise KeyError(name)


class FakeIndex:
    """An IndexView over hand-built structures (exact dense search with HashEmbedder)."""

    def __init__(self) -> None:
        self.nlp = QuestionNLP()  # spaCy's readings of a question, as a loaded index gives them
        per = mentions()
        self.chunks = chunk_table(per)
        self._emb = HashEmbedder(32)
        self._tok = RegexTokenizer()
        self.vectors = self._emb.embed(list(self.chunks.texts))
        llm = FakeLLM(lambda r: "Summary: " + r.task.texts[0][:40])
        tree = SummaryTree(g=5).build(BuildCtx(self.chunks, llm))
        graph = graph_to_structure(
            graph_from_mentions(per, N),
            meta={"n_chunks": N, "labels": ["PERSON"], "split_names": True, "sentences": "senter"},
        )
        self._structures = {"tree": tree, "entity_graph": graph}
        self._memo: dict[str, Any] = {}
        self.dense_calls: list[int] = []

    def embed_query(self, text: str) -> FloatArray:
        return self._emb.embed([text])[0]

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._emb.embed(texts)

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        self.dense_calls.append(k)
        s = self.vectors @ query_vector
        order = np.lexsort((np.arange(s.size), -s))[:k]
        return Scored(order, s[order])

    def structure(self, name: str) -> StructureData:
        return self._structures[name]

    def cached(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = factory()
        return self._memo[key]

    def llm(self, stage: str) -> FakeLLM:
        raise AssertionError("e2graphrag must not call an LLM at query time")

    def count_tokens(self, text: str) -> int:
        return self._tok.count([text])[0]

    def chunk_item(self, row: int, score: float) -> ContextItem:
        c = self.chunks
        return ContextItem(
            c.ids[row], c.doc_ids[row], c.titles[row], c.texts[row], score, int(c.n_tokens[row]), row
        )


@pytest.fixture(scope="module")
def index() -> FakeIndex:
    return FakeIndex()


def ask(index: FakeIndex, terms: list[str], method: str = "e2graphrag", k: int | None = None, **params: Any):
    """Retrieve for a question whose extracted entities are ``terms``."""
    params.setdefault("fallback", None)  # Algorithm 1 as in the paper unless a test sets it
    m = get_method(method, **params)
    state: E2State = index.cached("e2graphrag.state", lambda: pytest.fail("state not loaded"))  # type: ignore[arg-type]
    question = "Q: " + " ".join(terms) + f" #{len(state.query_terms)}"
    state.query_terms[question] = list(terms)
    return m.retrieve(index, question + "\n(A) option text harry", QueryOptions(k=k))


@pytest.fixture(scope="module", autouse=True)
def _load_state(index: FakeIndex) -> None:
    from paretorag.retrieval.operators.e2graphrag import load_state

    index.cached("e2graphrag.state", lambda: load_state(index))


def test_tree_has_the_expected_summaries(index: FakeIndex) -> None:
    state: E2State = index.cached("e2graphrag.state", lambda: None)
    assert state.tree.n_nodes == N + 8 + 2  # ceil(40/5) + ceil(40/25)
    assert state.tree_g == 5


def test_no_entity_is_global_dense_over_the_collapsed_tree(index: FakeIndex) -> None:
    r = ask(index, ["voldemort", "quidditch"])  # not vertices: ignored
    assert (r.mode, r.branch) == ("global", "no_entity")
    assert r.info["mapped"] == [] and len(r.items) > 0
    assert r.scored.kind == "chunk" and np.all(r.scored.ids < N)
    assert len(r.scored) + len(r.info["summaries"]) == 25


def test_one_entity_is_global_with_occurrence_ranking(index: FakeIndex) -> None:
    index.dense_calls.clear()
    r = ask(index, ["harry", "hogwarts"])  # one vertex: no pair
    assert (r.mode, r.branch) == ("global", "no_pair")
    assert index.dense_calls == [50]  # dense top-2k candidates
    state: E2State = index.cached("e2graphrag.state", lambda: None)
    occ = state.graph.node_chunks[state.graph.ids["harry"]].toarray().ravel()
    # every node is a candidate (2k = 50 = all nodes): the top node is the summary with most occurrences
    t = state.tree
    sums = [int(occ[t.first_row[v] : t.last_row[v] + 1].sum()) for v in range(t.n_nodes)]
    assert r.info["summaries"][0] == int(np.argmax(sums))
    assert sorted(sums, reverse=True)[0] > max(occ)
    assert "harry:" in r.context_text and "(summary)" in r.context_text


def test_pair_beyond_h_is_global_and_within_h_is_local(index: FakeIndex) -> None:
    r = ask(index, ["a", "z"])  # 5 hops apart
    assert (r.mode, r.branch) == ("global", "no_pair") and r.info["pairs"] == []
    r = ask(index, ["a", "z"], h=5)
    assert (r.mode, r.branch) == ("local", "mapping") and r.scored.ids.tolist() == [0]
    assert r.context_text.startswith("a-z:\n[1] Book\nChunk 0.")


def test_pair_within_h_maps_to_shared_chunks(index: FakeIndex) -> None:
    r = ask(index, ["snape", "harry"])
    assert (r.mode, r.branch) == ("local", "mapping")
    assert sorted(r.scored.ids.tolist()) == [1, 2, 3]
    assert r.info["pairs"] == [["snape", "harry"]]
    # chunks 1-3 are adjacent: merged into one passage under one header
    assert len(r.items) == 1 and r.context_text.startswith(
        "snape-harry:\n[1] Book (chunks 1-3, merged)\nChunk 1."
    )
    assert r.items[0].chunk_id == "doc#1-3" and r.items[0].row == 1  # the context names its chunk range
    assert "Chunk 2." in r.items[0].text and "Chunk 3." in r.items[0].text


def test_too_many_candidates_lower_h_until_at_most_k(index: FakeIndex) -> None:
    r = ask(index, ["p", "q", "r"], k=3)
    assert (r.mode, r.branch) == ("local", "shrink")
    assert r.info["candidates"] == {"4": 8, "3": 2} and r.info["h"] == 3
    assert sorted(r.scored.ids.tolist()) == [10, 11]


def test_collapse_to_empty_reverts_and_ranks_entity_aware(index: FakeIndex) -> None:
    r = ask(index, ["u", "v"], k=3)
    assert (r.mode, r.branch) == ("local", "entity_aware")
    assert r.info["candidates"] == {"4": 6, "3": 6, "2": 6, "1": 0} and r.info["h"] == 2
    # chunks 20-25 all cover u and v; occurrences 2, 2, 5, 5, 4, 2 -> 22, 23, 24
    assert r.scored.ids.tolist() == [22, 23, 24]
    r = ask(index, ["u", "v"], "e2graphrag-no-entity-aware", k=3)
    assert (r.mode, r.branch) == ("local", "revert_first_k") and r.scored.ids.tolist() == [20, 21, 22]


def test_pairs_sharing_no_chunk_fall_back_to_global(index: FakeIndex) -> None:
    r = ask(index, ["a2", "z2"])
    assert (r.mode, r.branch) == ("global", "no_shared_chunk")


def test_ablations_follow_table_3(index: FakeIndex) -> None:
    assert {name for name in METHODS if name.startswith("e2graphrag-")} == {
        "e2graphrag-dense-only",
        "e2graphrag-no-graph-filter",
        "e2graphrag-no-entity-aware",
        "e2graphrag-no-graph-filter-no-entity-aware",
        "e2graphrag-no-dense",
        "e2graphrag-no-occurrence",
        "e2graphrag-no-dense-no-occurrence",
        "e2graphrag-no-fallback",
    }
    assert METHODS["e2graphrag-no-dense"].cls is E2GraphRAG  # a preset, not a generated class
    assert get_method("e2graphrag-no-dense").get_params()["dense"] is False
    assert get_method("e2graphrag-no-dense", dense=True).get_params()["dense"] is True
    r = ask(index, ["snape", "harry"], "e2graphrag-dense-only")
    assert (r.mode, r.branch) == ("global", "dense_only")
    r = ask(index, ["a", "z"], "e2graphrag-no-graph-filter")  # 5 hops: kept without the filter
    assert (r.mode, r.branch) == ("local", "mapping")
    r = ask(index, ["p", "q", "r"], "e2graphrag-no-graph-filter", k=3)
    assert (r.mode, r.branch) == ("local", "entity_aware") and len(r.scored) == 3
    index.dense_calls.clear()
    r = ask(index, ["harry"], "e2graphrag-no-occurrence")
    assert (r.mode, r.branch) == ("global", "no_pair") and index.dense_calls == [25]
    r = ask(index, ["harry"], "e2graphrag-no-dense")
    assert r.branch == "no_pair" and len(r.items) > 0 and not index.dense_calls[1:]
    assert ask(index, ["nobody"], "e2graphrag-no-dense").items == []
    assert ask(index, ["harry"], "e2graphrag-no-dense-no-occurrence").items == []


def test_budget_limits_evidence_and_packing_keeps_every_item(index: FakeIndex) -> None:
    m = E2GraphRAG()
    state: E2State = index.cached("e2graphrag.state", lambda: None)
    state.query_terms["budget question"] = ["harry"]
    full = m.retrieve(index, "budget question", QueryOptions())
    small = m.retrieve(index, "budget question", QueryOptions(budget=Budget(120)))
    assert 0 < len(small.items) < len(full.items)
    assert index.count_tokens(small.context_text) <= 120
    packed = pack(small.items, Budget(120), RegexTokenizer())
    assert len(packed.items) == len(small.items)  # citation numbers stay aligned


def test_without_a_query_budget_the_evidence_keeps_to_the_answer_budget_and_says_what_was_cut(
    index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paretorag.retrieval.operators import e2graphrag_evidence

    state: E2State = index.cached("e2graphrag.state", lambda: None)
    state.query_terms["default budget question"] = ["harry"]
    full = E2GraphRAG().retrieve(index, "default budget question", QueryOptions(budget=Budget(10**6)))
    assert "budget_cut" not in full.info and len(full.items) > 4
    whole = index.count_tokens(full.context_text)
    monkeypatch.setattr(e2graphrag_evidence, "ANSWER_TOKENS", whole // 3)  # a long corpus, in small
    r = E2GraphRAG().retrieve(index, "default budget question", QueryOptions())
    assert 0 < len(r.items) < len(full.items)
    assert index.count_tokens(r.context_text) <= whole // 3
    cut = r.info["budget_cut"]
    assert cut["max_tokens"] == whole // 3 and cut["budget"].startswith("default")
    assert cut["tokens_before"] == whole
    assert cut["kept_passages"] + cut["cut_passages"] == len(full.info["summaries"]) + len(full.scored)
    assert cut["cut_passages"] == len(cut["cut"]) > 0
    kept = {it.chunk_id for it in r.items}
    assert not kept & set(cut["cut"])  # what the trace names as cut is not in the context
    # a budget the query gives wins over the default, larger or smaller
    given = E2GraphRAG().retrieve(index, "default budget question", QueryOptions(budget=Budget(whole)))
    assert len(given.items) == len(full.items) and "budget_cut" not in given.info


def test_settings_are_checked_against_the_index(index: FakeIndex) -> None:
    with pytest.raises(ConfigError, match="g=3"):
        ask(index, ["harry"], g=3)
    with pytest.raises(ConfigError, match="labels"):
        ask(index, ["harry"], labels=("ORG",))
    with pytest.raises(ConfigError, match="h must be"):
        ask(index, ["harry"], h=-1)
    m = E2GraphRAG(k=7)
    assert m.clone().get_params() == m.get_params() and m.requires == ("vectors", "tree", "entity_graph")


def test_fallback_fills_a_short_local_result_up_to_k(index: FakeIndex) -> None:
    paper = ask(index, ["snape", "harry"], "e2graphrag-no-fallback", k=10)
    assert (paper.mode, paper.branch) == ("local", "mapping") and len(paper.scored) == 3
    r = ask(index, ["snape", "harry"], k=10, fallback="chunk.vdb")  # the default
    assert E2GraphRAG().fallback == "chunk.vdb"
    assert (r.mode, r.branch) == ("local", "mapping+chunk.vdb") and r.info["filled"] == 7
    ids = r.scored.ids.tolist()
    assert len(ids) == len(set(ids)) == 10
    assert ids[:3] == paper.scored.ids.tolist()  # the mapped chunks first, in their order
    # then the best dense chunks that were not mapped, in dense order
    state: E2State = index.cached("e2graphrag.state", lambda: None)
    question = [q for q, t in state.query_terms.items() if t == ["snape", "harry"]][-1]  # r's
    ranking = index.dense_search(index.embed_query(question + "\n(A) option text harry"), 10).ids.tolist()
    assert ids[3:] == [c for c in ranking if c not in ids[:3]][:7]
    assert len(r.items) >= 2  # the filled chunks are evidence too


def test_fallback_leaves_full_and_global_results_alone(index: FakeIndex) -> None:
    r = ask(index, ["p", "q", "r"], k=2, fallback="chunk.vdb")  # 2 chunks mapped: k reached
    assert (r.mode, r.branch) == ("local", "shrink") and "filled" not in r.info
    r = ask(index, ["a2", "z2"], fallback="chunk.vdb")
    assert (r.mode, r.branch) == ("global", "no_shared_chunk") and "filled" not in r.info


def test_fallback_must_name_a_chunk_ranking(index: FakeIndex) -> None:
    with pytest.raises(ConfigError, match=r"chunk\.vdb"):
        ask(index, ["snape", "harry"], k=10, fallback="e2graphrag.entities")
    with pytest.raises(ConfigError, match="unknown operator"):
        ask(index, ["snape", "harry"], k=10, fallback="chunk.nothing")
    assert E2GraphRAG(fallback="chunk.vdb").requires == ("vectors", "tree", "entity_graph")
