"""G2ConS's dual path (G2ConS §3.2.1): the second retriever and the weighted context ensemble.

- ``g2cons.second``: the second path, a registered method run as one step. The paper's
  is a knowledge graph built by MS-GraphRAG on the core chunks only ("core-KG"); by
  default it is ``vanilla`` restricted to the core chunks (``core_only``, through
  ``g2cons.core``); with ``core_kg`` the method's graphs are the core-chunk ones
  (:mod:`paretorag.graphs.core_kg`). It retrieves up to beta tokens.
- ``g2cons.ensemble``: chunks found by both paths first, then at most ``lam`` of the rest
  for the second path and ``1 - lam`` for the concept path, within beta
  (:func:`~paretorag.retrieval.operators.concepts.dual_path_ensemble`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError
from ...types import ContextItem, Scored
from .base import Operator, check_fraction, check_positive_int, register_operator
from .concepts import PAPER, dual_path_ensemble

if TYPE_CHECKING:
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


__all__ = ["SECOND", "DualEnsemble", "beta_of", "rank_scores"]
