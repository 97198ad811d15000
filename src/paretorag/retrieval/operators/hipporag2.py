"""The graph path of EA-GraphRAG as HippoRAG 2 runs it (EA-GraphRAG §3.4.2, Algorithm 1 lines 4-9).

Four operators over the ``fact_graph`` structure (:mod:`paretorag.graphs.fact_graph`):

================  ===========================================================  ==========
operator          what it does                                                 Alg. 1
================  ===========================================================  ==========
relation.facts    fact scores ``<M(q), M(f)>``, min-max normalized; top-k      4, 5
relation.recognition  the facts an LLM keeps as relevant (HippoRAG 2's         5
                  recognition memory; passes the facts through without a
                  generative LLM)
node.facts        entity weight = fact score / the entity's passage count;     6, 7
                  top-k' seed entities
chunk.ppr         PPR over phrase + passage nodes from the seeds and the       8, 9
                  dense passage prior; passages ranked by their PPR score
================  ===========================================================  ==========

Defaults are HippoRAG 2's (its ``BaseConfig``): 5 candidate facts and 5 seed phrases
(``linking_top_k``), damping 0.5, passage prior weight 0.05 (``passage_node_weight``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError
from ...kernels.pagerank import pagerank, transition
from ...kernels.rank import top_k
from ...params import check_nonneg_number
from ...providers.base import is_generative
from ...types import Scored
from .base import (
    GraphOperator,
    Operator,
    check_fraction,
    check_k,
    check_nonneg_int,
    check_positive_int,
    load_graph,
    register_operator,
)
from .common import choose, edges_of, seed_vector, seeds

if TYPE_CHECKING:
    from ...graphs.graph import Graph
    from ..query import IndexView, State

FALLBACKS = ("dense", "none")


def min_max(x: np.ndarray) -> np.ndarray:
    """Scores scaled to [0, 1] (HippoRAG 2's ``min_max_normalize``); all ones when constant."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    return np.ones_like(x) if hi - lo <= 0 else (x - lo) / (hi - lo)


@register_operator
class RelationFacts(GraphOperator):
    """Top-k facts by similarity to the question (EA-GraphRAG Eq. 4-5; HippoRAG 2 ``get_fact_scores``).

    Every fact's score is the inner product of its vector with the question's,
    min-max normalized over all facts (the normalized ``s~`` of Eq. 4); the ``k``
    best are kept (HippoRAG 2's ``linking_top_k``, 5).
    """

    name = "relation.facts"
    kind = "relationship"
    produces = "relation"
    paper = "ea-graphrag §3.4.2 Eq. 4-5, Algorithm 1 lines 4-5; HippoRAG 2 (fact retrieval)"

    def __init__(self, *, graph: str = "fact_graph", k: int = 5) -> None:
        self.graph = graph
        self.k = k

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        edges_of(graph, self, self.graph)
        vectors = graph.edge_vectors
        if vectors is None:
            raise ConfigError(f"{self.name}: structure {self.graph!r} has no fact vectors; rebuild it")
        if vectors.shape[0] == 0:
            return Scored.empty("relation")
        scores = min_max(vectors @ np.asarray(state.vector(index), dtype=np.float32))
        return top_k(scores, k, "relation")


@register_operator
class RelationRecognition(GraphOperator):
    """The candidate facts an LLM keeps as relevant (EA-GraphRAG Eq. 5 "Rerank"; HippoRAG 2 §3).

    HippoRAG 2's recognition memory filters the top facts with an LLM; the facts
    kept keep their similarity scores (best first), and an empty answer leaves no
    fact, so the passage ranking falls back to dense retrieval. Needs a generative
    LLM; the LLM's reply is read for fact numbers only.
    """

    name = "relation.recognition"
    kind = "relationship"
    produces = "relation"
    consumes = ("relation",)
    uses_llm = True
    paper = "ea-graphrag §3.4.2 Eq. 5, Algorithm 1 line 5; HippoRAG 2 §3 (recognition memory)"

    def __init__(self, *, graph: str = "fact_graph", k: int = 5, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        e = edges_of(graph, self, self.graph)
        cand = seeds(state, self.source, len(e), "relation").sorted()
        if not len(cand):
            return Scored.empty("relation")
        llm = index.llm(f"query.{self.name}")
        if not is_generative(llm):
            state.info["fact_filter"] = "skipped: the LLM is not generative"
            return cand.top(k)
        texts = [e.text(int(j), graph.names) for j in cand.ids]
        kept = choose(llm, state.question, "facts", texts, k)
        return Scored(cand.ids[kept], cand.scores[kept], "relation").sorted()


def passage_counts(graph: Graph) -> np.ndarray:
    """Number of passages each node occurs in (its occurrence edges)."""
    out: np.ndarray = np.diff(sp.csr_matrix(graph.node_chunks).indptr).astype(np.float64)
    return out


@register_operator
class NodeFacts(GraphOperator):
    """Seed entities from the selected facts (EA-GraphRAG Algorithm 1 lines 6-7; HippoRAG 2).

    Each fact's subject and object get the fact's score divided by the number of
    passages the entity occurs in, so that hub entities do not dominate; an entity
    in several facts gets the mean of those weights (HippoRAG 2's released code; the
    EA-GraphRAG text keeps the last one). The ``k`` best entities are the seeds
    (``k'``; HippoRAG 2's ``linking_top_k``, 5).
    """

    name = "node.facts"
    kind = "node"
    produces = "entity"
    consumes = ("relation",)
    paper = "ea-graphrag §3.4.2, Algorithm 1 lines 6-7; HippoRAG 2 (graph_search_with_fact_entities)"

    def __init__(self, *, graph: str = "fact_graph", k: int = 5, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        e = edges_of(graph, self, self.graph)
        facts = seeds(state, self.source, len(e), "relation")
        if not len(facts):
            return Scored.empty("entity")
        count = index.cached(f"passage_counts:{self.graph}", lambda: passage_counts(graph))
        ends = np.concatenate([e.src[facts.ids], e.dst[facts.ids]])
        score = np.tile(facts.scores.astype(np.float64), 2) / np.maximum(count[ends], 1.0)
        total = np.zeros(graph.n_nodes)
        times = np.zeros(graph.n_nodes)
        np.add.at(total, ends, score)
        np.add.at(times, ends, 1.0)
        rows = np.flatnonzero(times)
        return top_k(total[rows] / times[rows], k, "entity", rows=rows)


def passage_transition(graph: Graph) -> tuple[sp.csr_matrix, np.ndarray]:
    """The PPR transition of the phrase + passage graph ``[[A, O], [O^T, 0]]`` (nodes first)."""
    a = sp.csr_matrix(graph.adjacency, dtype=np.float64)
    o = sp.csr_matrix(graph.node_chunks, dtype=np.float64)
    full = sp.bmat([[a, o], [o.T, None]], format="csr")
    return transition(full)


@register_operator
class ChunkPPR(Operator):
    """Passages ranked by personalized PageRank over phrase and passage nodes (EA-GraphRAG Eq. 6-7).

    The restart vector holds the seed entities' weights (Algorithm 1 line 8) and, as
    HippoRAG 2 does, every passage's min-max normalized dense score times
    ``passage_node_weight`` (0.05; 0 gives EA-GraphRAG's text, seeds only). PPR with
    damping 0.5 runs on ``[[A, O], [O^T, 0]]`` (relation and synonymy edges between
    phrases, occurrence edges to passages); passages are ranked by their PPR score
    (line 9). With no seed entity, the ranking is dense retrieval's (HippoRAG 2's
    fallback; ``fallback="none"`` returns nothing instead).

    Parameters
    ----------
    graph : str
        The phrase graph (``fact_graph``).
    k : int
        Passages returned (5).
    damping : float
        Probability of following an edge (HippoRAG 2: 0.5).
    passage_node_weight : float
        Weight of the dense passage prior in the restart vector (HippoRAG 2: 0.05).
    prior_top : int, optional
        Only the ``prior_top`` best dense passages get a prior (HippoRAG 2: all, ``None``).
    keep_dense : int
        The ``keep_dense`` best dense passages come first, in dense order, and PPR ranks
        the rest (HippoRAG 2: 0).
    fallback : {"dense", "none"}
        What to return when there is no seed entity.
    source : str
        The result holding the seed entities.
    """

    name = "chunk.ppr"
    kind = "chunk"
    produces = "chunk"
    consumes = ("entity",)
    structures = ("vectors",)
    paper = "ea-graphrag §3.4.2 Eq. 6-7, Algorithm 1 lines 8-9; HippoRAG 2 (passage node weights, PPR)"

    def __init__(
        self,
        *,
        graph: str = "fact_graph",
        k: int = 5,
        damping: float = 0.5,
        passage_node_weight: float = 0.05,
        prior_top: int | None = None,
        keep_dense: int = 0,
        fallback: str = "dense",
        source: str = "entity",
    ) -> None:
        self.graph = graph
        self.k = k
        self.damping = damping
        self.passage_node_weight = passage_node_weight
        self.prior_top = prior_top
        self.keep_dense = keep_dense
        self.fallback = fallback
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        damping = check_fraction(self, "damping", self.damping, closed=False)
        w = check_nonneg_number(self, "passage_node_weight", self.passage_node_weight, "HippoRAG 2: 0.05")
        top = check_k(self, "prior_top", self.prior_top)
        keep = check_nonneg_int(self, "keep_dense", self.keep_dense)
        if self.fallback not in FALLBACKS:
            raise ConfigError(f"ChunkPPR.fallback must be one of {FALLBACKS}, got {self.fallback!r}")
        graph = load_graph(index, self.graph)
        n, n_chunks = graph.n_nodes, graph.n_chunks
        entity = np.clip(seed_vector(state, self.source, n, "entity"), 0.0, None)
        if not entity.sum() > 0:
            if self.fallback == "none":
                return Scored.empty("chunk")
            return index.dense_search(state.vector(index), k)
        passage = np.zeros(n_chunks)
        dense = index.dense_search(state.vector(index), n_chunks) if w > 0 or keep else Scored.empty()
        if w > 0:
            prior = min_max(dense.scores) * float(w)
            if top is not None:
                prior[top:] = 0.0  # ids are best first
            passage[dense.ids] = prior
        t = index.cached(f"transition:passages:{self.graph}", lambda: passage_transition(graph))
        r = pagerank(None, damping=damping, personalization=np.r_[entity, passage], transition_t=t)
        scores = r[n:]
        if keep:
            # the best dense passages first, above every PPR score, in dense order
            kept = dense.ids[: min(keep, k)]
            scores[kept] = float(scores.max()) + np.arange(kept.size, 0, -1, dtype=np.float64)
        rows = np.flatnonzero(scores > 0)
        return top_k(scores[rows], k, "chunk", rows=rows)


__all__ = ["ChunkPPR", "NodeFacts", "RelationFacts", "RelationRecognition", "min_max", "passage_transition"]


@register_operator
class NodeMentions(Operator):
    """Seed entities named in the question itself, added to the fact seeds (offline variant).

    The question's named entities and noun phrases (spaCy, as the offline facts) that are
    phrase nodes of the graph by exact normalized name get weight ``weight`` / their
    passage count; seeds already in the ``source`` result keep the larger weight. Not in
    HippoRAG 2: an LLM-free way to seed the walk where spaCy facts match poorly.
    """

    name = "node.mentions"
    kind = "node"
    produces = "entity"
    consumes = ("entity",)
    paper = "ea-graphrag §3.4.2 (seed entities); offline variant, not in HippoRAG 2"

    def __init__(self, *, graph: str = "fact_graph", weight: float = 1.0, source: str = "entity") -> None:
        self.graph = graph
        self.weight = weight
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        w = check_nonneg_number(self, "weight", self.weight)
        graph = load_graph(index, self.graph)
        score = np.clip(seed_vector(state, self.source, graph.n_nodes, "entity"), 0.0, None)
        names = index.nlp.kg_names(state.question)
        rows = [graph.ids[n] for n in sorted(names) if n in graph.ids]
        if rows:
            count = index.cached(f"passage_counts:{self.graph}", lambda: passage_counts(graph))
            r = np.asarray(rows, dtype=np.int64)
            score[r] = np.maximum(score[r], float(w) / np.maximum(count[r], 1.0))
        keep = np.flatnonzero(score > 0)
        return top_k(score[keep], keep.size, "entity", rows=keep)
