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

from typing import ClassVar

from ..operators.concepts import ConceptLocalSearch
from ..operators.g2cons_paths import DualEnsemble
from .base import register, register_preset
from .pipeline import Pipeline, Steps
from .steps import SecondPath

# the concept graph variant (Table 4 A-C): read by the concept path and the core chunks alike
_VARIANT = ("cooccurrence", "similarity_filter", "concept_vectors", "theta_sem", "theta_co")
_SEARCH = ("k", "hops", "rerank", "ranking")


@register
class G2ConSConcept(Pipeline):
    """G2ConS-Concept: local search on the concept graph (G2ConS §3.2.1; Table 2).

    One step, ``concepts`` (``g2cons.concepts``): top-k concepts by cosine to the query,
    BFS up to ``hops`` hops, local then global reranking of their chunks by similarity
    to the query, stopping at the token budget. No LLM call at index or query time. A
    query's ``k`` caps the passages returned (``concepts__limit``), not the concepts.
    Settings: ``k`` (25 concepts), ``hops`` (N = 2), ``budget`` (beta = 12,000),
    ``rerank``, the Table 4 variants (``cooccurrence``, ``similarity_filter``,
    ``concept_vectors``, ``theta_sem``, ``theta_co``) and ``ranking`` (``dense``, the
    paper's, or ``hybrid`` with BM25).
    """

    name = "g2cons-concept"
    paper = "G2ConS (papers/g2cons.txt) §3.2, §3.2.1: G2ConS-Concept"
    mode = "concept"
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        key: (f"concepts__{key}",) for key in (*_SEARCH, "budget", *_VARIANT)
    }
    query_k = ("concepts__limit",)
    context_chunks = False

    def default_steps(self) -> Steps:
        return [("concepts", ConceptLocalSearch())]


@register
class G2ConS(Pipeline):
    """G2ConS: dual-path retrieval and weighted context ensemble (§3.2.1; Table 2).

    Steps: ``concepts`` (the concept path, as ``g2cons-concept``), ``second``
    (``g2cons.second``: the registered method ``second``, by default ``vanilla`` on the
    core chunks; the paper's core-KG with ``core_kg``) and ``ensemble``
    (``g2cons.ensemble``: chunks found by both first, then at most ``lam`` of the rest
    for the second path and ``1 - lam`` for the concept path, within beta).

    Settings: those of ``g2cons-concept``; ``second`` (``"vanilla"``), ``core_kg``
    (False), ``core_only`` (True), ``kappa`` (``None``: as built, 0.8), ``lam`` (0.6,
    §4.6) and ``second_k`` (``None``: enough chunks to fill beta). The variant settings
    and ``budget`` are declared once and reach every step that reads them.
    """

    name = "g2cons"
    paper = "G2ConS (papers/g2cons.txt) §3.2.1: dual-path retrieval and weighted context ensemble"
    mode = "dual"
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        **{key: (f"concepts__{key}",) for key in _SEARCH},
        **{key: (f"concepts__{key}", f"second__core__{key}") for key in _VARIANT},
        "budget": ("concepts__budget", "second__budget", "ensemble__budget"),
        "second": ("second__method",),
        "core_kg": ("second__core_kg",),
        "core_only": ("second__core_only",),
        "kappa": ("second__core__kappa",),
        "second_k": ("second__second_k",),
        "lam": ("ensemble__lam",),
    }
    query_k = ("ensemble__limit",)
    context_chunks = False

    def default_steps(self) -> Steps:
        return [("concepts", ConceptLocalSearch()), ("second", SecondPath()), ("ensemble", DualEnsemble())]


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
