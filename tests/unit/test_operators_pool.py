"""The §6.1 operator pool on the hand-made world of :mod:`tests.operator_world`, hand-computed."""

from __future__ import annotations

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.providers.llm import FakeLLM
from paretorag.retrieval.methods.pipeline import Pipeline
from paretorag.retrieval.operators import get_operator
from paretorag.retrieval.operators.common import parse_choices
from paretorag.retrieval.operators.question import parse_keywords
from paretorag.retrieval.query import QueryOptions, State
from paretorag.types import Budget, Scored
from tests.operator_world import StubIndex, extractive_index, prepared_state

MARIE, WARSAW, PARIS, PIERRE, POLAND, NOBEL, STOCKHOLM, GERMANY, PHYSICS, RADIUM = range(10)


def run(name: str, state: State | None = None, index: StubIndex | None = None, **params: object) -> Scored:
    return get_operator(name, **params)(index or StubIndex(), state or prepared_state())


def with_entities(rows: list[int], scores: list[float] | None = None) -> State:
    state = prepared_state()
    state.put("entity", Scored(np.array(rows), np.array(scores or [1.0] * len(rows)), "entity"))
    return state


def with_relations(rows: list[int], scores: list[float]) -> State:
    state = prepared_state()
    state.put("relation", Scored(np.array(rows), np.array(scores), "relation"))
    return state


# -- node ---------------------------------------------------------------------------------
def test_node_vdb_finds_the_named_node() -> None:
    state = State("Stockholm")
    out = run("node.vdb", state, graph="kg", k=1)
    assert out.ids.tolist() == [STOCKHOLM] and out.kind == "entity"
    assert run("node.vdb", State("Stockholm"), graph="raptor_tree", k=2).ids.max() < 8


def test_node_vdb_searches_with_terms_or_keywords() -> None:
    state = prepared_state()
    state.terms = ["Germany"]
    assert run("node.vdb", state, graph="kg", k=1, query="terms").ids.tolist() == [GERMANY]
    state.terms = []
    assert len(run("node.vdb", state, query="terms")) == 0
    with pytest.raises(ConfigError, match="query"):
        run("node.vdb", query="title")
    with pytest.raises(ConfigError, match=r"question\.terms"):
        run("node.vdb", State("q"), query="terms")


def test_node_relnode_keeps_the_relations_nodes() -> None:
    out = run("node.relnode", with_relations([4, 7], [0.9, 0.2]))  # Warsaw-Poland, Poland-Germany
    assert out.ids.tolist() == [WARSAW, POLAND, GERMANY]
    np.testing.assert_allclose(out.scores, [0.9, 0.9, 0.2])


def test_node_ppr_spreads_from_the_seeds() -> None:
    out = run("node.ppr", with_entities([STOCKHOLM]), k=3)
    assert out.ids.tolist() == [STOCKHOLM, NOBEL, MARIE]  # the walk leaves Stockholm only through Nobel
    every = run("node.ppr", with_entities([STOCKHOLM]), k=None)
    assert RADIUM not in every.ids.tolist() and len(every) == 9  # isolated: never reached
    assert len(run("node.ppr", with_entities([MARIE], [-1.0]))) == 0  # no positive seed: nothing
    with pytest.raises(ConfigError, match="damping"):
        run("node.ppr", damping=1.0)


def test_node_ppr_specificity_divides_each_seed_by_its_chunk_count() -> None:
    # HippoRAG §3.2: Marie occurs in 3 chunks, Pierre in 1, so with equal seed scores
    # the walk restarts 3 times more at Pierre: the same as seeding 1/3 and 1 by hand
    spec = run("node.ppr", with_entities([MARIE, PIERRE]), k=None, specificity=True)
    hand = run("node.ppr", with_entities([MARIE, PIERRE], [1 / 3, 1.0]), k=None)
    plain = run("node.ppr", with_entities([MARIE, PIERRE]), k=None)
    assert spec.ids.tolist() == hand.ids.tolist()
    np.testing.assert_allclose(spec.scores, hand.scores, rtol=1e-6)
    assert spec.ids[0] == PIERRE and plain.ids[0] == MARIE  # the rare seed now leads
    alone = run("node.ppr", with_entities([RADIUM]), k=None, specificity=True)
    assert alone.ids.tolist() == [RADIUM]  # a node in no chunk keeps its seed score
    with pytest.raises(ConfigError, match="specificity"):
        run("node.ppr", with_entities([MARIE]), specificity="yes")


