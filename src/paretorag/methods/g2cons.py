"""G2ConS methods (papers/g2cons.txt): ``g2cons-concept`` and the dual-path ``g2cons``.

``g2cons-concept`` is G2ConS-Concept of Table 2: one step, the ``g2cons.concepts``
operator (local search on the LLM-free concept graph under a token budget beta,
§3.2.1). ``g2cons`` adds a second path and merges both with the weighted context
ensemble (§3.2.1). The paper's second path is a knowledge graph built by MS-GraphRAG on
the core chunks only ("core-KG", §3.2); here it is any registered method (``second``),
by default ``vanilla`` restricted to the core chunks (``core_only=True``, the
``g2cons.core`` operator): the cheapest stand-in for "knowledge built from the
top-kappa chunks". With ``core_kg=True`` the second method (a KG method such as
``graphrag-local`` or ``hipporag``) reads knowledge graphs built on the core chunks only
(:mod:`paretorag.graphs.core_kg`): the paper's core-KG path, registered as the preset
``g2cons-core-kg`` (GraphRAG local search on the core TKG).

Table 4's ablations are settings of both methods, computed at query time from the
stored ingredients (no re-indexing): A ``cooccurrence="sentence"``, B
``similarity_filter=False``, C ``concept_vectors="chunk"``, D ``rerank="naive"``.

Where the paper ranks chunks by dense similarity, ``ranking="hybrid"`` ranks them by
reciprocal rank fusion of that order with BM25's, and ``second="hybrid"`` makes the
second path dense + BM25; the preset ``g2cons-hybrid`` sets both. The default stays
dense: on 2Wiki the hybrid variants moved Recall@5 by less than a point either way
(README, Evaluation).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from ..errors import ConfigError
from ..operators.concepts import (
    STRUCTURE,
    ConceptLocalSearch,
    ConceptState,
    CoreChunks,
    Ranking,
    Rerank,
    dual_path_ensemble,
)
from ..params import check_fraction, check_positive_int
from ..query import IndexView, QueryOptions, Retrieval, State
from ..types import Budget, ContextItem, Scored
from .base import Method, get_method, register, register_preset
from .pipeline import Pipeline

_VARIANT = ("cooccurrence", "similarity_filter", "concept_vectors", "theta_sem", "theta_co")


def _rank_scores(n: int) -> np.ndarray:
    """Scores of a list in context order: 1 / (1 + rank), so ``Scored.sorted`` keeps it."""
    return 1.0 / (1.0 + np.arange(n, dtype=np.float32))


@register
class G2ConSConcept(Method):
    """G2ConS-Concept: local search on the concept graph (G2ConS §3.2.1; Table 2).

    Top-k concepts by cosine to the query, BFS up to ``hops`` hops, local then global
    reranking of their chunks by similarity to the query, stopping at the token budget.
    No LLM call at index or query time. A query's ``k`` caps the number of passages
    returned (the retrieval depth), not the concepts.

    Parameters
    ----------
    k, hops, budget, rerank, cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co
        The ``g2cons.concepts`` operator's settings (25 concepts, N = 2 hops, beta =
        12,000 tokens, Table 4 variants; thresholds ``None``: as built).
    ranking : {"dense", "hybrid"}
        Order chunks in the reranking by cosine (the paper's) or by its reciprocal rank
        fusion with BM25 (needs the ``bm25`` structure).
    """

    name = "g2cons-concept"
    structures = ("vectors", STRUCTURE)
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
        ranking: Ranking = "dense",
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

    @property
    def requires(self) -> tuple[str, ...]:
        return self.search().requires

    def search(self) -> ConceptLocalSearch:
        """The concept-path operator with this method's settings."""
        own = self.get_params(deep=False)
        return ConceptLocalSearch(**{k: own[k] for k in ConceptLocalSearch().get_params(deep=False)})

    def state(self, index: IndexView) -> ConceptState:
        """The concept graph variant these settings describe (memoized per index)."""
        return self.search().concept_state(index)

    def concept_path(self, index: IndexView, state: State) -> np.ndarray:
        """Chunk rows of the concept-graph local search (§3.2.1) within beta tokens."""
        return self.search()(index, state).ids

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        state = State(question, options)
        rows = self.concept_path(index, state)
        if options.k is not None:
            rows = rows[: check_positive_int(self, "k (QueryOptions)", options.k)]
        scores = _rank_scores(rows.size)
        state.items = [index.chunk_item(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]
        state.put("chunk", Scored(rows, scores))
        state.info["tokens"] = int(index.chunks.n_tokens[rows].sum())
        state.mode, state.branch = "concept", str(self.rerank)
        return state.retrieval()


@register
class G2ConS(G2ConSConcept):
    """G2ConS: dual-path retrieval and weighted context ensemble (§3.2.1; Table 2).

    The concept path (as ``g2cons-concept``) and a second path (the paper's core-KG;
    here the registered method ``second``) each retrieve up to beta tokens; the ensemble
    puts chunks found by both first, then gives the second path at most ``lam`` and the
    concept path at most ``1 - lam`` of the rest (:func:`dual_path_ensemble`).

    Parameters
    ----------
    second : str
        Registered method of the second path (default ``"vanilla"``).
    core_kg : bool
        The paper's core-KG path (§3.2.1): the second method reads knowledge graphs built
        on the core chunks only (``core_kg``, ``core_tkg``, ``core_rkg``,
        ``core_communities``; :mod:`paretorag.graphs.core_kg`) instead of the full ones,
        so the LLM extracts from kappa * n chunks. ``second`` must then be a method whose
        steps read those graphs (``hipporag``, ``graphrag-local``, ``lightrag-hybrid``...).
    core_only : bool
        Keep only the second path's chunks that are core chunks (§3.2 Core Chunk
        Selection, ``g2cons.core``), emulating a structure built on the top-kappa chunks.
    kappa : float, optional
        Core fraction; ``None`` uses the one the graph was built with (0.8).
    lam : float
        Weight lambda of the second path (0.6, §4.6).
    second_k : int, optional
        ``k`` passed to the second path; ``None``: enough chunks to fill beta.
    k, hops, budget, rerank, cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co, ranking
        As for :class:`G2ConSConcept`.
    """

    name = "g2cons"
    paper = "G2ConS (papers/g2cons.txt) §3.2.1: dual-path retrieval and weighted context ensemble"

    def __init__(
        self,
        *,
        second: str = "vanilla",
        core_kg: bool = False,
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
        ranking: Ranking = "dense",
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
            ranking=ranking,
        )
        self.second = second
        self.core_kg = core_kg
        self.core_only = core_only
        self.kappa = kappa
        self.lam = lam
        self.second_k = second_k

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*super().requires, *self._second_method().requires)))

    def _second_method(self) -> Method:
        """The second path's method; with ``core_kg``, its graphs are the core-chunk ones."""
        method = get_method(self.second)
        if not self.core_kg:
            return method
        from ..graphs.core_kg import CORE

        steps = method.steps if isinstance(method, Pipeline) else []
        graphs = {
            f"{step}__graph": CORE[str(getattr(op, "graph", ""))]
            for step, op in steps
            if getattr(op, "graph", None) in CORE
        }
        if not graphs:
            raise ConfigError(
                f"g2cons: core_kg=True needs a second method whose steps read a knowledge graph "
                f"(kg, tkg, rkg, communities), such as 'hipporag' or 'graphrag-local'; {self.second!r} reads none"
            )
        return method.set_params(**graphs)

    def _kappa(self, index: IndexView) -> float:
        if self.kappa is None:
            return float(index.structure(STRUCTURE).meta["core"]["kappa"])
        return check_fraction(self, "kappa", self.kappa)

    def _second_path(self, index: IndexView, state: State, beta: int) -> list[ContextItem]:
        method = self._second_method()
        if isinstance(method, G2ConS):
            raise ConfigError(
                f"g2cons: second={self.second!r} would recurse; name another method (e.g. 'vanilla')"
            )
        n_tokens = index.chunks.n_tokens
        k = self.second_k
        if k is None:
            per_chunk = max(1.0, float(np.median(n_tokens))) if len(n_tokens) else 1.0
            k = math.ceil(beta / per_chunk) + 1
            if self.core_only and not self.core_kg:
                k = math.ceil(k / max(0.05, self._kappa(index)))
        k = min(check_positive_int(self, "second_k", k), max(1, len(index.chunks)))
        sub = method.retrieve(index, state.question, QueryOptions(k=k, budget=Budget(beta)))
        if sub.items is not None:
            items = list(sub.items)
        else:
            items = [
                index.chunk_item(int(r), float(s))
                for r, s in zip(sub.scored.ids, sub.scored.scores, strict=True)
            ]
        if self.core_only and not self.core_kg:  # a core KG holds nothing else
            variant = {key: getattr(self, key) for key in _VARIANT}
            core = CoreChunks(kappa=self._kappa(index), **variant)(index, state).ids
            mask = np.zeros(len(index.chunks), dtype=bool)
            mask[core] = True
            items = [it for it in items if it.row < 0 or mask[it.row]]
        return items

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        state = State(question, options)
        search = self.search()
        beta = search.beta(state)
        concept_rows = search(index, state).ids
        second = self._second_path(index, state, beta)
        n_tokens = index.chunks.n_tokens
        second_tokens = [
            int(n_tokens[it.row]) if it.row >= 0 else (it.n_tokens or index.count_tokens(it.text))
            for it in second
        ]
        picks = dual_path_ensemble(
            concept_rows.tolist(),
            n_tokens[concept_rows].tolist(),
            [it.row for it in second],
            second_tokens,
            beta,
            lam=check_fraction(self, "lam", self.lam),
        )
        if options.k is not None:
            picks = picks[: check_positive_int(self, "k (QueryOptions)", options.k)]
        items: list[ContextItem] = []
        for pick, score in zip(picks, _rank_scores(len(picks)), strict=True):
            if pick.path == "concept":
                items.append(index.chunk_item(int(concept_rows[pick.index]), float(score)))
            else:
                src = second[pick.index]
                tokens = second_tokens[pick.index]
                items.append(
                    ContextItem(src.chunk_id, src.doc_id, src.title, src.text, float(score), tokens, src.row)
                )
        rows = np.asarray([it.row for it in items if it.row >= 0], dtype=np.int64)
        state.items = items
        state.put("chunk", Scored(rows, _rank_scores(rows.size)))
        state.info.update(
            {path: sum(p.path == path for p in picks) for path in ("both", "second", "concept")}
        )
        core = "@core-kg" if self.core_kg else "@core" if self.core_only else ""
        state.mode, state.branch = "dual", f"concept+{self.second}{core}"
        return state.retrieval()


register_preset(
    "g2cons-hybrid",
    G2ConS,
    "G2ConS with dense + BM25 wherever it ranks chunks: ranking='hybrid', second='hybrid'",
    ranking="hybrid",
    second="hybrid",
)
register_preset(
    "g2cons-core-kg",
    G2ConS,
    "G2ConS with its core-KG path: concept path + GraphRAG local search on a TKG of the core chunks (§3.2.1)",
    second="graphrag-local",
    core_kg=True,
)

__all__ = ["G2ConS", "G2ConSConcept"]
