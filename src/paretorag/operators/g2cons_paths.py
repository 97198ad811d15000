"""G2ConS's dual path (G2ConS §3.2.1): the second retriever and the weighted context ensemble.

- ``g2cons.second``: the second path, a registered method run as one step. The paper's
  is a knowledge graph built by MS-GraphRAG on the core chunks only ("core-KG"); by
  default it is ``vanilla`` restricted to the core chunks (``core_only``, through
  ``g2cons.core``); with ``core_kg`` the method's graphs are the core-chunk ones
  (:mod:`paretorag.graphs.core_kg`). It retrieves up to beta tokens.
- ``g2cons.ensemble``: chunks found by both paths first, then at most ``lam`` of the rest
  for the second path and ``1 - lam`` for the concept path, within beta
  (:func:`~paretorag.operators.concepts.dual_path_ensemble`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..errors import ConfigError
from ..query import QueryOptions, Retrieval
from ..types import Budget, ContextItem, Scored
from .base import Operator, check_fraction, check_positive_int, register_operator
from .concepts import PAPER, STRUCTURE, CoreChunks, _ConceptVariant, dual_path_ensemble

if TYPE_CHECKING:
    from ..methods.base import Method
    from ..query import IndexView, State

SECOND = "second"


def rank_scores(n: int) -> np.ndarray:
    """Scores of a list in context order: 1 / (1 + rank), so ``Scored.sorted`` keeps it."""
    return (1.0 / (1.0 + np.arange(n, dtype=np.float32))).astype(np.float32)


def beta_of(op: Operator, state: State, budget: object) -> int:
    """The token budget beta: the query's, else the ``budget`` setting (12,000)."""
    if state.options.budget.max_tokens is not None:
        return state.options.budget.max_tokens
    return check_positive_int(op, "budget", budget)


@register_operator
class SecondPath(_ConceptVariant):
    """G2ConS's second path (§3.2.1): a registered method, on the core chunks.

    Stores the path's items in ``state.paths["second"]``; produces its chunk rows.

    Parameters
    ----------
    method : str
        Registered method of the second path (``"vanilla"``).
    core_kg : bool
        The paper's core-KG path: the method reads knowledge graphs built on the core
        chunks only (``core_kg``, ``core_tkg``, ``core_rkg``, ``core_communities``).
    core_only : bool
        Keep only the path's chunks that are core chunks (§3.2 Core Chunk Selection).
    kappa : float, optional
        Core fraction; ``None``: the one the graph was built with (0.8).
    second_k : int, optional
        ``k`` of the method; ``None``: enough chunks to fill beta.
    budget : int
        Beta (12,000), a query's budget overrides it.
    cooccurrence, similarity_filter, concept_vectors, theta_sem, theta_co
        The concept graph variant whose core chunks are kept (as ``g2cons.concepts``).
    """

    name = "g2cons.second"
    produces = "path"
    paper = PAPER + "; §3.2.1 dual-path retrieval"

    def __init__(
        self,
        *,
        method: str = "vanilla",
        core_kg: bool = False,
        core_only: bool = True,
        kappa: float | None = None,
        second_k: int | None = None,
        budget: int = 12000,
        cooccurrence: Literal["chunk", "sentence"] = "chunk",
        similarity_filter: bool = True,
        concept_vectors: Literal["sentence", "chunk"] = "sentence",
        theta_sem: float | None = None,
        theta_co: int | None = None,
    ) -> None:
        self.method = method
        self.core_kg = core_kg
        self.core_only = core_only
        self.kappa = kappa
        self.second_k = second_k
        self.budget = budget
        self.cooccurrence = cooccurrence
        self.similarity_filter = similarity_filter
        self.concept_vectors = concept_vectors
        self.theta_sem = theta_sem
        self.theta_co = theta_co

    def _method(self) -> Method:
        """The path's method; with ``core_kg``, its graphs are the core-chunk ones."""
        from ..graphs.core_kg import CORE
        from ..methods.base import get_method
        from ..methods.pipeline import Pipeline

        method = get_method(self.method)
        if any(isinstance(op, SecondPath) for op in method.operators()):
            raise ConfigError(
                f"g2cons: second={self.method!r} would recurse; name another method (e.g. 'vanilla')"
            )
        if not self.core_kg:
            return method
        steps = method.steps if isinstance(method, Pipeline) else []
        graphs = {
            f"{step}__graph": CORE[str(getattr(op, "graph", ""))]
            for step, op in steps
            if getattr(op, "graph", None) in CORE
        }
        if not graphs:
            raise ConfigError(
                f"g2cons: core_kg=True needs a second method whose steps read a knowledge graph "
                f"(kg, tkg, rkg, communities), such as 'hipporag' or 'graphrag-local'; {self.method!r} reads none"
            )
        return method.set_params(**graphs)

    def _core(self) -> CoreChunks:
        variant = {
            key: getattr(self, key) for key in ("cooccurrence", "similarity_filter", "concept_vectors")
        }
        return CoreChunks(kappa=self.kappa, theta_sem=self.theta_sem, theta_co=self.theta_co, **variant)

    def parts(self) -> list[Operator]:
        return [*self._method().operators(), *([self._core()] if self.core_only and not self.core_kg else [])]

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.structures, *self._method().requires)))

    def _kappa(self, index: IndexView) -> float:
        if self.kappa is None:
            return float(index.structure(STRUCTURE).meta["core"]["kappa"])
        return check_fraction(self, "kappa", self.kappa)

    def run(self, index: IndexView, state: State) -> Scored:
        method = self._method()
        beta = beta_of(self, state, self.budget)
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
            core_rows = self._core().set_params(kappa=self._kappa(index)).run(index, state).ids
            mask = np.zeros(len(index.chunks), dtype=bool)
            mask[core_rows] = True
            items = [it for it in items if it.row < 0 or mask[it.row]]
        rows = np.asarray([it.row for it in items if it.row >= 0], dtype=np.int64)
        scored = Scored(rows, rank_scores(rows.size))
        where = "@core-kg" if self.core_kg else "@core" if self.core_only else ""
        state.paths[SECOND] = Retrieval(
            scored=scored, mode=sub.mode, branch=f"{self.method}{where}", items=items
        )
        return scored