def test_node_onehop_returns_neighbours() -> None:
    assert sorted(run("node.onehop", with_entities([WARSAW])).ids.tolist()) == [MARIE, POLAND]
    assert sorted(run("node.onehop", with_entities([WARSAW]), include_seeds=True).ids.tolist()) == [
        MARIE,
        WARSAW,
        POLAND,
    ]
    out = run("node.onehop", with_entities([WARSAW, PARIS]))  # Marie neighbours both
    assert out.ids[0] == MARIE and out.scores[0] == 2.0
    assert len(run("node.onehop", with_entities([RADIUM]))) == 0


def test_node_link_maps_each_term_to_one_node() -> None:
    state = prepared_state()
    state.terms = ["Pierre Curie", "Poland", "Pierre Curie"]
    out = run("node.link", state)
    assert sorted(out.ids.tolist()) == [PIERRE, POLAND]
    np.testing.assert_allclose(out.scores, 1.0, atol=1e-6)
    state.terms = None
    with pytest.raises(ConfigError, match=r"question\.terms"):
        run("node.link", state)


def test_node_tfidf_ranks_passages() -> None:
    out = run("node.tfidf", State("Who borders Germany?"))
    assert out.ids.tolist() == [5]  # the only passage with "borders" or "germany"
    assert len(run("node.tfidf", State("zebra"))) == 0
    with pytest.raises(ConfigError, match="TF-IDF"):
        run("node.tfidf", graph="kg")


def test_node_agent_keeps_the_llm_choice_in_its_order() -> None:
    index = StubIndex(FakeLLM(["3, then 1; and 99 (out of range), 3 again"]))
    out = run("node.agent", with_entities([MARIE, WARSAW, NOBEL], [0.9, 0.6, 0.3]), index)
    assert out.ids.tolist() == [NOBEL, MARIE] and out.scores[0] > out.scores[1]
    prompt = index.inner_llm.requests[0].messages[-1].content
    assert "1. Marie Curie" in prompt and "3. Nobel Prize" in prompt
    with pytest.raises(ConfigError, match="--llm openai:MODEL"):
        run("node.agent", index=extractive_index())


# -- relation -------------------------------------------------------------------------------
def test_relation_vdb_and_onehop() -> None:
    assert run("relation.vdb", State("Poland borders Germany"), k=1).ids.tolist() == [7]
    out = run("relation.onehop", with_entities([STOCKHOLM]))
    assert out.ids.tolist() == [6] and out.scores[0] == 3.0  # Nobel (2) + Stockholm (1)


def test_relation_aggregator_sums_both_entities() -> None:
    out = run("relation.aggregator", with_entities([MARIE, WARSAW], [0.5, 0.25]))
    assert out.ids[0] == 0 and out.scores[0] == pytest.approx(0.75)  # Marie born in Warsaw
    assert set(out.ids.tolist()) == {0, 1, 2, 4, 5, 8}  # every relation touching Marie or Warsaw


def test_relation_agent_lists_relation_texts() -> None:
    index = StubIndex(FakeLLM(["2"]))
    out = run("relation.agent", with_relations([0, 5], [0.9, 0.8]), index)
    assert out.ids.tolist() == [5]
    assert "Marie Curie won Nobel Prize" in index.inner_llm.requests[0].messages[-1].content


# -- chunk --------------------------------------------------------------------------------
def test_chunk_aggregator_sums_relation_scores() -> None:
    out = run("chunk.aggregator", with_relations([0, 8, 5], [0.5, 0.25, 0.125]))
    # chunk 0: born in + studied = 0.75; chunk 3: studied + won = 0.375
    assert out.ids.tolist() == [0, 3]
    np.testing.assert_allclose(out.scores, [0.75, 0.375])


def test_chunk_fromrel_orders_by_the_best_relation() -> None:
    out = run("chunk.fromrel", with_relations([6, 8], [0.9, 0.5]))
    assert out.ids.tolist() == [4, 0, 3]


