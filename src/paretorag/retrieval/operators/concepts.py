"""G2ConS retrieval operators over the concept graph (papers/g2cons.txt).

The paper's steps as pure numpy/scipy functions:

- Core Chunk Selection (§3.2) ranks chunks when the graph is built
  (:func:`paretorag.graphs.concepts.chunk_scores`, :func:`~paretorag.graphs.concepts.select_core`);
- :func:`concept_search`, :func:`concept_expansion`, :func:`local_rerank`,
  :func:`global_rerank`, :func:`naive_rerank`, :func:`take_within_budget` and
  :func:`concept_local_search`: §3.2.1 "Local Search on Concept Graph" (top-k concepts by
  cosine to the query, BFS up to N hops, local then global reranking, stop at beta tokens;
  the naive rerank is Table 4's variant D);
- :func:`dual_path_ensemble`: §3.2.1 "Weighted Context Ensemble";

and the registered operators ``g2cons.concepts`` (the local search, on the stored
graph or a Table 4 variant rebuilt from its ingredients) and ``g2cons.core`` (the core
chunks). Concept rows index the concept graph's own row space (``Scored.kind == "concept"``).

One module (over 400 lines) because the concept path's pure functions, the graph variant
state and its operators are one §3.2.1 algorithm over one memoized state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ...errors import ConfigError
from ...graphs.concepts import chunk_scores, concept_edges, load_sentences, mean_vectors, select_core
from ...graphs.graph import Graph, csr, graph_from_structure
from ...kernels import bfs_levels, normalize_rows, pagerank
from ...params import check_nonneg_int
from ...storage.structures import StructureData
from ...types import FloatArray, IntArray, Scored
from .base import Operator, check_fraction, check_positive_int, register_operator
from .sparse import hybrid_chunk_scores

if TYPE_CHECKING:
    from ..query import IndexView, State

F64 = npt.NDArray[np.float64]
STRUCTURE = "concept_graph"
PAPER = "G2ConS (papers/g2cons.txt) §3.2.1"


def concept_search(query_vector: FloatArray, concept_vectors: FloatArray, k: int) -> Scored:
    """The top-k concepts by cosine to the query: "directly associated concepts" (§3.2.1).

    ``concept_vectors`` are L2-normalized rows; returns concepts best first.
    """
    n = int(concept_vectors.shape[0])
    if n == 0:
        return Scored.empty("concept")
    sims = np.asarray(concept_vectors @ np.asarray(query_vector, dtype=np.float32), dtype=np.float32)
    part = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
    return Scored(part, sims[part], "concept").sorted()


def concept_expansion(seeds: IntArray, adjacency: sp.csr_matrix, hops: int) -> Scored:
    """Breadth-first search from the seed concepts up to ``hops`` hops (§3.2.1).

    Returns the "expanded concepts" (reached in 1..N hops, seeds excluded) with score
    ``1 / hop``, nearest first.
    """
    nodes, level = bfs_levels(adjacency, seeds, hops)
    return Scored(nodes, (1.0 / np.maximum(level, 1)).astype(np.float32), "concept")


def _first_occurrences(rows: IntArray) -> IntArray:
    _, first = np.unique(rows, return_index=True)
    return rows[np.sort(first)]


def _gather(concepts: IntArray, concept_chunks: sp.csr_matrix) -> tuple[IntArray, IntArray]:
    """(position of the concept in ``concepts``, chunk row) for every concept->chunk edge."""
    concepts = np.asarray(concepts, dtype=np.int64)
    sub = concept_chunks[concepts]
    counts = np.diff(sub.indptr)
    return np.repeat(np.arange(concepts.size), counts), sub.indices.astype(np.int64)


def local_rerank(concepts: IntArray, concept_chunks: sp.csr_matrix, chunk_sims: FloatArray) -> IntArray:
    """Local reranking (§3.2.1): concepts in the given (similarity) order, each concept's
    chunks by similarity to the query, each chunk kept at its first appearance."""
    pos, rows = _gather(concepts, concept_chunks)
    order = np.lexsort((rows, -chunk_sims[rows], pos))
    return _first_occurrences(rows[order])


def global_rerank(
    concepts: IntArray, concept_chunks: sp.csr_matrix, chunk_sims: FloatArray, exclude: IntArray | None = None
) -> IntArray:
    """Global reranking (§3.2.1): all chunks of the given concepts ranked together by
    similarity to the query, minus ``exclude`` (the chunks already placed)."""
    _, rows = _gather(concepts, concept_chunks)
    rows = np.unique(rows)
    if exclude is not None and exclude.size:
        rows = rows[~np.isin(rows, exclude)]
    return rows[np.lexsort((rows, -chunk_sims[rows]))]


def naive_rerank(concepts: IntArray, concept_chunks: sp.csr_matrix, chunk_sims: FloatArray) -> IntArray:
    """Naive reranking (Table 4, variant D): every chunk pooled and sorted by similarity."""
    return global_rerank(concepts, concept_chunks, chunk_sims)


def take_within_budget(rows: IntArray, n_tokens: npt.NDArray[np.int64], budget: int | None) -> IntArray:
    """The longest prefix of ``rows`` whose tokens fit ``budget`` (§3.2.1: retrieval stops
    as soon as the next chunk would exceed beta). ``None`` keeps every row."""
    rows = np.asarray(rows, dtype=np.int64)
    if budget is None:
        return rows
    total = np.cumsum(n_tokens[rows])
    return rows[: int(np.searchsorted(total, budget, side="right"))]


Rerank = Literal["local_global", "naive"]
Ranking = Literal["dense", "hybrid"]


def concept_local_search(
    query_vector: FloatArray,
    graph: Graph,
    chunk_sims: FloatArray,
    n_tokens: npt.NDArray[np.int64],
    budget: int | None,
    *,
    k: int = 25,
    hops: int = 2,
    rerank: Rerank = "local_global",
) -> tuple[IntArray, Scored, Scored]:
    """Local search on the concept graph under a token budget (G2ConS §3.2.1).

    Top-k concepts by cosine to the query, BFS up to ``hops`` hops; local reranking of
    the direct concepts' chunks, then global reranking of the chunks of every concept
    found (direct and expanded); stop at the first chunk exceeding ``budget``.
    ``rerank="naive"`` pools all those chunks and sorts them by similarity (Table 4, D).

    Returns (chunk rows in context order, direct concepts, expanded concepts).
    """
    if rerank not in ("local_global", "naive"):
        raise ConfigError(f"concept search rerank must be 'local_global' or 'naive', got {rerank!r}")
    if graph.node_vectors is None:
        raise ConfigError("the concept graph has no concept vectors; rebuild it with `paretorag index`")
    direct = concept_search(query_vector, graph.node_vectors, k)
    expanded = concept_expansion(direct.ids, graph.adjacency, hops)
    found = np.concatenate([direct.ids, expanded.ids])
    chunks = graph.node_chunks
    if rerank == "naive":
        rows = naive_rerank(found, chunks, chunk_sims)
    else:
        local = local_rerank(direct.ids, chunks, chunk_sims)
        rows = np.concatenate([local, global_rerank(found, chunks, chunk_sims, exclude=local)])
    return take_within_budget(rows, n_tokens, budget), direct, expanded


@dataclass(frozen=True)
class Pick:
    """One ensemble entry: ``path`` is ``"both"``, ``"second"`` or ``"concept"`` and
    ``index`` its position in that path's list (the second path's for ``"both"``)."""

    path: str
    index: int


def dual_path_ensemble(
    concept_rows: Sequence[int],
    concept_tokens: Sequence[int],
    second_rows: Sequence[int],
    second_tokens: Sequence[int],
    budget: int,
    lam: float = 0.6,
) -> list[Pick]:
    """Weighted context ensemble of the concept path and a second path (§3.2.1).

    The paper's three principles: (1) the total stays within beta; (2) chunks found by
    both paths (a vote of two) come first; (3) the second path (core-KG in the paper)
    occupies at most ``lam * beta`` and the concept path at most ``(1 - lam) * beta``.
    Shared chunks belong to both paths, so principle 3 is applied to each path's own
    (exclusive) entries over the budget left after the shared ones, ``r = beta - shared``:
    the second path gets at most ``lam * r``, the concept path at most ``(1 - lam) * r``.
    Shared chunks are ordered by the sum of their ranks in the two paths (ties: the
    second path's rank); each list stops at its first entry that does not fit.

    Rows are chunk rows (``-1`` for second-path entries that are not chunks); ``lam``
    is the weight lambda of the second path, in [0, 1] (0.6 in §4.1).
    """
    lam = check_fraction(dual_path_ensemble, "lam", lam)
    if len(concept_rows) != len(concept_tokens) or len(second_rows) != len(second_tokens):
        raise ConfigError("dual_path_ensemble needs one token count per entry of each path")
    concept_rank: dict[int, int] = {}
    for i, r in enumerate(concept_rows):
        if r >= 0:
            concept_rank.setdefault(int(r), i)
    second_rank: dict[int, int] = {}
    for i, r in enumerate(second_rows):
        if r >= 0:
            second_rank.setdefault(int(r), i)
    shared = sorted(
        (r for r in second_rank if r in concept_rank),
        key=lambda r: (concept_rank[r] + second_rank[r], second_rank[r]),
    )
    picks: list[Pick] = []
    used = 0
    for r in shared:
        i = second_rank[r]
        if used + int(second_tokens[i]) > budget:
            break
        used += int(second_tokens[i])
        picks.append(Pick("both", i))
    rest = budget - used
    picks += _fill("second", second_rows, second_tokens, concept_rank, math.floor(lam * rest))
    picks += _fill("concept", concept_rows, concept_tokens, second_rank, math.floor((1 - lam) * rest))
    return picks


def _fill(
    path: str, rows: Sequence[int], tokens: Sequence[int], other: dict[int, int], quota: int
) -> list[Pick]:
    """This path's entries absent from the other path, in order, up to ``quota`` tokens."""
    out: list[Pick] = []
    used = 0
    seen: set[int] = set()
    for i, r in enumerate(rows):
        r = int(r)
        if r >= 0 and (r in other or r in seen):
            continue
        if used + int(tokens[i]) > quota:
            break
        used += int(tokens[i])
        if r >= 0:
            seen.add(r)
        out.append(Pick(path, i))
    return out


# -- the index's concept graph and its Table 4 variants -------------------------------------
@dataclass(frozen=True)
class ConceptState:
    """A concept graph ready for retrieval (one per index and variant), with its chunk
    ranking for Core Chunk Selection."""

    graph: Graph
    chunk_score: F64
    _cores: dict[float, IntArray] = field(default_factory=dict, repr=False, compare=False)

    def core(self, kappa: float) -> IntArray:
        """The core chunk rows for ``kappa``, best first (computed once per kappa)."""
        if kappa not in self._cores:
            self._cores[kappa] = select_core(self.chunk_score, kappa)
        return self._cores[kappa]


class ConceptVariant(Operator):
    """Settings that pick the concept graph variant (Table 4) from the stored ingredients."""

    kind = "g2cons"
    structures = ("vectors", STRUCTURE)
    paper = PAPER

    cooccurrence: str
    similarity_filter: bool
    concept_vectors: str
    theta_sem: float | None
    theta_co: int | None

    def concept_state(self, index: IndexView) -> ConceptState:
        """The stored graph, or the variant these settings describe (memoized per index)."""
        if self.cooccurrence not in ("chunk", "sentence"):
            raise ConfigError(
                f"{self.name}: cooccurrence must be 'chunk' or 'sentence', got {self.cooccurrence!r}"
            )
        if self.concept_vectors not in ("sentence", "chunk"):
            raise ConfigError(
                f"{self.name}: concept_vectors must be 'sentence' or 'chunk', got {self.concept_vectors!r}"
            )
        data = index.structure(STRUCTURE)
        built = data.meta["settings"]
        sem = float(built["theta_sem"] if self.theta_sem is None else self.theta_sem)
        co = int(built["theta_co"] if self.theta_co is None else self.theta_co)
        variant = (self.cooccurrence, bool(self.similarity_filter), self.concept_vectors, sem, co)
        stored = variant == ("chunk", True, "sentence", float(built["theta_sem"]), int(built["theta_co"]))
        key = f"g2cons:{data.meta['chunks_fingerprint']}:{variant}"

        def factory() -> ConceptState:
            graph = graph_from_structure(data)
            if stored:
                return ConceptState(graph, np.asarray(data.arrays["chunk_score"], dtype=np.float64))
            return _variant_state(index, data, graph, variant)

        state: ConceptState = index.cached(key, factory)
        return state


def _variant_state(
    index: IndexView, data: StructureData, graph: Graph, variant: tuple[str, bool, str, float, int]
) -> ConceptState:
    """Table 4's variants A (sentence co-occurrence), B (no similarity filter) and C (chunk
    vectors), rebuilt from the stored ingredients (no re-indexing)."""
    cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co = variant
    built = data.meta["settings"]
    vectors = graph.node_vectors
    chunk_concepts = csr(graph.node_chunks.T)
    if concept_vectors == "chunk":  # Table 4, C: mean of chunk embeddings
        chunk_vecs = index.embed(list(index.chunks.texts))
        vectors = normalize_rows(mean_vectors(chunk_concepts, chunk_vecs))
    units = chunk_concepts if cooccurrence == "chunk" else load_sentences(data)[0]
    adj = concept_edges(units, vectors if similarity_filter else None, theta_sem=theta_sem, theta_co=theta_co)
    pr = pagerank(adj, damping=float(built["damping"]))
    scores = chunk_scores(chunk_concepts, pr, str(built["aggregate"]))
    return ConceptState(Graph(graph.names, graph.kinds, adj, graph.node_chunks, node_vectors=vectors), scores)


def chunk_similarities(index: IndexView, query_vector: FloatArray) -> FloatArray:
    """Cosine of the query to every chunk, indexed by row (exact search over all rows)."""
    n = len(index.chunks)
    sims = np.full(n, -np.inf, dtype=np.float32)
    if n:
        hits = index.dense_search(query_vector, n)
        sims[hits.ids] = hits.scores
    return sims


@register_operator
class ConceptLocalSearch(ConceptVariant):
    """G2ConS-Concept's retrieval: local search on the concept graph under a token budget
    (§3.2.1; Table 4 variants as settings). Produces chunk rows in context order.

    Parameters
    ----------
    k : int
        Directly associated concepts (25, §4.1).
    hops : int
        BFS depth N (2).
    budget : int
        Token budget beta (12,000); a query's budget overrides it.
    rerank : {"local_global", "naive"}
        Local + global reranking, or the naive pooled sort (Table 4, D).
    cooccurrence : {"chunk", "sentence"}
        Unit of co-occurrence for edges (Table 4, A: ``"sentence"``).
    similarity_filter : bool
        Keep the theta_sem filter on edges (Table 4, B: ``False``).
    concept_vectors : {"sentence", "chunk"}
        Eq. 1 sentence-level vectors, or the mean of chunk embeddings (Table 4, C).
    theta_sem, theta_co : float or int, optional
        Edge thresholds; ``None`` uses the values the graph was built with.
    ranking : {"dense", "hybrid"}
        How the reranking orders chunks: cosine to the question (``"dense"``, the
        paper's), or reciprocal rank fusion of that order with BM25's (``"hybrid"``,
        :func:`~paretorag.retrieval.operators.sparse.hybrid_chunk_scores`; needs the ``bm25``
        structure).
    limit : int, optional
        Passages kept at most (``g2cons-concept``: a query's ``k``); ``None``: all that
        fit beta.
    """

    name = "g2cons.concepts"
    produces = "chunk"

    def __init__(
        self,
        *,
        k: int = 25,
        hops: int = 2,
        budget: int = 12000,
        rerank: Rerank = "local_global",
        cooccurrence: Literal["chunk", "sentence"] = "chunk",
        similarity_filter: bool = True,
        concept_vectors: Literal["sentence", "chunk"] = "sentence",
        theta_sem: float | None = None,
        theta_co: int | None = None,
        ranking: Ranking = "dense",
        limit: int | None = None,
    ) -> None:
        self.k = k
        self.hops = hops
        self.budget = budget
        self.rerank = rerank
        self.cooccurrence = cooccurrence
        self.similarity_filter = similarity_filter
        self.concept_vectors = concept_vectors
        self.theta_sem = theta_sem
        self.theta_co = theta_co
        self.ranking = ranking
        self.limit = limit

    @property
    def requires(self) -> tuple[str, ...]:
        return (*self.structures, "bm25") if self.ranking == "hybrid" else self.structures

    def chunk_ranking(self, index: IndexView, state: State) -> FloatArray:
        """The score that orders chunks in the reranking (see ``ranking``), by row."""
        q = state.vector(index)
        if self.ranking == "dense":
            return chunk_similarities(index, q)
        if self.ranking == "hybrid":
            return hybrid_chunk_scores(index, state.question, q)
        raise ConfigError(f"{self.name}: ranking must be 'dense' or 'hybrid', got {self.ranking!r}")

    def beta(self, state: State) -> int:
        """The token budget: the query's, else the setting."""
        if state.options.budget.max_tokens is not None:
            return state.options.budget.max_tokens
        return check_positive_int(self, "budget", self.budget)

    def run(self, index: IndexView, state: State) -> Scored:
        graph = self.concept_state(index).graph
        q = state.vector(index)
        rows, direct, expanded = concept_local_search(
            q,
            graph,
            self.chunk_ranking(index, state),
            index.chunks.n_tokens,
            self.beta(state),
            k=check_positive_int(self, "k", self.k),
            hops=check_nonneg_int(self, "hops", self.hops),
            rerank=self.rerank,
        )
        if self.limit is not None:
            rows = rows[: check_positive_int(self, "limit", self.limit)]
        state.put("concept", direct)
        state.info.update(
            {
                "concepts": [graph.names[i] for i in direct.ids[:10]],
                "n_direct": len(direct),
                "n_expanded": len(expanded),
                "tokens": int(index.chunks.n_tokens[rows].sum()),
            }
        )
        state.mode, state.branch = "concept", str(self.rerank)
        scores = (1.0 / (1.0 + np.arange(rows.size))).astype(np.float32)
        state.items = [index.chunk_item(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]
        return Scored(rows, scores)


@register_operator
class CoreChunks(ConceptVariant):
    """Core Chunk Selection (G2ConS §3.2; kappa default 0.8 from §4.6): the top ``kappa``
    fraction of chunks by their concepts' PageRank, best first.

    Parameters
    ----------
    kappa : float, optional
        Fraction of chunks kept, in [0, 1]; ``None`` uses the one the graph was built with.
    cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co
        The concept graph variant (as for ``g2cons.concepts``).
    """

    name = "g2cons.core"
    produces = "core"

    def __init__(
        self,
        *,
        kappa: float | None = None,
        cooccurrence: Literal["chunk", "sentence"] = "chunk",
        similarity_filter: bool = True,
        concept_vectors: Literal["sentence", "chunk"] = "sentence",
        theta_sem: float | None = None,
        theta_co: int | None = None,
    ) -> None:
        self.kappa = kappa
        self.cooccurrence = cooccurrence
        self.similarity_filter = similarity_filter
        self.concept_vectors = concept_vectors
        self.theta_sem = theta_sem
        self.theta_co = theta_co

    def run(self, index: IndexView, state: State) -> Scored:
        concepts = self.concept_state(index)
        kappa = self.kappa
        if kappa is None:
            kappa = float(index.structure(STRUCTURE).meta["core"]["kappa"])
        rows = concepts.core(check_fraction(self, "kappa", kappa))
        return Scored(rows, concepts.chunk_score[rows].astype(np.float32), "chunk")
