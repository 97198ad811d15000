"""Shared fixtures of the builder tests: a tiny corpus, a BuildContext stub, a save/load round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from paretorag.graphs.graph import Graph, graph_from_structure
from paretorag.progress import NullProgress
from paretorag.providers.base import Completion, Request
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.llm import ExtractiveLLM
from paretorag.storage.store import ChunkTable
from paretorag.storage.structures import StructureData, load_structure, save_structure
from paretorag.types import Chunk

CORPUS = [
    "Barack Obama was born in Hawaii in 1961. Obama studied law at Harvard University.",
    "Michelle Obama married Barack Obama in Chicago. She studied law at Harvard University.",
    "The film Jaws was directed by Steven Spielberg. Jaws won three awards.",
    "Steven Spielberg was born in Cincinnati. Spielberg founded DreamWorks in Los Angeles.",
]


def table(texts: list[str] = CORPUS) -> ChunkTable:
    return ChunkTable.from_chunks(
        [Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t, len(t.split()), f"doc {i}") for i, t in enumerate(texts)]
    )


class NoCallLLM(ExtractiveLLM):
    """The extractive backend, failing the test if a builder calls it."""

    def complete(self, request: Request) -> Completion:
        raise AssertionError("the LLM-free path must not call the LLM")


class Ctx:
    """The BuildContext a builder sees (:class:`paretorag.graphs.base.BuildContext`)."""

    def __init__(
        self, chunks: ChunkTable, llm: Any = None, structures: dict[str, StructureData] | None = None
    ):
        self.chunks = chunks
        self.embedder = HashEmbedder(32)
        self.tokenizer = RegexTokenizer()
        self.progress = NullProgress()
        self.workers = 1
        self._llm = llm if llm is not None else NoCallLLM()
        self._structures = structures or {}
        self.stages: list[str] = []
        self.embed_titles = True
        self.kv: dict[str, Any] = {}  # the index's per-chunk cache

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        return {k: self.kv[k] for k in keys if k in self.kv}

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        self.kv.update(items)

    def llm(self, stage: str) -> Any:
        self.stages.append(stage)
        return self._llm

    def structure(self, name: str) -> StructureData:
        return self._structures[name]


def round_trip(data: StructureData, tmp: Path) -> Graph:
    """Save and load a structure; the graph read back must equal the one built."""
    save_structure(tmp, "s", data)
    back = load_structure(tmp, "s")
    g0, g1 = graph_from_structure(data), graph_from_structure(back)
    assert g1.names == g0.names and g1.kinds == g0.kinds and g1.descriptions == g0.descriptions
    assert (g1.adjacency != g0.adjacency).nnz == 0 and (g1.node_chunks != g0.node_chunks).nnz == 0
    for a, b in ((g0.node_vectors, g1.node_vectors), (g0.edge_vectors, g1.edge_vectors)):
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b))
    if g0.edges is not None:
        assert g1.edges is not None
        assert np.array_equal(g0.edges.src, g1.edges.src) and np.array_equal(g0.edges.weight, g1.edges.weight)
        assert g0.edges.relation == g1.edges.relation and g0.edges.description == g1.edges.description
        assert g0.edges.keywords == g1.edges.keywords and (g0.edges.chunks != g1.edges.chunks).nnz == 0
    c0, c1 = g0.communities, g1.communities
    assert (c0 is None) == (c1 is None)
    if c0 is not None and c1 is not None:
        assert np.array_equal(c0.level, c1.level) and np.array_equal(c0.parent, c1.parent)
        assert c0.reports == c1.reports and (c0.members != c1.members).nnz == 0
    assert back.meta["summary"] == data.meta["summary"]
    return g1