def test_chunk_occurrence_counts_relations_with_both_entities() -> None:
    out = run("chunk.occurrence", with_relations([5, 8], [1.0, 1.0]))  # Marie-Nobel, Marie-Physics
    assert out.ids.tolist()[:2] == [3, 0] and [int(s) for s in out.scores.tolist()[:2]] == [2, 1]
    # the retrieved entities' own chunks are candidates too, ranked after, by entity rank
    out = run("chunk.occurrence", with_relations([4], [1.0]), entities=None)  # Warsaw-Poland
    assert out.ids.tolist() == [2, 0, 5]
    state = with_relations([4], [1.0])
    state.put("entity", Scored(np.array([6]), np.array([1.0]), "entity"))  # Stockholm: chunk 4
    assert run("chunk.occurrence", state).ids.tolist() == [2, 4, 0, 5]


def test_chunk_fromnode_expands_tree_nodes_and_keeps_summaries() -> None:
    state = prepared_state()
    state.put("entity", Scored(np.array([7, 0]), np.array([0.9, 0.4]), "entity"))  # summary 2, leaf 0
    out = run("chunk.fromnode", state, k=4)
    assert set(out.ids.tolist()) == {3, 4, 5, 0} and out.ids.tolist()[-1] == 0
    assert (state.items or [])[0].chunk_id == "node:node 7"


def test_chunk_fuse_is_weighted_rrf() -> None:
    state = prepared_state()
    state.put("a", Scored(np.array([1, 2]), np.array([0.9, 0.1]), "chunk"))
    state.put("b", Scored(np.array([2, 5]), np.array([0.9, 0.1]), "chunk"))
    assert run("chunk.fuse", state, sources=("a", "b")).ids.tolist() == [2, 1, 5]
    assert run("chunk.fuse", state, sources=("a", "b"), weights=(1.0, 0.0)).ids.tolist() == [1, 2]
    with pytest.raises(ConfigError, match="weights"):
        run("chunk.fuse", state, sources=("a", "b"), weights=(1.0,))


def test_context_graph_adds_entity_and_relation_texts() -> None:
    state = prepared_state()
    out = run("context.graph", state, graph="tkg", entities=1, relations=1)
    assert [it.text for it in state.items or []] == [
        "Marie Curie: Marie Curie, a person.",
        "Marie Curie born in Warsaw: Marie Curie born in Warsaw.",
    ]
    assert out.kind == "context" and out.ids.tolist() == [0, 1]


# -- subgraph ------------------------------------------------------------------------------
def test_khoppath_joins_entities_and_records_paths() -> None:
    state = with_entities([STOCKHOLM, MARIE, GERMANY], [0.9, 0.8, 0.7])
    out = run("subgraph.khoppath", state, max_hops=2)
    assert state.info["paths"] == [[STOCKHOLM, NOBEL, MARIE]]  # Germany is 3 hops from Marie
    assert out.ids.tolist() == [6, 5] and out.kind == "subgraph"
    assert [it.text for it in state.items or []] == [
        "Stockholm <-[awarded in]- Nobel Prize <-[won]- Marie Curie"
    ]
    state = with_entities([STOCKHOLM, MARIE, GERMANY], [0.9, 0.8, 0.7])
    run("subgraph.khoppath", state, max_hops=3, mode="all")
    assert state.info["paths"] == [[MARIE, WARSAW, POLAND, GERMANY], [STOCKHOLM, NOBEL, MARIE]]


def test_steiner_connects_the_terminals() -> None:
    state = with_entities([STOCKHOLM, POLAND])
    del state.results["relation"]
    out = run("subgraph.steiner", state)
    assert sorted(out.ids.tolist()) == [0, 4, 5, 6]  # Stockholm-Nobel-Marie-Warsaw-Poland
    np.testing.assert_array_equal(out.scores, 1.0)
    assert len(state.info["paths"]) == 4


def test_agentpath_replaces_the_paths() -> None:
    index = StubIndex(FakeLLM(["Path 2 is relevant."]))
    state = prepared_state()
    run("subgraph.khoppath", state, index)
    state.info["paths"] = [[MARIE, WARSAW, POLAND], [MARIE, NOBEL]]
    out = run("subgraph.agentpath", state, index)
    assert state.info["paths"] == [[MARIE, NOBEL]] and out.ids.tolist() == [5]
    assert [it.chunk_id for it in state.items or []] == ["path:0"]
    with pytest.raises(ConfigError, match="khoppath"):
        run("subgraph.agentpath", State("q"), index)


