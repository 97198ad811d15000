"""The summary tree (E2GraphRAG §3.1): call counts (App. D.2), structure, prompts, storage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.graphs.base import StructureData
from paretorag.graphs.entities import graph_from_mentions
from paretorag.graphs.tree import SUMMARY_PROMPT, SummaryTree, TreeArrays, expected_calls, level_sizes
from paretorag.progress import NullProgress
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.llm import FakeLLM
from paretorag.store import ChunkTable
from paretorag.structures import graph_from_structure, graph_to_structure, load_structure, save_structure
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
    corpus, llm2, _ = build([7, 1, 3], g=5, scope="corpus")
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