@register_operator
class DualEnsemble(Operator):
    """G2ConS's weighted context ensemble of the concept and second paths (§3.2.1).

    Parameters
    ----------
    lam : float
        Weight lambda of the second path (0.6, §4.6).
    budget : int
        Beta (12,000); a query's budget overrides it.
    limit : int, optional
        Passages kept at most (a query's ``k``); ``None``: all that fit beta.
    concepts : str
        The result holding the concept path's chunk rows (``g2cons.concepts``' ``"chunk"``).
    """

    name = "g2cons.ensemble"
    kind = "g2cons"
    produces = "chunk"
    consumes = ("chunk",)
    paper = PAPER + "; §3.2.1 weighted context ensemble"

    def __init__(
        self, *, lam: float = 0.6, budget: int = 12000, limit: int | None = None, concepts: str = "chunk"
    ) -> None:
        self.lam = lam
        self.budget = budget
        self.limit = limit
        self.concepts = concepts

    def run(self, index: IndexView, state: State) -> Scored:
        if SECOND not in state.paths:
            raise ConfigError("g2cons.ensemble needs the second path: put a g2cons.second step before it")
        second = list(state.paths[SECOND].items or [])
        concept_rows = state.get(self.concepts).ids
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
            beta_of(self, state, self.budget),
            lam=check_fraction(self, "lam", self.lam),
        )
        if self.limit is not None:
            picks = picks[: check_positive_int(self, "limit", self.limit)]
        items: list[ContextItem] = []
        for pick, score in zip(picks, rank_scores(len(picks)), strict=True):
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
        state.info.update(
            {path: sum(p.path == path for p in picks) for path in ("both", "second", "concept")}
        )
        state.mode, state.branch = "dual", f"concept+{state.paths[SECOND].branch}"
        return Scored(rows, rank_scores(rows.size))


__all__ = ["DualEnsemble", "SecondPath", "beta_of", "rank_scores"]