# -- community -------------------------------------------------------------------------------
def test_community_entity_by_rating_or_occurrence() -> None:
    state = with_entities([WARSAW, POLAND])
    out = run("community.entity", state, k=2)
    assert out.ids.tolist() == [0, 3] and out.kind == "community"  # ratings 8 and 6
    assert [it.chunk_id for it in state.items or []] == ["community:0", "community:3"]
    assert run("community.entity", with_entities([WARSAW, POLAND]), level=0).ids.tolist() == [0]
    occ = run("community.entity", with_entities([NOBEL, STOCKHOLM, MARIE]), order="occurrence", k=2)
    assert occ.ids.tolist() == [4, 1]  # both hold Nobel and Stockholm; 4 is rated higher


def test_community_layer_and_vdb() -> None:
    assert run("community.layer", level=0).ids.tolist() == [0, 1]
    assert run("community.layer", level=1, min_rating=6.5).ids.tolist() == [2, 0, 4]
    assert run("community.vdb", State("Radium"), k=1).ids.tolist() == [5]
    assert run("community.vdb", State("Radium"), k=1, level=0).ids.tolist() == [1]


def test_community_items_fit_the_budget() -> None:
    state = prepared_state(options=QueryOptions(budget=Budget(max_tokens=12)))
    run("community.layer", state)
    assert state.items and sum(it.n_tokens for it in state.items) <= 12


# -- question conversion -----------------------------------------------------------------------
def test_question_terms_with_spacy() -> None:
    state = State("Which prize did Marie Curie win in Stockholm for 2 papers?")
    out = run("question.terms", state)
    assert state.terms is not None and {"Marie Curie", "Stockholm"} <= set(state.terms)
    assert (
        "2" not in state.terms and "prize" in state.terms and "Which prize" not in state.terms
    )  # determiners dropped
    assert state.terms.index("Marie Curie") < state.terms.index("prize")  # entities first
    assert out.ids.tolist() == list(range(len(state.terms)))


def test_question_keywords_with_an_llm_and_offline() -> None:
    state = State("Where was Marie Curie born?")
    run("question.keywords", state)
    assert state.terms == ["Marie Curie", "Warsaw"] and state.info["keywords"] == ["birthplace"]
    offline = State("Where was Marie Curie born?")
    index = extractive_index()
    run("question.keywords", offline, index)
    assert offline.terms == ["Marie Curie"] and index.usage.llm_calls == 0
    with pytest.raises(ConfigError, match="--llm openai:MODEL"):
        run("question.keywords", State("q"), extractive_index(), fallback=False)


def test_llm_replies_are_parsed_tolerantly() -> None:
    assert parse_choices("I pick [2], (4) and 2 again; 7 is out.", 5, 3) == [1, 3]
    assert parse_choices("none", 5, 3) == []
    assert parse_keywords('{"high_level_keywords": ["a"], "low_level_keywords": "b, c"}') == (
        ["a"],
        ["b", "c"],
    )
    broken = 'Sure! "high_level_keywords": ["x", "y"], "low_level_keywords": ["z"'
    assert parse_keywords(broken) == (["x", "y"], [])
    assert parse_keywords("__import__('os')") == ([], [])


# -- composition ------------------------------------------------------------------------------
def test_a_hipporag_like_pipeline_composes_and_sets_params() -> None:
    p = Pipeline(
        steps=[
            ("ner", get_operator("question.terms")),
            ("link", get_operator("node.link")),
            ("spread", get_operator("node.ppr", k=None)),
            ("relations", get_operator("relation.aggregator")),
            ("chunks", get_operator("chunk.aggregator", k=2)),
        ]
    )
    assert p.requires == ("kg",) and not p.uses_llm
    p.set_params(spread__damping=0.85)
    assert p.get_params()["spread__damping"] == 0.85
    state = p.run(StubIndex(), State("Where was Marie Curie born?", QueryOptions(k=3)))
    assert state.get("link").ids.tolist() == [MARIE]
    chunks = state.get("chunk")
    assert len(chunks) == 3 and chunks.ids[0] == 0  # Marie's relations come from chunk 0 most
