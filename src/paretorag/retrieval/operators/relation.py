"""Relationship operators of the unified framework (§6.1, Table 3 "Relationship" column).

Each returns :class:`~paretorag.types.Scored` rows of the ``graph`` setting's edge
records (``Graph.edges``), kind ``"relation"``, stored under ``"relation"``.

- ``relation.vdb``: top-k relations by vector similarity (G-retriever, GLightRAG,
  HLightRAG);
- ``relation.onehop``: relations incident to the seed entities (ToG, LGraphRAG,
  LLightRAG, HLightRAG);
- ``relation.aggregator``: relation score = sum of its two entities' scores
  (HippoRAG, FastGraphRAG);
- ``relation.agent``: the relations an LLM chooses among the seeds (ToG).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError
from ...graphs.graph import Graph
from ...kernels.rank import vector_top_k
from ...types import Scored
from .agent import Agent
from .base import GraphOperator, register_operator
from .common import best, edges_of, query_vector, seed_vector, seeds

if TYPE_CHECKING:
    from ..query import IndexView, State

KIND = "relation"


@register_operator
class RelationVDB(GraphOperator):
    """Top-k relations by inner product with the query vector (§5 relationship index; §6.1).

    Searches ``edge_vectors`` (each relation's description with its entities' names).

    Parameters
    ----------
    graph : str
        Structure with edge vectors ("rkg").
    k : int
        Relations kept (4).
    query : {"question", "terms", "keywords"}
        What is embedded (GLightRAG embeds its high-level ``keywords``).
    """

    name = "relation.vdb"
    kind = "relationship"
    produces = "relation"
    paper = "unified-framework §5 (relationship index), §6.1 relationship VDB, Table 3"

    def __init__(self, *, graph: str = "rkg", k: int = 4, query: str = "question") -> None:
        self.graph = graph
        self.k = k
        self.query = query

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        edges_of(graph, self, self.graph)
        if graph.edge_vectors is None:
            raise ConfigError(f"{self.name}: structure {self.graph!r} has no relation vectors; rebuild it")
        q = query_vector(index, state, self.query, self)
        return Scored.empty(KIND) if q is None else vector_top_k(graph.edge_vectors, q, k, KIND)


@register_operator
class RelationOneHop(GraphOperator):
    """Relations incident to the seed entities (§6.1 relationship Onehop).

    Ranked as LightRAG's local search ranks them: by the edge's degree (the sum of
    its two endpoints' degrees), ties by row. All are kept unless ``k`` is set.
    """

    name = "relation.onehop"
    kind = "relationship"
    produces = "relation"
    consumes = ("entity",)
    paper = "unified-framework §6.1 relationship Onehop, Table 3 (ToG, LGraphRAG, LLightRAG, HLightRAG)"

    all_k = True

    def __init__(self, *, graph: str = "rkg", k: int | None = None, source: str = "entity") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int | None) -> Scored:
        e = edges_of(graph, self, self.graph)
        s = seeds(state, self.source, graph.n_nodes, "entity")
        if not len(s):
            return Scored.empty(KIND)
        is_seed = np.zeros(graph.n_nodes, dtype=bool)
        is_seed[s.ids] = True
        rows = np.flatnonzero(is_seed[e.src] | is_seed[e.dst])
        degree = np.diff(graph.adjacency.indptr).astype(np.float64)
        return best(degree[e.src[rows]] + degree[e.dst[rows]], rows, k, KIND)


@register_operator
class RelationAggregator(GraphOperator):
    """Relation score = sum of its two entities' scores (§6.1 relationship Aggregator).

    Given entity scores (HippoRAG's PPR), every relation with a scored endpoint gets
    the sum of its endpoints' scores; the top ``k`` are kept (all by default, so that
    the chunk Aggregator sums over every one).
    """

    name = "relation.aggregator"
    kind = "relationship"
    produces = "relation"
    consumes = ("entity",)
    paper = "unified-framework §6.1 relationship Aggregator, Table 3 (HippoRAG, FastGraphRAG)"

    all_k = True

    def __init__(self, *, graph: str = "kg", k: int | None = None, source: str = "entity") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int | None) -> Scored:
        e = edges_of(graph, self, self.graph)
        s = seeds(state, self.source, graph.n_nodes, "entity")
        if not len(s):
            return Scored.empty(KIND)
        score = seed_vector(state, self.source, graph.n_nodes, "entity")
        named = np.zeros(graph.n_nodes, dtype=bool)
        named[s.ids] = True
        rows = np.flatnonzero(named[e.src] | named[e.dst])
        return best(score[e.src[rows]] + score[e.dst[rows]], rows, k, KIND)


@register_operator
class RelationAgent(Agent):
    """The seed relations an LLM chooses as useful (§6.1 relationship Agent; ToG relation pruning).

    The best ``max_candidates`` seed relations are listed as "source relation target:
    description" and the LLM names up to ``k`` (ToG's width, 3); scores follow its order.
    """

    name = "relation.agent"
    kind = "relationship"
    produces = "relation"
    consumes = ("relation",)
    paper = "unified-framework §6.1 relationship Agent, Table 3 (ToG); ToG §2.2 (relation pruning)"

    def __init__(
        self, *, graph: str = "kg", k: int = 3, max_candidates: int = 30, source: str = "relation"
    ) -> None:
        self.graph = graph
        self.k = k
        self.max_candidates = max_candidates
        self.source = source

    def count(self, graph: Graph) -> int:
        return len(edges_of(graph, self, self.graph))

    def listing(self, index: IndexView, graph: Graph, rows: np.ndarray) -> tuple[list[str], str]:
        e = edges_of(graph, self, self.graph)
        return [e.text(int(j), graph.names)[:300] for j in rows], "relations"
