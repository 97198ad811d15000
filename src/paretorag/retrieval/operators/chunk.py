"""Chunk operators of the unified framework (§6.1, Table 3 "Chunk" column).

Each returns :class:`~paretorag.types.Scored` chunk rows (the index's chunk table),
kind ``"chunk"``, stored under ``"chunk"``; nothing else is set (methods compose).
The chunk VDB operator of the appendix is :class:`paretorag.retrieval.operators.dense.ChunkVDB`.

- ``chunk.aggregator``: sum of the scores of the relations extracted from the chunk
  (HippoRAG, FastGraphRAG);
- ``chunk.fromrel``: best score of the given relations it contains (GLightRAG,
  HLightRAG);
- ``chunk.occurrence``: number of given relations whose two entities both occur in it
  (LGraphRAG, LLightRAG, HLightRAG);
- ``chunk.fromnode``: the chunks of the given nodes, in the nodes' order (RAPTOR's
  collapsed tree, KGP's passages); a missing step of §6.1's pool, added here;
- ``chunk.fuse``: weighted reciprocal rank fusion of several chunk results (LightRAG
  hybrid, KGP: seeds and traversed passages).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...kernels.rank import aggregate, top_k
from ...types import ContextItem, Scored
from .base import GraphOperator, register_operator
from .common import add_items, edges_of, seed_vector, seeds, text_item

if TYPE_CHECKING:
    from ...graphs.graph import Graph
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
class ChunkAggregator(GraphOperator):
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

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        if not len(rel):
            return Scored.empty(KIND)
        inc = _binary(index, f"edge_chunks01:{self.graph}", e.chunks)
        scores = aggregate(inc, seed_vector(state, self.source, len(e), "relation"))
        rows = np.unique(inc[rel.ids].indices).astype(np.int64)
        return top_k(scores[rows], k, KIND, rows=rows)


@register_operator
class ChunkFromRel(GraphOperator):
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

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
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
class ChunkOccurrence(GraphOperator):
    """Chunks ranked by how many given relations have both entities in them (§6.1 chunk Occurrence).

    LightRAG local / LGraphRAG: the candidates are the chunks of the given relations'
    entities and, with ``entities`` set, of the retrieved entities themselves (as
    LightRAG's and GraphRAG's code take the text units of the retrieved entities, so an
    entity with no relation still brings its chunks); a chunk scores the number of the
    relations whose source and target both occur in it (node -> chunk incidence), ties
    by the rank of the best retrieved entity it holds, then by row.

    Parameters
    ----------
    graph : str
        Structure read ("rkg").
    k : int
        Chunks kept (4).
    source : str
        Result holding the relations ("relation").
    entities : str, optional
        Result holding the retrieved entities ("entity"); None: relations' entities only.
    """

    name = "chunk.occurrence"
    kind = "chunk"
    produces = "chunk"
    consumes = ("relation",)
    paper = "unified-framework §6.1 chunk Occurrence, Table 3 (LGraphRAG, LLightRAG, HLightRAG)"

    def __init__(
        self, *, graph: str = "rkg", k: int = 4, source: str = "relation", entities: str | None = "entity"
    ) -> None:
        self.graph = graph
        self.k = k
        self.source = source
        self.entities = entities

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        ent = Scored.empty("entity")
        if self.entities and self.entities in state.results:
            ent = seeds(state, self.entities, graph.n_nodes, "entity").sorted()
        if not len(rel) and not len(ent):
            return Scored.empty(KIND)
        occurs = _binary(index, f"node_chunks01:{self.graph}", graph.node_chunks)
        ends = np.unique(np.concatenate([e.src[rel.ids], e.dst[rel.ids], ent.ids]))
        rows = np.unique(occurs[ends].indices).astype(np.int64)
        count = np.zeros(graph.n_chunks)
        if len(rel):
            both = occurs[e.src[rel.ids]].multiply(occurs[e.dst[rel.ids]])
            count = np.asarray(both.sum(axis=0)).ravel()
        first = np.full(graph.n_chunks, len(ent), dtype=np.float64)
        for i in range(len(ent) - 1, -1, -1):  # the best entity a chunk holds
            first[occurs[int(ent.ids[i])].indices] = i
        order = rows[np.lexsort((rows, first[rows], -count[rows]))][:k]
        score = count[order] + 1.0 / (2.0 + first[order])  # count first; the entity rank breaks ties
        return Scored(order, score.astype(np.float32), KIND)


def summary_item(index: IndexView, key: str, text: str, score: float, rows: np.ndarray) -> ContextItem:
    """A summary as a context item that cites the passages it summarises: their chunk ids as
    ``sources``, and the document most of them come from as its ``doc_id`` and title."""
    chunks = index.chunks
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    if not rows.size:
        return text_item(index, key, "Summary", text, score)
    docs = [chunks.doc_ids[int(r)] for r in rows]
    doc = max(dict.fromkeys(docs), key=docs.count)  # the first of the most frequent
    title = chunks.titles[int(rows[docs.index(doc)])]
    n_docs = len(set(docs))
    label = f"Summary of {title}" if n_docs == 1 else f"Summary of {title} and {n_docs - 1} more"
    item = text_item(index, key, label, text, score)
    return replace(item, doc_id=doc, sources=tuple(chunks.ids[int(r)] for r in rows))


@register_operator
class ChunkFromNode(GraphOperator):
    """The chunks the given nodes cover, in the nodes' order (RAPTOR collapsed tree; KGP).

    Node -> chunk incidence (``node_chunks``): a passage-graph or tree leaf node is its
    own chunk, a RAPTOR summary covers the chunks below it. A chunk is ranked by the
    best node that covers it; chunks under the same node by their similarity to the
    question. With ``summaries`` (RAPTOR: the collapsed tree retrieves summaries and
    leaves alike, RAPTOR §3 "collapsed tree"), the texts of the nodes that are not
    chunks (kind ``"summary"``) go to ``state.items`` in the nodes' order, mixed with the
    kept chunks as chunk items, within the token budget.

    Parameters
    ----------
    graph : str
        Structure whose nodes are read ("raptor_tree"; "passage_graph" for KGP).
    k : int
        Chunks kept (4).
    summaries : bool
        Add the summary nodes' texts to the context (True).
    source : str
        Result holding the nodes ("entity").
    """

    name = "chunk.fromnode"
    kind = "chunk"
    produces = "chunk"
    consumes = ("entity",)
    structures = ("vectors",)  # chunks under one node are ordered by similarity
    paper = "unified-framework §4-5 (Tree, Passage Graph: nodes are chunks or cover chunks), Table 3 (RAPTOR, KGP)"

    def __init__(
        self, *, graph: str = "raptor_tree", k: int = 4, summaries: bool = True, source: str = "entity"
    ) -> None:
        self.graph = graph
        self.k = k
        self.summaries = summaries
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        nodes = seeds(state, self.source, graph.n_nodes, "entity").sorted()
        if not len(nodes):
            return Scored.empty(KIND)
        sub = graph.node_chunks[nodes.ids]
        rank = np.full(graph.n_chunks, np.inf)
        for i in range(len(nodes)):  # a chunk takes the rank of the first node covering it
            cols = sub.indices[sub.indptr[i] : sub.indptr[i + 1]]
            rank[cols] = np.minimum(rank[cols], i)
        rows = np.flatnonzero(np.isfinite(rank))
        sims = np.zeros(graph.n_chunks)
        dense = index.dense_search(state.vector(index), graph.n_chunks)
        sims[dense.ids] = dense.scores
        order = rows[np.lexsort((rows, -sims[rows], rank[rows]))][:k]
        out = Scored(order, (1.0 / (1.0 + np.arange(order.size))).astype(np.float32), KIND)
        if self.summaries:
            self._items(index, state, graph, nodes, set(order.tolist()))
        return out

    def _items(self, index: IndexView, state: State, graph: Graph, nodes: Scored, kept: set[int]) -> None:
        items: list[ContextItem] = []
        seen: set[int] = set()
        for row, score in zip(nodes.ids.tolist(), nodes.scores.tolist(), strict=True):
            if graph.kinds[row] == "summary":
                text = graph.descriptions[row] if graph.descriptions else graph.names[row]
                key = f"node:{graph.names[row]}"
                items.append(summary_item(index, key, text, score, graph.node_chunks[row].indices))
                continue
            for c in graph.node_chunks[row].indices.tolist():
                if c in kept and c not in seen:
                    seen.add(c)
                    items.append(index.chunk_item(int(c), score))
        add_items(state, items)
