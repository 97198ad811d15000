"""E2GraphRAG retrieval operators (E2GraphRAG §3.2; Algorithm 1, App. A).

The paper's steps as pure functions over the entity graph (a :class:`~paretorag.graphs.graph.Graph`
built by :mod:`paretorag.graphs.entities`) and the summary tree
(:mod:`paretorag.graphs.tree`):

- :func:`map_entities`: query entities -> graph vertices; unknown ones are ignored.
- :func:`graph_filter`: query-entity pairs within ``h`` hops (Equation 1), over exact
  hop counts from :func:`paretorag.kernels.hop_distances`.
- :func:`index_mapping`: union over the pairs of the intersection of the two
  entities' chunk sets (Equation 2).
- :func:`collapsed_tree_search`: dense top-k over every tree node (RAPTOR's collapsed tree).
- :func:`occurrence_ranking`: a chunk's weight is its number of query-entity
  occurrences, a summary's the sum of its children's, recursively.
- :func:`entity_aware_ranking`: distinct query entities covered, then occurrences.

and the registered operators that the ``e2graphrag`` method composes:
``e2graphrag.entities`` (question conversion), ``e2graphrag.collapsed_tree``,
``e2graphrag.local`` (Graph Filter + Index Mapping + the shrinking loop + Entity-Aware
Ranking), ``e2graphrag.global`` (dense top-2k + Occurrence Ranking) and
``e2graphrag.evidence`` (:mod:`paretorag.retrieval.operators.e2graphrag_evidence`). Tree nodes
are numbered as in the tree: chunk rows first, then summaries (``Scored.kind == "node"``).

One module (over 400 lines) because Algorithm 1 is one unit: its pure steps and the operators
that run them share the per-index state (:class:`E2State`) and read best side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError
from ...graphs.graph import Graph, graph_from_structure
from ...graphs.tree import TreeArrays
from ...kernels import hop_distances
from ...params import check_nonneg_int
from ...types import FloatArray, IntArray, Scored
from .base import Operator, check_positive_int, register_operator

if TYPE_CHECKING:
    from ...providers.nlp import EntityExtractor
    from ..query import IndexView, State

PAPER = "E2GraphRAG §3.2, Algorithm 1 (App. A)"
_QUERY_CACHE = 4096


# -- the paper's steps -----------------------------------------------------------------
def map_entities(terms: Sequence[str], ids: Mapping[str, int]) -> IntArray:
    """Vertex ids of the query's entity terms, first mention first (§3.2).

    Terms that are not graph vertices are ignored ("likely noise introduced by the
    entity extractor"); repeated vertices are kept once.
    """
    out: dict[int, None] = {}
    for t in terms:
        v = ids.get(t)
        if v is not None:
            out.setdefault(v, None)
    return np.fromiter(out, dtype=np.int64, count=len(out))


def graph_filter(distances: IntArray, h: int) -> IntArray:
    """Index pairs ``(i, j)``, ``i < j``, into the sources with ``Dist <= h`` (Equation 1)."""
    if isinstance(h, bool) or not isinstance(h, int) or h < 0:
        raise ConfigError(f"GraphFilter h must be a non-negative integer (hops), got {h!r}")
    i, j = np.nonzero(np.triu(distances <= h, 1))
    return np.stack([i, j], axis=1).astype(np.int64)


def index_mapping(entity_chunks: sp.csr_matrix, sources: IntArray, pairs: IntArray) -> IntArray:
    """Sorted chunk rows shared by both entities of any pair (Equation 2):
    ``C = U_{(a,b) in P} I_e->c(a) ∩ I_e->c(b)``."""
    if pairs.size == 0:
        return np.zeros(0, dtype=np.int64)
    ptr, idx = entity_chunks.indptr, entity_chunks.indices
    rows = [idx[ptr[v] : ptr[v + 1]] for v in sources]
    hits = [np.intersect1d(rows[a], rows[b], assume_unique=True) for a, b in pairs]
    return np.unique(np.concatenate(hits)).astype(np.int64)


def chunk_occurrences(entity_chunks: sp.csr_matrix, sources: IntArray) -> np.ndarray:
    """Occurrences of the query entities in every chunk: ``w(c) = Count(c, E_q)`` (§3.2)."""
    n_chunks = entity_chunks.shape[1]
    if sources.size == 0:
        return np.zeros(n_chunks, dtype=np.int64)
    return np.asarray(entity_chunks[sources].sum(axis=0), dtype=np.int64).reshape(n_chunks)


def node_weights(
    chunk_weights: np.ndarray, first_row: np.ndarray, last_row: np.ndarray, nodes: IntArray
) -> IntArray:
    """Occurrence weights of tree nodes: a summary's is the sum of its children's (§3.2).

    Applied recursively, that is the sum over the summary's leaves, which are the
    contiguous positions ``first_row .. last_row`` of ``chunk_weights`` (given in the
    tree's leaf order, :meth:`~paretorag.graphs.tree.TreeArrays.in_leaf_order`): a
    range sum over a prefix sum.
    """
    prefix = np.concatenate([[0], np.cumsum(chunk_weights, dtype=np.int64)])
    out: IntArray = (prefix[last_row[nodes] + 1] - prefix[first_row[nodes]]).astype(np.int64)
    return out


def collapsed_tree_search(
    chunk_hits: Scored, summary_vectors: FloatArray, n_chunks: int, query_vector: FloatArray, k: int
) -> Scored:
    """Dense top-k over all tree nodes, chunks and summaries alike (§3.2, as RAPTOR).

    ``chunk_hits`` must hold at least the ``k`` best chunks; the result's ids are tree
    nodes (chunk rows, then ``n_chunks + i`` for summary ``i``).
    """
    ids = [chunk_hits.ids]
    scores = [chunk_hits.scores]
    if summary_vectors.shape[0]:
        ids.append(n_chunks + np.arange(summary_vectors.shape[0], dtype=np.int64))
        scores.append((summary_vectors @ np.asarray(query_vector, dtype=np.float32)).astype(np.float32))
    allid, allsc = np.concatenate(ids), np.concatenate(scores)
    order = np.lexsort((allid, -allsc))[:k]
    return Scored(allid[order], allsc[order], kind="node")


def occurrence_ranking(candidates: Scored, weights: IntArray, k: int) -> Scored:
    """Re-rank candidate tree nodes by query-entity occurrences, keep ``k`` (§3.2).

    Ties (and zero weights) keep the candidates' incoming (dense) order.
    """
    order = np.argsort(-np.asarray(weights), kind="stable")[:k]
    return Scored(candidates.ids[order], np.asarray(weights, dtype=np.float32)[order], kind=candidates.kind)


def coverage_and_occurrence(
    chunk_entities: sp.csr_matrix, rows: IntArray, sources: IntArray
) -> tuple[IntArray, IntArray]:
    """Per chunk row: distinct query entities present, and their total occurrences (§3.2)."""
    if rows.size == 0 or sources.size == 0:
        z = np.zeros(rows.size, dtype=np.int64)
        return z, z.copy()
    sub = chunk_entities[rows][:, sources].toarray()
    return (sub > 0).sum(axis=1).astype(np.int64), sub.sum(axis=1).astype(np.int64)


def entity_aware_ranking(rows: IntArray, chunk_entities: sp.csr_matrix, sources: IntArray, k: int) -> Scored:
    """The ``k`` chunks covering the most query entities, then with most occurrences (§3.2).

    Ties keep document (row) order. Ids are chunk rows (= tree nodes).
    """
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    cov, occ = coverage_and_occurrence(chunk_entities, rows, sources)
    order = np.lexsort((rows, -occ, -cov))[:k]
    score = cov[order] + occ[order] / (1.0 + float(occ.max(initial=0)))
    return Scored(rows[order], score.astype(np.float32), kind="node")


def rank_scores(n: int) -> np.ndarray:
    """Scores of a list in its given order: ``1 / (1 + rank)``."""
    return (1.0 / (1.0 + np.arange(n))).astype(np.float32)


# -- the index's E2GraphRAG state ------------------------------------------------------
@dataclass
class E2State:
    """Per-index objects, built once (``IndexView.cached``): graph, tree, extractor."""

    graph: Graph
    tree: TreeArrays
    extractor: EntityExtractor
    tree_g: int
    summary_tokens: np.ndarray
    query_terms: dict[str, list[str]] = field(default_factory=dict)

    def entities(self, text: str) -> list[str]:
        terms = self.query_terms.get(text)
        if terms is None:
            if len(self.query_terms) >= _QUERY_CACHE:
                self.query_terms.clear()
            terms = self.query_terms[text] = self.extractor.entities(text)
        return terms


def load_state(index: IndexView) -> E2State:
    """The tree and entity graph of ``index`` and the extractor they were built with (memoized)."""

    def factory() -> E2State:
        gdata, tdata = index.structure("entity_graph"), index.structure("tree")
        n = len(index.chunks)
        for name, data in (("entity_graph", gdata), ("tree", tdata)):
            if int(data.meta.get("n_chunks", -1)) != n:
                raise ConfigError(
                    f"structure {name!r} covers {data.meta.get('n_chunks')} chunks but the index has {n}; "
                    "re-run `paretorag index` to rebuild it"
                )
        graph = graph_from_structure(gdata)
        tree = TreeArrays.from_structure(tdata)
        meta = gdata.meta
        extractor = index.nlp.extractor(
            labels=tuple(meta["labels"]),
            split_names=bool(meta["split_names"]),
            sentences=meta["sentences"],
            common_nouns=bool(meta.get("common_nouns", True)),
        )
        tokens = np.asarray([index.count_tokens(s) for s in tree.summaries], dtype=np.int64)
        g = int(tdata.meta.get("settings", {}).get("g", 0))
        return E2State(graph, tree, extractor, g, tokens)

    state: E2State = index.cached("e2graphrag.state", factory)
    return state


# -- registered operators ------------------------------------------------------------------
class _E2Operator(Operator):
    kind = "e2graphrag"
    structures = ("vectors", "tree", "entity_graph")
    paper = PAPER


@register_operator
class QuestionEntities(_E2Operator):
    """The question's entities, extracted as at indexing and mapped to graph vertices
    (§3.2, Algorithm 1 line 1). Sets ``state.terms``; vertices in first-mention order.

    Parameters
    ----------
    first_line : bool
        Read the question's first line only, so that the options of a multiple-choice
        question are not read as question entities (App. B; the authors' code does too).
    """

    name = "e2graphrag.entities"
    produces = "entity"

    def __init__(self, *, first_line: bool = True) -> None:
        self.first_line = first_line

    def run(self, index: IndexView, state: State) -> Scored:
        e2 = load_state(index)
        text = state.question.strip().split("\n", 1)[0] if self.first_line else state.question
        state.terms = e2.entities(text)
        sources = map_entities(state.terms, e2.graph.ids)
        state.info["entities"] = state.terms
        state.info["mapped"] = [e2.graph.names[v] for v in sources]
        return Scored(sources, rank_scores(sources.size), "entity")


@register_operator
class CollapsedTree(_E2Operator):
    """Dense top-k over the collapsed tree, chunks and summaries alike (§3.2, global mode).

    Parameters
    ----------
    k : int
        Tree nodes returned (paper: 25).
    """

    name = "e2graphrag.collapsed_tree"
    produces = "node"

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        tree = load_state(index).tree
        qv = state.vector(index)
        return collapsed_tree_search(index.dense_search(qv, k), tree.summary_vectors, tree.n_chunks, qv, k)


@register_operator
class LocalMapping(_E2Operator):
    """Local mode (§3.2; Algorithm 1 lines 5-14): Graph Filter, Index Mapping, and while
    more than ``k`` chunks map, a lower ``h``; an emptied set reverts to the last
    non-empty one, cut to ``k`` by Entity-Aware Ranking.

    Sets ``state.mode``/``branch``: ``local`` (``mapping``, ``shrink``, ``entity_aware``,
    ``revert_first_k``) or ``global`` with ``no_pair`` / ``no_shared_chunk`` and nothing
    retrieved (the method then runs the global operator). Algorithm 1 leaves the last
    case open; as the authors' code does, it is a global query.

    Parameters
    ----------
    k : int
        Chunks kept (25).
    h : int
        Initial hop threshold (4).
    graph_filter : bool
        False: Table 3 "w/o Graph Filter" (every pair kept; too many candidates go
        straight to Entity-Aware Ranking).
    entity_aware : bool
        False: Table 3 "w/o Entity-Aware Ranking" (the reverted set is cut to its first
        ``k`` chunks in document order).
    """

    name = "e2graphrag.local"
    produces = "node"
    consumes = ("entity",)

    def __init__(
        self, *, k: int = 25, h: int = 4, graph_filter: bool = True, entity_aware: bool = True
    ) -> None:
        self.k = k
        self.h = h
        self.graph_filter = graph_filter
        self.entity_aware = entity_aware

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        h = check_nonneg_int(self, "h", self.h)
        graph = load_state(index).graph
        sources = state.get("entity").ids
        occ, chunk_entities = graph.node_chunks, graph.chunk_nodes
        if self.graph_filter:
            dist = hop_distances(graph.adjacency, sources, h, graph.component)
            pairs = graph_filter(dist, h)
        else:
            dist = None
            pairs = np.stack(np.triu_indices(sources.size, 1), axis=1).astype(np.int64)
        state.info["pairs"] = [[graph.names[sources[a]], graph.names[sources[b]]] for a, b in pairs]
        cands = index_mapping(occ, sources, pairs)
        state.info["candidates"] = {str(h): int(cands.size)}
        if pairs.size == 0 or cands.size == 0:
            state.mode, state.branch = "global", "no_pair" if pairs.size == 0 else "no_shared_chunk"
            return Scored.empty("node")
        state.mode = "local"
        if cands.size <= k:
            state.branch = "mapping"
            return entity_aware_ranking(cands, chunk_entities, sources, int(cands.size))
        if dist is None:  # w/o Graph Filter: lowering h cannot shrink the set
            state.branch = "entity_aware"
            return entity_aware_ranking(cands, chunk_entities, sources, k)
        prev, hh = cands, h
        while cands.size > k:
            prev, hh = cands, hh - 1
            cands = index_mapping(occ, sources, graph_filter(dist, hh))
            state.info["candidates"][str(hh)] = int(cands.size)
        state.info["h"] = hh
        if cands.size:
            state.branch = "shrink"
            return entity_aware_ranking(cands, chunk_entities, sources, int(cands.size))
        state.info["h"] = hh + 1  # reverted to the last non-empty set
        if self.entity_aware:
            state.branch = "entity_aware"
            return entity_aware_ranking(prev, chunk_entities, sources, k)
        state.branch = "revert_first_k"
        first = np.sort(prev)[:k]
        return Scored(first, rank_scores(first.size), "node")


@register_operator
class GlobalOccurrence(_E2Operator):
    """Global mode with entities (§3.2): dense top-2k over the collapsed tree, then
    Occurrence Ranking keeps ``k``.

    Parameters
    ----------
    k : int
        Tree nodes kept (25).
    dense : bool
        False: Table 3 "w/o Dense Retrieval" (all tree nodes are candidates, ranked by
        occurrences; nodes without any occurrence are dropped).
    occurrence : bool
        False: Table 3 "w/o Occurrence Ranking" (the dense top-k is kept).
    """

    name = "e2graphrag.global"
    produces = "node"
    consumes = ("entity",)

    def __init__(self, *, k: int = 25, dense: bool = True, occurrence: bool = True) -> None:
        self.k = k
        self.dense = dense
        self.occurrence = occurrence

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        e2 = load_state(index)
        tree, sources = e2.tree, state.get("entity").ids
        if self.dense and not self.occurrence:
            return CollapsedTree(k=k).run(index, state)
        if not self.dense and not self.occurrence:
            return Scored.empty("node")
        weights_c = chunk_occurrences(e2.graph.node_chunks, sources)
        if self.dense:
            cands = CollapsedTree(k=2 * k).run(index, state)
            w = node_weights(tree.in_leaf_order(weights_c), tree.first_row, tree.last_row, cands.ids)
            return occurrence_ranking(cands, w, k)
        allnodes = np.arange(tree.n_nodes, dtype=np.int64)
        w = node_weights(tree.in_leaf_order(weights_c), tree.first_row, tree.last_row, allnodes)
        keep = np.flatnonzero(w > 0)  # without dense scores, a zero-weight node is arbitrary
        return occurrence_ranking(Scored(allnodes[keep], np.zeros(keep.size, np.float32), "node"), w[keep], k)


@register_operator
class FillFromRanking(_E2Operator):
    """Fill a short local result up to ``k`` from a fallback chunk ranking (not in the paper).

    Index Mapping keeps only chunks holding both entities of a pair, often fewer than
    ``k``; the remaining slots go to the best chunks of the ``"chunk"`` result (by
    default the dense ranking, ``chunk.vdb``; any registered chunk ranking can take
    its place) that are not already retrieved. The local chunks keep their order and
    come first. Scores are ``1 / (1 + rank)`` over the joined list.

    Parameters
    ----------
    k : int
        Chunks wanted (25).
    """

    name = "e2graphrag.fill"
    produces = "node"
    consumes = ("node", "chunk")

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        kept = state.get("node").ids[:k]
        ranking = state.get("chunk").ids
        extra = ranking[~np.isin(ranking, kept)][: k - kept.size]
        ids = np.concatenate([kept, extra]).astype(np.int64)
        state.info["filled"] = int(extra.size)
        return Scored(ids, rank_scores(ids.size), "node")


@register_operator
class AdaptiveSelect(_E2Operator):
    """Algorithm 1's choice between local and global retrieval (E2GraphRAG §3.2, App. A).

    No question entity (or ``dense_only``) -> **global**: ``e2graphrag.collapsed_tree``.
    Otherwise ``e2graphrag.local``; no pair or no shared chunk -> **global** with
    entities: ``e2graphrag.global``. A local result of fewer than ``k`` chunks is filled
    up to ``k`` from the ``fallback`` ranking (``e2graphrag.fill``; not in the paper).
    Sets ``state.mode`` / ``branch``; produces the tree nodes retrieved.

    Parameters
    ----------
    k : int
        Maximum chunks retrieved (paper: 25).
    h : int
        Initial hop threshold of the Graph Filter (paper: 4).
    g : int, optional
        Expected tree group size; checked against the built tree (``None``: as built).
    labels : sequence of str, optional
        Expected entity labels; checked against the built graph (``None``: as built).
    dense_only : bool
        Table 3 "Dense Retrieval Only": collapsed-tree dense top-k for every question.
    graph_filter, entity_aware : bool
        False: Table 3 "w/o Graph Filter" / "w/o Entity-Aware Ranking" (``e2graphrag.local``).
    dense, occurrence : bool
        False: Table 3 "w/o Dense Retrieval" / "w/o Occurrence Ranking" (``e2graphrag.global``;
        without dense retrieval a question without entities retrieves nothing).
    fallback : str, optional
        A registered operator producing a ``"chunk"`` ranking (with a ``k`` setting)
        that fills a short local result (``chunk.vdb`` by default); ``None``: the paper's
        Algorithm 1, left short.
    """

    name = "e2graphrag.select"
    produces = "node"
    consumes = ("entity",)

    def __init__(
        self,
        *,
        k: int = 25,
        h: int = 4,
        g: int | None = None,
        labels: Sequence[str] | None = None,
        dense_only: bool = False,
        graph_filter: bool = True,
        entity_aware: bool = True,
        dense: bool = True,
        occurrence: bool = True,
        fallback: str | None = "chunk.vdb",
    ) -> None:
        self.k = k
        self.h = h
        self.g = g
        self.labels = labels
        self.dense_only = dense_only
        self.graph_filter = graph_filter
        self.entity_aware = entity_aware
        self.dense = dense
        self.occurrence = occurrence
        self.fallback = fallback

    def _fallback(self, k: int) -> Operator | None:
        from .base import get_operator, operator_class

        if self.fallback is None:
            return None
        if not isinstance(self.fallback, str) or operator_class(self.fallback).produces != "chunk":
            raise ConfigError(
                f"e2graphrag fallback={self.fallback!r} must name a registered operator that produces "
                "a 'chunk' ranking, such as 'chunk.vdb'; `paretorag operators` lists them"
            )
        return get_operator(self.fallback, k=k)

    @property
    def requires(self) -> tuple[str, ...]:
        fill = self._fallback(1)
        return tuple(dict.fromkeys((*self.structures, *(fill.requires if fill is not None else ()))))

    def parts(self) -> list[Operator]:
        fill = self._fallback(self.k)
        return [
            CollapsedTree(),
            LocalMapping(),
            GlobalOccurrence(),
            *([fill, FillFromRanking()] if fill else []),
        ]

    def _check(self, index: IndexView) -> None:
        e2 = load_state(index)
        if self.g is not None and e2.tree_g and self.g != e2.tree_g:
            raise ConfigError(
                f"e2graphrag g={self.g} but this index's tree was built with g={e2.tree_g}; "
                "drop the g setting or rebuild the tree with that group size in a new index"
            )
        if self.labels is not None and tuple(self.labels) != e2.extractor.labels:
            raise ConfigError(
                f"e2graphrag labels={tuple(self.labels)} but the entity graph was built with "
                f"{e2.extractor.labels}; drop the labels setting or rebuild the graph in a new index"
            )

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        h = check_nonneg_int(self, "h", self.h)
        self._check(index)
        if self.dense_only:
            state.mode, state.branch = "global", "dense_only"
            return CollapsedTree(k=k).run(index, state)
        if len(state.get("entity")) == 0:
            state.mode, state.branch = "global", "no_entity"
            return CollapsedTree(k=k).run(index, state) if self.dense else Scored.empty("node")
        local = LocalMapping(k=k, h=h, graph_filter=self.graph_filter, entity_aware=self.entity_aware)
        nodes = local(index, state)
        if state.mode == "global":
            return GlobalOccurrence(k=k, dense=self.dense, occurrence=self.occurrence).run(index, state)
        fill = self._fallback(k)
        if fill is not None and len(nodes) < k:
            fill(index, state)
            nodes = FillFromRanking(k=k)(index, state)
            state.branch += f"+{self.fallback}"
        return nodes


__all__ = [
    "AdaptiveSelect",
    "CollapsedTree",
    "E2State",
    "FillFromRanking",
    "GlobalOccurrence",
    "LocalMapping",
    "QuestionEntities",
    "chunk_occurrences",
    "collapsed_tree_search",
    "coverage_and_occurrence",
    "entity_aware_ranking",
    "graph_filter",
    "index_mapping",
    "load_state",
    "map_entities",
    "node_weights",
    "occurrence_ranking",
    "rank_scores",
]
