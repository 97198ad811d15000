"""Chunk operators of the unified framework (§6.1, Table 3 "Chunk" column).

Each returns :class:`~paretorag.types.Scored` chunk rows (the index's chunk table),
kind ``"chunk"``, stored under ``"chunk"``; nothing else is set (methods compose).
The chunk VDB operator of the appendix is :class:`paretorag.operators.dense.ChunkVDB`.

- ``chunk.aggregator``: sum of the scores of the relations extracted from the chunk
  (HippoRAG, FastGraphRAG);
- ``chunk.fromrel``: best score of the given relations it contains (GLightRAG,
  HLightRAG);
- ``chunk.occurrence``: number of given relations whose two entities both occur in it
  (LGraphRAG, LLightRAG, HLightRAG).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..kernels.rank import aggregate, top_k
from ..types import Scored
from .base import Operator, check_positive_int, load_graph, register_operator
from .common import edges_of, seed_vector, seeds

if TYPE_CHECKING:
    from ..query import IndexView, State

KIND = "chunk"


def _binary(index: IndexView, key: str, m: sp.csr_matrix) -> sp.csr_matrix:
    """``m`` with every stored non-zero set to 1 (occurrence counts read as "contains"), built once."""

    def build() -> sp.csr_matrix:
        out = sp.csr_matrix(m, copy=True)
        out.data = (out.data != 0).astype(np.float64)
        out.eliminate_zeros()
        return out

    binary: sp.csr_matrix = index.cached(key, build)
    return binary


@register_operator
class ChunkAggregator(Operator):
    """Chunk score = sum of the scores of the relations extracted from it (§6.1 chunk Aggregator).

    HippoRAG / FastGraphRAG: relation scores (from the relation Aggregator) are pushed
    through the edge -> chunk incidence; chunks that no scored relation came from are
    never returned.
    """

    name = "chunk.aggregator"
    kind = "chunk"
    produces = "chunk"
    consumes = ("relation",)
    paper = "unified-framework §6.1 chunk Aggregator, Table 3 (HippoRAG, FastGraphRAG)"

    def __init__(self, *, graph: str = "kg", k: int = 4, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        graph = load_graph(index, self.graph)
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        if not len(rel):
            return Scored.empty(KIND)
        inc = _binary(index, f"edge_chunks01:{self.graph}", e.chunks)
        scores = aggregate(inc, seed_vector(state, self.source, len(e), "relation"))
        rows = np.unique(inc[rel.ids].indices).astype(np.int64)
        return top_k(scores[rows], k, KIND, rows=rows)


@register_operator
class ChunkFromRel(Operator):
    """The chunks that contain the given relations (§6.1 chunk FromRel; LightRAG global).

    A chunk scores the best score among the given relations extracted from it, so
    the chunks of the best relation come first (LightRAG orders them by relation).
    """

    name = "chunk.fromrel"
    kind = "chunk"
    produces = "chunk"
    consumes = ("relation",)
    paper = "unified-framework §6.1 chunk FromRel, Table 3 (GLightRAG, HLightRAG)"

    def __init__(self, *, graph: str = "rkg", k: int = 4, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        graph = load_graph(index, self.graph)
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        sub = sp.coo_matrix(_binary(index, f"edge_chunks01:{self.graph}", e.chunks)[rel.ids])
        if not sub.nnz:
            return Scored.empty(KIND)
        score = np.full(graph.n_chunks, -np.inf)
        np.maximum.at(score, sub.col, rel.scores[sub.row].astype(np.float64))
        rows = np.flatnonzero(np.isfinite(score))
        return top_k(score[rows], k, KIND, rows=rows)


@register_operator
class ChunkOccurrence(Operator):
    """Chunks ranked by how many given relations have both entities in them (§6.1 chunk Occurrence).

    LightRAG local / LGraphRAG: the candidates are the chunks of the given relations'
    entities; a chunk scores the number of those relations whose source and target
    both occur in it (node -> chunk incidence), ties by row.
    """

    name = "chunk.occurrence"
    kind = "chunk"
    produces = "chunk"
    consumes = ("relation",)
    paper = "unified-framework §6.1 chunk Occurrence, Table 3 (LGraphRAG, LLightRAG, HLightRAG)"

    def __init__(self, *, graph: str = "rkg", k: int = 4, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        graph = load_graph(index, self.graph)
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        if not len(rel):
            return Scored.empty(KIND)
        occurs = _binary(index, f"node_chunks01:{self.graph}", graph.node_chunks)
        ends = np.unique(np.concatenate([e.src[rel.ids], e.dst[rel.ids]]))
        rows = np.unique(occurs[ends].indices).astype(np.int64)
        both = occurs[e.src[rel.ids]].multiply(occurs[e.dst[rel.ids]])
        count = np.asarray(both.sum(axis=0)).ravel()
        return top_k(count[rows], k, KIND, rows=rows)
