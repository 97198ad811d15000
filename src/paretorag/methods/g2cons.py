"""G2ConS methods (papers/g2cons.txt): ``g2cons-concept`` and the dual-path ``g2cons``.

``g2cons-concept`` is G2ConS-Concept of Table 2: local search on the LLM-free concept
graph under a token budget beta (§3.2.1). ``g2cons`` adds a second path and merges both
with the weighted context ensemble (§3.2.1). The paper's second path is a knowledge
graph built by MS-GraphRAG on the core chunks only ("core-KG", §3.2); here it is any
registered method (``second``), by default ``vanilla`` restricted to the core chunks
(``core_only=True``): the cheapest stand-in for "knowledge built from the top-kappa
chunks". A method whose structures cover all chunks (``e2graphrag``) can be used with
``core_only=False``; its structures must be indexed too (index both methods).

Table 4's ablations are switches of both methods, computed at query time from the
stored ingredients (no re-indexing): A ``cooccurrence="sentence"``, B
``similarity_filter=False``, C ``concept_vectors="chunk"``, D ``rerank="naive"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..graphs import concepts as cg  # registers the concept_graph builder
from ..operators.base import check_fraction, check_positive_int
from ..operators.concepts import (
    ConceptGraphArrays,
    ConceptLocalSearch,
    DualPathEnsemble,
    Rerank,
    chunk_scores,
    pagerank,
    select_core,
)
from ..types import Budget, ContextItem, FloatArray, IntArray, Scored
from .base import IndexView, Method, QueryOptions, Retrieval, get_method, register

STRUCTURE = "concept_graph"


@dataclass(frozen=True)
class ConceptState:
    """A concept graph ready for retrieval (one per index and ablation variant)."""

    graph: ConceptGraphArrays
    concepts: np.ndarray
    chunk_score: np.ndarray


def _chunk_sims(index: IndexView, query_vector: FloatArray) -> FloatArray:
    """Cosine of the query to every chunk, indexed by row (exact search over all rows)."""
    n = len(index.chunks)
    sims = np.full(n, -np.inf, dtype=np.float32)
    if n:
        hits = index.dense_search(query_vector, n)
        sims[hits.ids] = hits.scores
    return sims


def _rank_scores(n: int) -> np.ndarray:
    """Scores of a list in context order: 1 / (1 + rank), so ``Scored.sorted`` keeps it."""
    return 1.0 / (1.0 + np.arange(n, dtype=np.float32))


def _scored_and_items(index: IndexView, rows: IntArray) -> tuple[Scored, list[ContextItem]]:
    scores = _rank_scores(len(rows))
    items = [index.chunk_item(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]
    return Scored(rows, scores), items


@register
class G2ConSConcept(Method):
    """G2ConS-Concept: local search on the concept graph (G2ConS §3.2.1; Table 2).

    Top-k concepts by cosine to the query, BFS up to ``hops`` hops, local then global
    reranking of their chunks by similarity to the query, stopping at the token budget.
    No LLM call at index or query time.

    Parameters
    ----------
    k : int
        Directly associated concepts (25, §4.1). ``QueryOptions.k`` does not change
        it: a query's ``k`` caps the number of passages returned (the retrieval depth).
    hops : int
        BFS depth N (2).
    budget : int
        Token budget beta (12,000); a query's ``QueryOptions.budget`` overrides it.
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
    """

    name = "g2cons-concept"
    requires = ("vectors", STRUCTURE)
    uses_llm = False
    paper = "G2ConS (papers/g2cons.txt) §3.2, §3.2.1: G2ConS-Concept"

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

    # -- shared by both methods -------------------------------------------------
    def _beta(self, options: QueryOptions) -> int:
        if options.budget.max_tokens is not None:
            return options.budget.max_tokens
        return check_positive_int(self, "budget", self.budget)

    def _variant(self, meta: dict[str, Any]) -> tuple[str, bool, float, int]:
        """Cache key of this method's graph variant, whether it is the stored graph, and
        its thresholds (theta_sem, theta_co)."""
        built = meta["settings"]
        sem = float(built["theta_sem"] if self.theta_sem is None else self.theta_sem)
        co = int(built["theta_co"] if self.theta_co is None else self.theta_co)
        variant = (self.cooccurrence, bool(self.similarity_filter), self.concept_vectors, sem, co)
        stored = variant == ("chunk", True, "sentence", float(built["theta_sem"]), int(built["theta_co"]))
        return f"g2cons:{meta['chunks_fingerprint']}:{variant}", stored, sem, co

    def state(self, index: IndexView) -> ConceptState:
        """The concept graph of ``index`` for this method's variant (memoized per index)."""
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
        key, stored, theta_sem, theta_co = self._variant(data.meta)

        def factory() -> ConceptState:
            graph = cg.load_graph(data)
            names = data.arrays["concepts"]
            if stored:
                return ConceptState(graph, names, np.asarray(data.arrays["chunk_score"], dtype=np.float64))
            vectors = graph.vectors
            chunk_concepts = sp.csr_matrix(graph.concept_chunks.T)
            if self.concept_vectors == "chunk":  # Table 4, C: mean of chunk embeddings
                chunk_vecs = index.embed(list(index.chunks.texts))
                vectors = cg.normalize_rows(cg.mean_vectors(chunk_concepts, chunk_vecs))
            units = chunk_concepts if self.cooccurrence == "chunk" else cg.load_sentences(data)[0]
            adj = cg.concept_edges(
                units,
                vectors if self.similarity_filter else None,
                theta_sem=theta_sem,
                theta_co=theta_co,
            )
            pr = pagerank(adj, damping=float(built["damping"]))
            scores = chunk_scores(chunk_concepts, pr, str(built["aggregate"]))
            return ConceptState(ConceptGraphArrays(vectors, adj, graph.concept_chunks), names, scores)

        state: ConceptState = index.cached(key, factory)
        return state

    def concept_path(self, index: IndexView, question: str, beta: int) -> tuple[IntArray, dict[str, Any]]:
        """Chunk rows of the concept-graph local search (§3.2.1) within ``beta`` tokens."""
        state = self.state(index)
        q = index.embed_query(question)
        search = ConceptLocalSearch(k=self.k, hops=self.hops, rerank=self.rerank)
        rows, direct, expanded = search(q, state.graph, _chunk_sims(index, q), index.chunks.n_tokens, beta)
        info = {
            "concepts": [str(state.concepts[i]) for i in direct.ids[:10]],
            "n_direct": len(direct),
            "n_expanded": len(expanded),
        }
        return rows, info

    # -- g2cons-concept ----------------------------------------------------------
    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        beta = self._beta(options)
        rows, info = self.concept_path(index, question, beta)
        if options.k is not None:
            rows = rows[: check_positive_int(self, "k (QueryOptions)", options.k)]
        scored, items = _scored_and_items(index, rows)
        info["tokens"] = int(index.chunks.n_tokens[rows].sum())
        return Retrieval(scored=scored, mode="concept", branch=str(self.rerank), items=items, info=info)


