"""E2GraphRAG operators on hand-built graphs and trees (E2GraphRAG §3.2, App. D.5)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from paretorag.errors import ConfigError
from paretorag.graphs.entities import graph_from_mentions
from paretorag.graphs.graph import Graph, graph_from_structure, graph_to_structure
from paretorag.kernels import hop_distances
from paretorag.retrieval.operators import e2graphrag as op
from paretorag.retrieval.operators import e2graphrag_evidence as ev
from paretorag.storage.store import ChunkTable
from paretorag.types import Chunk, Scored


def load_graph(per_chunk: list[list[list[str]]]) -> Graph:
    return graph_from_structure(graph_to_structure(graph_from_mentions(per_chunk, len(per_chunk))))


def test_graph_counts_sentence_cooccurrence_and_occurrences() -> None:
    g = load_graph(
        [
            [["harry", "wand", "harry"], ["harry", "snape"]],  # harry-wand once: one sentence
            [["wand", "harry"], ["owl"]],
        ]
    )
    assert g.names == ["harry", "owl", "snape", "wand"]
    adj = g.adjacency.toarray()
    i = g.ids
    assert adj[i["harry"], i["wand"]] == adj[i["wand"], i["harry"]] == 2  # two sentences
    assert adj[i["harry"], i["snape"]] == 1 and adj[i["snape"], i["wand"]] == 0
    assert adj.diagonal().sum() == 0 and adj[i["owl"]].sum() == 0  # no self-loops, owl isolated
    occ = g.node_chunks.toarray()
    assert occ[i["harry"]].tolist() == [3, 1] and occ[i["owl"]].tolist() == [0, 1]
    assert (g.chunk_nodes.toarray() == occ.T).all()
    assert g.component[i["owl"]] != g.component[i["harry"]] == g.component[i["snape"]]


@pytest.mark.parametrize("seed", range(8))
def test_hop_distances_match_networkx_shortest_paths(seed: int) -> None:
    rng = np.random.default_rng(seed)
    if seed % 2:  # hubs (preferential attachment) beside a sparse random part: two components at least
        G = nx.disjoint_union(
            nx.barabasi_albert_graph(50, 1 + seed % 3, seed=seed), nx.gnp_random_graph(30, 0.06, seed=seed)
        )
    else:
        G = nx.gnp_random_graph(80, 0.035, seed=seed)  # sparse: several components, long paths
    adj = nx.to_scipy_sparse_array(G, format="csr", dtype=np.int32)
    adj = sp.csr_matrix(adj)
    _, comp = sp.csgraph.connected_components(adj, directed=False)
    sources = rng.choice(80, size=9, replace=False).astype(np.int64)
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    for h in range(0, 6):
        for component in (comp, None):
            d = hop_distances(adj, sources, h, component)
            for a in range(9):
                for b in range(9):
                    true = lengths[int(sources[a])].get(int(sources[b]), 10**9)
                    assert d[a, b] == min(true, h + 1), (h, a, b)


def test_graph_filter_keeps_pairs_within_h_and_validates_h() -> None:
    d = np.array([[0, 1, 3, 5], [1, 0, 2, 5], [3, 2, 0, 5], [5, 5, 5, 0]])
    assert op.graph_filter(d, 2).tolist() == [[0, 1], [1, 2]]
    assert op.graph_filter(d, 3).tolist() == [[0, 1], [0, 2], [1, 2]]
    assert op.graph_filter(d, 0).shape == (0, 2)
    with pytest.raises(ConfigError, match="h must be"):
        op.graph_filter(d, -1)


def test_index_mapping_is_union_of_pair_intersections() -> None:
    # entity rows: chunks containing each entity
    occ = sp.csr_matrix(
        np.array(
            [
                [1, 1, 0, 1, 0],  # a
                [0, 1, 0, 1, 1],  # b
                [1, 0, 1, 0, 1],  # c
            ]
        )
    )
    sources = np.array([0, 1, 2])

    def m(occ, sources, pairs):
        return op.index_mapping(occ, sources, pairs)

    assert m(occ, sources, np.array([[0, 1]])).tolist() == [1, 3]
    assert m(occ, sources, np.array([[0, 1], [1, 2]])).tolist() == [1, 3, 4]
    assert m(occ, sources, np.array([[0, 2]])).tolist() == [0]
    assert m(occ, sources, np.zeros((0, 2), np.int64)).tolist() == []


def case_study_tree() -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Chunks c1..c9 (rows 0..8), s1..s3 over three chunks each (nodes 9..11), a root over s1..s3 (node 12)."""
    children = [[] for _ in range(9)] + [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    first = np.array([*range(9), 0, 3, 6, 0])
    last = np.array([*range(9), 2, 5, 8, 8])
    return first, last, children


def test_occurrence_ranking_reproduces_the_case_study() -> None:
    """App. D.5: c4 has Voldemort 4 times, c6 twice, c8 three times; s2 = c4 + c5 + c6 = 6."""
    first, last, children = case_study_tree()
    chunk_w = np.zeros(9, np.int64)
    chunk_w[[3, 5, 7]] = [4, 2, 3]  # c4, c6, c8

    def recursive(node: int) -> int:  # the paper's definition, literally
        return int(chunk_w[node]) if not children[node] else sum(recursive(c) for c in children[node])

    nodes = np.arange(13)
    w = op.node_weights(chunk_w, first, last, nodes)
    assert w.tolist() == [recursive(n) for n in nodes]
    assert w[10] == 6 and w[12] == 9  # s2 and the root
    dense = Scored(
        np.array([7, 10, 3, 5, 0]), np.array([0.9, 0.8, 0.7, 0.6, 0.5]), kind="node"
    )  # c8 s2 c4 c6 c1
    top = op.occurrence_ranking(dense, op.node_weights(chunk_w, first, last, dense.ids), 2)
    assert top.ids.tolist() == [10, 3]  # "we ultimately select c4 and s2"
    # zero weights keep the dense order at the end
    assert op.occurrence_ranking(dense, np.array([0, 0, 1, 0, 0]), 5).ids.tolist() == [3, 7, 10, 5, 0]


def test_chunk_occurrences_sum_query_entities() -> None:
    occ = sp.csr_matrix(np.array([[2, 0, 1], [1, 1, 0], [5, 5, 5]]))
    assert op.chunk_occurrences(occ, np.array([0, 1])).tolist() == [3, 1, 1]
    assert op.chunk_occurrences(occ, np.zeros(0, np.int64)).tolist() == [0, 0, 0]


def test_entity_aware_ranking_orders_by_coverage_then_occurrence() -> None:
    # chunks x entities
    ce = sp.csr_matrix(
        np.array(
            [
                [1, 0, 0],  # row 0: 1 entity, 1 occurrence
                [3, 3, 0],  # row 1: 2 entities, 6
                [1, 1, 1],  # row 2: 3 entities, 3
                [0, 9, 0],  # row 3: 1 entity, 9
                [1, 1, 0],  # row 4: 2 entities, 2
            ]
        )
    )
    top = op.entity_aware_ranking(np.array([4, 3, 2, 1, 0]), ce, np.array([0, 1, 2]), 4)
    assert top.ids.tolist() == [2, 1, 4, 3]
    assert np.all(np.diff(top.scores) < 0)


def test_collapsed_tree_search_merges_chunks_and_summaries() -> None:
    q = np.array([1.0, 0.0], np.float32)
    summaries = np.array([[0.6, 0.8], [0.95, np.sqrt(1 - 0.95**2)]], np.float32)
    hits = Scored(np.array([2, 0, 1]), np.array([0.9, 0.5, 0.1]))
    out = op.collapsed_tree_search(hits, summaries, 3, q, 3)
    assert out.kind == "node" and out.ids.tolist() == [4, 2, 3]  # s1 (0.95), c2 (0.9), s0 (0.6)


def test_map_entities_ignores_unknown_and_repeats() -> None:
    assert op.map_entities(["b", "zzz", "a", "b"], {"a": 0, "b": 1}).tolist() == [1, 0]
    assert op.map_entities([], {"a": 0}).size == 0


DOC = "".join(f"Sentence number {i} of the book. " for i in range(60))


def chunk_table(spans: list[tuple[int, int]], doc_id: str = "d") -> ChunkTable:
    chunks = [Chunk(f"{doc_id}#{i}", doc_id, i, a, b, DOC[a:b], 10, "book") for i, (a, b) in enumerate(spans)]
    return ChunkTable.from_chunks(chunks)


def test_evidence_merges_adjacent_chunks_without_their_overlap() -> None:
    spans = [(0, 400), (350, 800), (760, 1200), (1200, 1500), (1600, 1900)]  # overlaps, touch, gap
    table = chunk_table(spans)
    units = ev.evidence_units(table, [], np.array([2, 0, 1, 3, 4]), np.array([2, 0, 1, 3, 4]), [("x",)] * 5)
    passages = ev.merge_adjacent(units)
    assert [p.rows for p in passages] == [(0, 1, 2, 3), (4,)]
    assert passages[0].text == DOC[0:1500]  # exactly the document span, overlap dropped
    assert passages[1].text == DOC[1600:1900]


def test_evidence_groups_by_coverage_each_chunk_once_document_order() -> None:
    spans = [(i * 300, i * 300 + 300) for i in range(6)]
    table = chunk_table(spans)
    # non-adjacent rows so nothing merges except rows 4 and 5
    nodes = np.array([5, 0, 2, 4, 0])
    keys = [("harry", "snape"), ("harry",), ("harry", "snape", "wand"), ("harry", "snape"), ("harry",)]
    units = ev.evidence_units(table, [], nodes, nodes, keys)
    groups = ev.group_evidence(units)
    assert [g[0] for g in groups] == [("harry", "snape", "wand"), ("harry", "snape"), ("harry",)]
    assert [[p.rows for p in g[1]] for g in groups] == [[(2,)], [(4, 5)], [(0,)]]
    text = ev.format_evidence(groups)
    assert text.startswith("harry-snape-wand:\n[1] book\n" + DOC[600:900])
    # a merged run names its chunk range, so one context holding many chunks says so
    assert "harry-snape:\n[2] book (chunks 4-5, merged)\n" + DOC[1200:1800] in text
    assert [p.label for g in groups for p in g[1]] == ["book", "book (chunks 4-5, merged)", "book"]
    assert text.count("[3]") == 1 and "[4]" not in text  # row 0 listed once


def test_evidence_summary_is_its_own_passage_and_keys_cover_leaves() -> None:
    spans = [(i * 300, i * 300 + 290) for i in range(4)]
    table = chunk_table(spans)
    occ = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 0, 2, 0]]))  # entity 0 in row 0, entity 1 in row 2
    first, last = np.array([0, 2, 0]), np.array([0, 2, 3])  # nodes: c0, c2, summary over c0..c3
    keys = ev.entity_keys(occ, np.array([1, 0]), ["alpha", "beta"], first, last)
    assert keys == [("alpha",), ("beta",), ("beta", "alpha")]  # question order kept
    units = ev.evidence_units(table, ["A summary."], np.array([0, 2, 4]), first, keys)
    groups = ev.group_evidence(units)
    assert groups[0][0] == ("beta", "alpha") and groups[0][1][0].is_summary
    assert groups[0][1][0].text == "A summary." and "(summary)" in groups[0][1][0].title
