"""G2ConS retrieval operators over the concept graph (papers/g2cons.txt).

Pure numpy/scipy steps, each citing the paper:

- :func:`pagerank` and :class:`CoreChunkSelection`: §3.2 "Core Chunk Selection" (concepts
  ranked by PageRank, chunks ranked by their concepts, the top kappa fraction kept);
- :class:`ConceptSearch`, :class:`ConceptExpansion`, :func:`local_rerank`,
  :func:`global_rerank`, :func:`naive_rerank`, :func:`take_within_budget` and
  :class:`ConceptLocalSearch`: §3.2.1 "Local Search on Concept Graph" (top-k concepts by
  cosine to the query, BFS up to N hops, local then global reranking, stop at beta tokens;
  the naive rerank is Table 4's variant D);
- :class:`DualPathEnsemble`: §3.2.1 "Weighted Context Ensemble".

Concept rows index the concept graph's own row space (``Scored.kind == "concept"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError
from ..types import FloatArray, IntArray, Scored
from .base import Operator, check_fraction, check_positive_int

F64 = npt.NDArray[np.float64]


def pagerank(
    adjacency: sp.spmatrix | sp.sparray, *, damping: float = 0.85, tol: float = 1e-10, max_iter: int = 500
) -> F64:
    """PageRank of a weighted graph by power iteration (Page et al. 1999; G2ConS §3.2).

    Edge weights (the concept graph's Dice coefficients) weight the random walk;
    dangling nodes (no out-edges, e.g. concepts that no edge survived the thresholds)
    spread their mass uniformly, and teleportation is uniform, as in
    ``networkx.pagerank``.

    Parameters
    ----------
    adjacency : sparse matrix, shape (n, n)
        Non-negative weights; ``adjacency[i, j]`` is the weight of edge i -> j.
    damping : float
        Probability of following an edge (0.85 in the original paper).
    tol : float
        Stop when the L1 change of the scores falls below ``n * tol``.
    max_iter : int
        Iteration cap (the iteration converges geometrically with rate ``damping``).

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores summing to one.
    """
    if not 0.0 < damping < 1.0:
        raise ConfigError(f"pagerank damping must lie in (0, 1), got {damping!r}")
    d = float(damping)
    n = adjacency.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    w = sp.csr_matrix(adjacency, dtype=np.float64)
    out = np.asarray(w.sum(axis=1)).ravel()
    dangling = out <= 0
    inv = np.zeros(n)
    inv[~dangling] = 1.0 / out[~dangling]
    transition_t = sp.csr_matrix((sp.diags(inv) @ w).T)
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        nxt = d * (transition_t @ x) + (d * float(x[dangling].sum()) + 1.0 - d) / n
        done = float(np.abs(nxt - x).sum()) < n * tol
        x = nxt
        if done:
            break
    return np.asarray(x / x.sum(), dtype=np.float64)


def chunk_scores(chunk_concepts: sp.csr_matrix, concept_scores: F64, aggregate: str = "sum") -> F64:
    """Rank chunks "based on which concepts they are associated with" (§3.2).

    ``aggregate`` is ``"sum"`` (the PageRank mass of the chunk's concepts: the default),
    ``"max"`` or ``"mean"``. Chunks without concepts score 0.
    """
    m = sp.csr_matrix(chunk_concepts, dtype=np.float64)
    if aggregate == "sum":
        return np.asarray(m @ concept_scores, dtype=np.float64).ravel()
    if aggregate == "mean":
        counts = np.diff(m.indptr)
        total = np.asarray(m @ concept_scores, dtype=np.float64).ravel()
        return np.divide(total, counts, out=np.zeros_like(total), where=counts > 0)
    if aggregate == "max":
        weighted = sp.csr_matrix(m.multiply(concept_scores[np.newaxis, :]))
        return np.asarray(weighted.max(axis=1).toarray(), dtype=np.float64).ravel()
    raise ConfigError(f"aggregate must be 'sum', 'mean' or 'max', got {aggregate!r}")


def select_core(scores: F64, kappa: float) -> IntArray:
    """The top ``ceil(kappa * n)`` rows by score, best first (ties by row), §3.2."""
    if not 0.0 <= kappa <= 1.0:
        raise ConfigError(f"kappa (the core-chunk fraction) must lie in [0, 1], got {kappa!r}")
    k = float(kappa)
    n = int(scores.size)
    keep = min(n, math.ceil(k * n - 1e-9))
    order = np.lexsort((np.arange(n), -scores))
    return np.asarray(order[:keep], dtype=np.int64)


class CoreChunkSelection(Operator):
    """Core Chunk Selection (G2ConS §3.2; kappa default 0.8 from §4.1).

    Reads the ``concept_graph`` structure's ``chunk_score`` array (the chunk ranking by
    concept PageRank computed when the graph is built) and keeps the top ``kappa``
    fraction of chunks. Other builders use it to build an expensive structure (an LLM
    knowledge graph) on the core chunks only::

        core = CoreChunkSelection(kappa=0.8)(ctx.structure("concept_graph")).ids

    Parameters
    ----------
    kappa : float
        Fraction of chunks kept, in [0, 1].
    """

    requires = ("concept_graph",)

    def __init__(self, *, kappa: float = 0.8) -> None:
        self.kappa = kappa

    def __call__(self, structure: object) -> Scored:
        arrays = getattr(structure, "arrays", None)
        if not isinstance(arrays, dict) or "chunk_score" not in arrays:
            raise ConfigError(
                "CoreChunkSelection needs the 'concept_graph' structure (index with g2cons-concept)"
            )
        scores = np.asarray(arrays["chunk_score"], dtype=np.float64)
        rows = select_core(scores, check_fraction(self, "kappa", self.kappa))
        return Scored(rows, scores[rows].astype(np.float32), "chunk")


class ConceptSearch(Operator):
    """The top-k concepts by cosine to the query: "directly associated concepts" (§3.2.1).

    Parameters
    ----------
    k : int
        Number of concepts (25 in §4.1).
    """

    def __init__(self, *, k: int = 25) -> None:
        self.k = k

    def __call__(self, query_vector: FloatArray, concept_vectors: FloatArray) -> Scored:
        """``concept_vectors`` are L2-normalized rows; returns concepts best first."""
        k = check_positive_int(self, "k", self.k)
        n = int(concept_vectors.shape[0])
        if n == 0:
            return Scored.empty("concept")
        sims = np.asarray(concept_vectors @ np.asarray(query_vector, dtype=np.float32), dtype=np.float32)
        if k < n:
            part = np.argpartition(-sims, k - 1)[:k]
        else:
            part = np.arange(n)
        return Scored(part, sims[part], "concept").sorted()


class ConceptExpansion(Operator):
    """Breadth-first search from the seed concepts up to ``hops`` hops (§3.2.1).

    Returns the "expanded concepts" (those reached in 1..N hops, seeds excluded) with
    score ``1 / hop``, nearest first.

    Parameters
    ----------
    hops : int
        BFS depth N (2 in §4.1); 0 returns nothing.
    """

    def __init__(self, *, hops: int = 2) -> None:
        self.hops = hops

    def __call__(self, seeds: IntArray, adjacency: sp.csr_matrix) -> Scored:
        hops = self.hops
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise ConfigError(f"ConceptExpansion.hops must be a non-negative integer, got {hops!r}")
        n = adjacency.shape[0]
        visited = np.zeros(n, dtype=bool)
        frontier = np.unique(np.asarray(seeds, dtype=np.int64))
        visited[frontier] = True
        ids: list[IntArray] = []
        scores: list[FloatArray] = []
        for hop in range(1, hops + 1):
            if frontier.size == 0:
                break
            reached = np.unique(adjacency[frontier].indices).astype(np.int64)
            frontier = reached[~visited[reached]]
            visited[frontier] = True
            ids.append(frontier)
            scores.append(np.full(frontier.size, 1.0 / hop, dtype=np.float32))
        if not ids:
            return Scored.empty("concept")
        return Scored(np.concatenate(ids), np.concatenate(scores), "concept")


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


@dataclass(frozen=True)
class ConceptGraphArrays:
    """What concept-graph retrieval reads: normalized concept vectors (W x d), the concept
    adjacency (W x W CSR) and the concept->chunk incidence (W x C CSR)."""

    vectors: FloatArray
    adjacency: sp.csr_matrix
    concept_chunks: sp.csr_matrix


Rerank = Literal["local_global", "naive"]


class ConceptLocalSearch(Operator):
    """Local search on the concept graph under a token budget (G2ConS §3.2.1).

    Top-k concepts by cosine to the query, BFS up to ``hops`` hops; local reranking of
    the direct concepts' chunks, then global reranking of the chunks of every concept
    found (direct and expanded); stop at the first chunk exceeding ``budget``.
    ``rerank="naive"`` pools all those chunks and sorts them by similarity (Table 4, D).

    Parameters
    ----------
    k : int
        Directly associated concepts (25).
    hops : int
        BFS depth N (2).
    rerank : {"local_global", "naive"}
        Reranking scheme.
    """

    def __init__(self, *, k: int = 25, hops: int = 2, rerank: Rerank = "local_global") -> None:
        self.k = k
        self.hops = hops
        self.rerank = rerank

    def __call__(
        self,
        query_vector: FloatArray,
        graph: ConceptGraphArrays,
        chunk_sims: FloatArray,
        n_tokens: npt.NDArray[np.int64],
        budget: int | None,
    ) -> tuple[IntArray, Scored, Scored]:
        """Returns (chunk rows in context order, direct concepts, expanded concepts)."""
        if self.rerank not in ("local_global", "naive"):
            raise ConfigError(
                f"ConceptLocalSearch.rerank must be 'local_global' or 'naive', got {self.rerank!r}"
            )
        direct = ConceptSearch(k=self.k)(query_vector, graph.vectors)
        expanded = ConceptExpansion(hops=self.hops)(direct.ids, graph.adjacency)
        found = np.concatenate([direct.ids, expanded.ids])
        if self.rerank == "naive":
            rows = naive_rerank(found, graph.concept_chunks, chunk_sims)
        else:
            local = local_rerank(direct.ids, graph.concept_chunks, chunk_sims)
            rows = np.concatenate(
                [local, global_rerank(found, graph.concept_chunks, chunk_sims, exclude=local)]
            )
        return take_within_budget(rows, n_tokens, budget), direct, expanded


@dataclass(frozen=True)
class Pick:
    """One ensemble entry: ``path`` is ``"both"``, ``"second"`` or ``"concept"`` and
    ``index`` its position in that path's list (the second path's for ``"both"``)."""

    path: str
    index: int


class DualPathEnsemble(Operator):
    """Weighted context ensemble of the concept path and a second path (§3.2.1).

    The paper's three principles: (1) the total stays within beta; (2) chunks found by
    both paths (a vote of two) come first; (3) the second path (core-KG in the paper)
    occupies at most ``lam * beta`` and the concept path at most ``(1 - lam) * beta``.
    Shared chunks belong to both paths, so principle 3 is applied to each path's own
    (exclusive) entries over the budget left after the shared ones, ``r = beta - shared``:
    the second path gets at most ``lam * r``, the concept path at most ``(1 - lam) * r``.
    Shared chunks are ordered by the sum of their ranks in the two paths (ties: the
    second path's rank); each list stops at its first entry that does not fit.

    Parameters
    ----------
    lam : float
        Weight lambda of the second path, in (0, 1) (0.6 in §4.1).
    """

    def __init__(self, *, lam: float = 0.6) -> None:
        self.lam = lam

    def __call__(
        self,
        concept_rows: Sequence[int],
        concept_tokens: Sequence[int],
        second_rows: Sequence[int],
        second_tokens: Sequence[int],
        budget: int,
    ) -> list[Pick]:
        """Rows are chunk rows (``-1`` for second-path entries that are not chunks)."""
        lam = check_fraction(self, "lam", self.lam)
        if len(concept_rows) != len(concept_tokens) or len(second_rows) != len(second_tokens):
            raise ConfigError("DualPathEnsemble needs one token count per entry of each path")
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
        picks += self._fill("second", second_rows, second_tokens, concept_rank, math.floor(lam * rest))
        picks += self._fill(
            "concept", concept_rows, concept_tokens, second_rank, math.floor((1 - lam) * rest)
        )
        return picks

    @staticmethod
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