@register
class G2ConS(G2ConSConcept):
    """G2ConS: dual-path retrieval and weighted context ensemble (§3.2.1; Table 2).

    The concept path (as ``g2cons-concept``) and a second path (the paper's core-KG;
    here the registered method ``second``) each retrieve up to beta tokens; the ensemble
    puts chunks found by both first, then gives the second path at most ``lam`` and the
    concept path at most ``1 - lam`` of the rest (:class:`DualPathEnsemble`).

    Parameters
    ----------
    second : str
        Registered method of the second path (default ``"vanilla"``).
    core_only : bool
        Keep only the second path's chunks that are core chunks (§3.2 Core Chunk
        Selection), emulating a structure built on the top-kappa chunks.
    kappa : float, optional
        Core fraction; ``None`` uses the one the graph was built with (0.8).
    lam : float
        Weight lambda of the second path (0.6, §4.6).
    second_k : int, optional
        ``k`` passed to the second path; ``None``: enough chunks to fill beta.
    k, hops, budget, rerank, cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co
        As for :class:`G2ConSConcept`.
    """

    name = "g2cons"
    requires = ("vectors", STRUCTURE)
    paper = "G2ConS (papers/g2cons.txt) §3.2.1: dual-path retrieval and weighted context ensemble"

    def __init__(
        self,
        *,
        second: str = "vanilla",
        core_only: bool = True,
        kappa: float | None = None,
        lam: float = 0.6,
        second_k: int | None = None,
        k: int = 25,
        hops: int = 2,
        budget: int = 12000,
        rerank: Rerank = "local_global",
        cooccurrence: Literal["chunk", "sentence"] = "chunk",
        similarity_filter: bool = True,
        concept_vectors: Literal["sentence", "chunk"] = "sentence",
        theta_sem: float | None = None,
        theta_co: int | None = None,
    ) -> None:
        super().__init__(
            k=k,
            hops=hops,
            budget=budget,
            rerank=rerank,
            cooccurrence=cooccurrence,
            similarity_filter=similarity_filter,
            concept_vectors=concept_vectors,
            theta_sem=theta_sem,
            theta_co=theta_co,
        )
        self.second = second
        self.core_only = core_only
        self.kappa = kappa
        self.lam = lam
        self.second_k = second_k

    def _kappa(self, index: IndexView) -> float:
        if self.kappa is None:
            return float(index.structure(STRUCTURE).meta["core"]["kappa"])
        return check_fraction(self, "kappa", self.kappa)

    def core_mask(self, index: IndexView) -> np.ndarray:
        """Boolean mask of the core chunks (§3.2) for this variant and kappa."""
        state = self.state(index)
        data = index.structure(STRUCTURE)
        kappa = self._kappa(index)
        key = f"{self._variant(data.meta)[0]}:core:{kappa}"

        def factory() -> np.ndarray:
            mask = np.zeros(len(index.chunks), dtype=bool)
            mask[select_core(state.chunk_score, kappa)] = True
            return mask

        mask: np.ndarray = index.cached(key, factory)
        return mask

    def _second_path(self, index: IndexView, question: str, beta: int) -> list[ContextItem]:
        method = get_method(self.second)
        if isinstance(method, G2ConS):
            raise ConfigError(
                f"g2cons: second={self.second!r} would recurse; name another method (e.g. 'vanilla')"
            )
        n_tokens = index.chunks.n_tokens
        k = self.second_k
        if k is None:
            per_chunk = max(1.0, float(np.median(n_tokens))) if len(n_tokens) else 1.0
            k = math.ceil(beta / per_chunk) + 1
            if self.core_only:
                k = math.ceil(k / max(0.05, self._kappa(index)))
        k = min(check_positive_int(self, "second_k", k), max(1, len(index.chunks)))
        sub = method.retrieve(index, question, QueryOptions(k=k, budget=Budget(beta)))
        if sub.items is not None:
            items = list(sub.items)
        else:
            items = [
                index.chunk_item(int(r), float(s))
                for r, s in zip(sub.scored.ids, sub.scored.scores, strict=True)
            ]
        if self.core_only:
            mask = self.core_mask(index)
            items = [it for it in items if it.row < 0 or mask[it.row]]
        return items

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        beta = self._beta(options)
        concept_rows, info = self.concept_path(index, question, beta)
        second = self._second_path(index, question, beta)
        n_tokens = index.chunks.n_tokens
        second_tokens = [
            int(n_tokens[it.row]) if it.row >= 0 else (it.n_tokens or index.count_tokens(it.text))
            for it in second
        ]
        picks = DualPathEnsemble(lam=self.lam)(
            concept_rows.tolist(),
            n_tokens[concept_rows].tolist(),
            [it.row for it in second],
            second_tokens,
            beta,
        )
        if options.k is not None:
            picks = picks[: check_positive_int(self, "k (QueryOptions)", options.k)]
        scores = _rank_scores(len(picks))
        items: list[ContextItem] = []
        for pick, score in zip(picks, scores, strict=True):
            if pick.path == "concept":
                items.append(index.chunk_item(int(concept_rows[pick.index]), float(score)))
            else:
                src = second[pick.index]
                tokens = second_tokens[pick.index]
                items.append(
                    ContextItem(src.chunk_id, src.doc_id, src.title, src.text, float(score), tokens, src.row)
                )
        chunk_rows = np.asarray([it.row for it in items if it.row >= 0], dtype=np.int64)
        info.update({path: sum(p.path == path for p in picks) for path in ("both", "second", "concept")})
        return Retrieval(
            scored=Scored(chunk_rows, _rank_scores(chunk_rows.size)),
            mode="dual",
            branch=f"concept+{self.second}{'@core' if self.core_only else ''}",
            items=items,
            info=info,
        )
