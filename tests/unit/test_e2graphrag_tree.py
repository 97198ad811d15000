"""The summary tree (E2GraphRAG §3.1): call counts (App. D.2), structure, prompts, storage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.graphs.base import StructureData
from paretorag.graphs.entities import graph_from_mentions
from paretorag.graphs.graph import graph_from_structure, graph_to_structure
from paretorag.graphs.tree import (
    SUMMARY_PROMPT,
    SummaryTree,
    TreeArrays,
    balanced_order,
    expected_calls,
    level_sizes,
)
from paretorag.progress import NullProgress
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.llm import FakeLLM
from paretorag.retrieval.operators.e2graphrag import node_weights
from paretorag.storage.store import ChunkTable
from paretorag.storage.structures import load_structure, save_structure
from paretorag.types import Chunk

TEXT = "".join(f"Line {i:04d} of a long story about the sea. " for i in range(2000))


def table(doc_sizes: list[int], size: int = 300, overlap: int = 40) -> ChunkTable:
    """Chunks of ``size`` characters overlapping by ``overlap``, for documents of the given chunk counts."""
    chunks = []
    for d, n in enumerate(doc_sizes):
        for i in range(n):
            a = i * (size - overlap)
            chunks.append(Chunk(f"d{d}#{i}", f"d{d}", i, a, a + size, TEXT[a : a + size], 60, f"doc {d}"))
    return ChunkTable.from_chunks(chunks)


class Ctx:
    def __init__(self, chunks: ChunkTable, llm: FakeLLM) -> None:
        self.chunks = chunks
        self.embedder = HashEmbedder(16)
        self.tokenizer = RegexTokenizer()
        self.progress = NullProgress()
        self.workers = 2
        self._llm = llm
        self.stages: list[str] = []

    def llm(self, stage: str) -> FakeLLM:
        self.stages.append(stage)
        return self._llm

    def structure(self, name: str) -> StructureData:
        raise KeyError(name)


def build(doc_sizes: list[int], **params: object) -> tuple[TreeArrays, FakeLLM, StructureData]:
    llm = FakeLLM(lambda r: f"S({len(r.task.texts)})")
    data = SummaryTree(**params).build(Ctx(table(doc_sizes), llm))  # type: ignore[arg-type]
    return TreeArrays.from_structure(data), llm, data


@pytest.mark.parametrize(
    ("n", "g"), [(1, 5), (2, 5), (5, 5), (6, 5), (25, 5), (26, 5), (100, 5), (17, 2), (31, 3), (64, 4)]
)
def test_llm_calls_equal_the_sum_of_ceilings(n: int, g: int) -> None:
    tree, llm, data = build([n], g=g)
    sizes = level_sizes(n, g)
    assert len(llm.requests) == expected_calls(n, g) == sum(sizes)
    # the closed form of App. D.2, for the levels built: ceil(n / g**k), k = 1..K
    assert sizes == [-(-n // g**k) for k in range(1, len(sizes) + 1)]
    assert sizes == [] or (sizes[-1] <= g and (len(sizes) == 1 or sizes[-2] > g))
    assert tree.n_nodes == n + sum(sizes) and data.meta["stats"]["llm_calls"] == sum(sizes)
    assert [int((tree.level == lv).sum()) for lv in range(1, len(sizes) + 1)] == sizes


def test_tree_structure_groups_consecutive_nodes() -> None:
    tree, _, _ = build([12], g=5)  # level 1: [0-4] [5-9] [10-11]; 3 <= 5: stop
    n = 12
    assert [tree.children(v).tolist() for v in range(n, tree.n_nodes)] == [
        [0, 1, 2, 3, 4],
        [5, 6, 7, 8, 9],
        [10, 11],
    ]
    assert tree.parent[:n].tolist() == [12] * 5 + [13] * 5 + [14] * 2
    assert tree.parent[n:].tolist() == [-1, -1, -1]
    assert tree.first_row[n:].tolist() == [0, 5, 10] and tree.last_row[n:].tolist() == [4, 9, 11]
    assert tree.summary_vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(tree.summary_vectors, axis=1), 1.0)


def test_second_level_summarizes_summaries() -> None:
    tree, llm, _ = build([30], g=5)  # 6 summaries > 5 -> 2 more
    assert tree.level[30:].tolist() == [1] * 6 + [2] * 2
    assert tree.children(36).tolist() == [30, 31, 32, 33, 34] and tree.children(37).tolist() == [35]
    assert tree.first_row[36] == 0 and tree.last_row[36] == 24 and tree.last_row[37] == 29
    second = llm.requests[6:]
    assert [r.task.texts for r in second] == [("S(1)",) * 5, ("S(1)",)]


def test_documents_get_their_own_trees_and_requests_are_minimal_prompts() -> None:
    tree, llm, _ = build([7, 1, 3], g=5)
    # doc0: 7 chunks -> 2 summaries; doc1: 1 chunk -> none; doc2: 3 chunks -> 1 summary
    assert len(llm.requests) == 3 == expected_calls(7, 5) + expected_calls(1, 5) + expected_calls(3, 5)
    assert [tree.children(v).tolist() for v in range(11, 14)] == [[0, 1, 2, 3, 4], [5, 6], [8, 9, 10]]
    req = llm.requests[0]
    assert req.task.kind == "summarize" and req.max_tokens == 1200
    assert [m.role for m in req.messages] == ["user"]
    # the overlap of adjacent chunks is sent once: the text is exactly the document span
    assert req.task.texts == (TEXT[0 : 4 * 260 + 300],)
    assert req.messages[0].content == SUMMARY_PROMPT.format(text=TEXT[0 : 4 * 260 + 300])
    corpus, llm2, _ = build([7, 1, 3], g=5, scope="corpus", grouping="order")
    assert len(llm2.requests) == expected_calls(11, 5) and corpus.children(11).tolist() == [0, 1, 2, 3, 4]


def test_without_overlap_merging_chunks_are_sent_as_they_are() -> None:
    _, llm, _ = build([3], g=5, merge_overlap=False)
    chunks = table([3])
    assert llm.requests[0].task.texts == chunks.texts


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="g must be at least 2"):
        build([3], g=1)
    with pytest.raises(ConfigError, match="scope"):
        build([3], scope="book")
    with pytest.raises(ConfigError, match="grouping"):
        build([3], grouping="random")
    with pytest.raises(ConfigError, match="min_tokens"):
        build([3], scope="auto", min_tokens=0)
    assert SummaryTree(g=4).clone().get_params()["g"] == 4


def test_structures_round_trip_through_disk_without_pickle(tmp_path: Path) -> None:
    _, _, data = build([12], g=5)
    save_structure(tmp_path, "tree-x", data)
    back = TreeArrays.from_structure(load_structure(tmp_path, "tree-x"))
    assert back.summaries == ["S(1)"] * 3 and back.n_chunks == 12
    g = graph_to_structure(graph_from_mentions([[["ångström", "café"]], [["café"]]], 2), meta={"n_chunks": 2})
    save_structure(tmp_path, "graph-x", g)
    graph = graph_from_structure(load_structure(tmp_path, "graph-x"))
    assert graph.names == ["café", "ångström"] and graph.node_chunks.toarray().tolist() == [[1, 1], [1, 0]]


# -- trees over corpora of short documents -------------------------------------------------
TOPICS = (
    "river boat harbour sailor tide anchor",
    "violin concert orchestra symphony composer opera",
)


def passages(n: int) -> ChunkTable:
    """``n`` one-chunk documents alternating between two topics (even: sea, odd: music)."""
    chunks = []
    for d in range(n):
        text = f"{TOPICS[d % 2]} passage {d}."
        chunks.append(Chunk(f"p{d}#0", f"p{d}", 0, 0, len(text), text, 12, f"title {d}"))
    return ChunkTable.from_chunks(chunks)


def build_table(chunks: ChunkTable, **params: object) -> tuple[TreeArrays, FakeLLM]:
    llm = FakeLLM(lambda r: " ".join(r.task.texts))
    data = SummaryTree(**params).build(Ctx(chunks, llm))  # type: ignore[arg-type]
    return TreeArrays.from_structure(data), llm


def leaves(tree: TreeArrays, node: int) -> list[int]:
    return sorted(tree.leaf_rows[tree.first_row[node] : tree.last_row[node] + 1].tolist())


def test_per_document_tree_gives_no_summary_on_a_passage_corpus() -> None:
    tree, llm = build_table(passages(40), scope="document")
    assert tree.n_nodes == 40 and not llm.requests


@pytest.mark.parametrize("grouping", ["order", "vector"])
def test_auto_scope_pools_short_documents_into_one_tree(grouping: str) -> None:
    tree, llm = build_table(passages(40), scope="auto", grouping=grouping)
    assert len(llm.requests) == expected_calls(40, 5) == 8 + 2 and tree.n_nodes == 50
    assert sorted(tree.leaf_rows.tolist()) == list(range(40))
    for node in range(40, tree.n_nodes):  # a node's leaves are its children's leaves
        kids = tree.children(node).tolist()
        assert leaves(tree, node) == sorted(r for c in kids for r in (leaves(tree, c) if c >= 40 else [c]))
    groups = [sorted(tree.children(v).tolist()) for v in range(40, 48)]
    if grouping == "order":
        assert groups == [list(range(i, i + 5)) for i in range(0, 40, 5)]
    else:  # clustered by vector: every first-level group holds one topic only
        assert all(len({r % 2 for r in grp}) == 1 for grp in groups), groups


def test_auto_scope_keeps_long_documents_in_their_own_trees() -> None:
    chunks = []
    for i in range(7):  # a long document: 7 chunks of 60 tokens = 420 tokens
        a = i * 260
        chunks.append(Chunk(f"d#{i}", "d", i, a, a + 300, TEXT[a : a + 300], 60, "long"))
    for d in range(6):
        text = f"{TOPICS[d % 2]} short {d}."
        chunks.append(Chunk(f"s{d}#0", f"s{d}", 0, 0, len(text), text, 10, f"short {d}"))
    tree, llm = build_table(ChunkTable.from_chunks(chunks), scope="auto", min_tokens=100, grouping="order")
    # the long document: 2 summaries of its own; the 6 short ones: 2 summaries over all six
    assert len(llm.requests) == expected_calls(7, 5) + expected_calls(6, 5) == 4
    own = [v for v in range(13, tree.n_nodes) if set(leaves(tree, v)) <= set(range(7))]
    pooled = [v for v in range(13, tree.n_nodes) if set(leaves(tree, v)) <= set(range(7, 13))]
    assert len(own) == 2 and len(pooled) == 2 and len(own) + len(pooled) == tree.n_nodes - 13
    assert leaves(tree, own[0]) == [0, 1, 2, 3, 4]


def test_occurrence_weights_follow_the_leaf_order() -> None:
    tree, _ = build_table(passages(40), scope="auto", grouping="vector")
    weights = np.arange(40, dtype=np.int64) ** 2  # per chunk row
    nodes = np.arange(tree.n_nodes)
    got = node_weights(tree.in_leaf_order(weights), tree.first_row, tree.last_row, nodes)
    assert got.tolist() == [int(weights[leaves(tree, v)].sum()) for v in range(tree.n_nodes)]
    assert tree.first_chunk(np.array([3])).tolist() == [3]


def test_balanced_order_makes_every_block_a_cluster() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 16)) * 10
    shuffle = rng.permutation(125)
    x = (np.repeat(centres, 25, axis=0) + rng.normal(size=(125, 16)))[shuffle]  # 5 clusters of 25
    order = balanced_order(x, 5)
    assert sorted(order.tolist()) == list(range(125))
    label = np.repeat(np.arange(5), 25)[shuffle][order]
    assert all(len(set(label[i : i + 25].tolist())) == 1 for i in range(0, 125, 25))
