"""The Agent operators' shared work: an LLM prunes the seeds (unified framework §6.1 node and
relationship Agent; ToG §2.2, entity and relation pruning).

The best ``max_candidates`` seeds are listed one per line and the LLM names up to ``k`` of
them (ToG's beam width, 3); the result follows the LLM's order. ``node.agent`` lists
entities (or, on a passage graph, passages), ``relation.agent`` relations; each says how
its seeds read (:meth:`Agent.listing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...graphs.graph import Graph
from ...types import Scored
from .base import GraphOperator, check_positive_int
from .common import choose, generative_llm, ranked, seeds

if TYPE_CHECKING:
    from ..query import IndexView, State


class Agent(GraphOperator):
    """Seeds an LLM chooses as useful for the question; subclasses list them (:meth:`listing`)."""

    uses_llm = True
    generative_only = True

    max_candidates: int
    source: str

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        m = check_positive_int(self, "max_candidates", self.max_candidates)
        cand = seeds(state, self.source, self.count(graph), self.produces).top(m)
        if not len(cand):
            return Scored.empty(self.produces)
        llm = generative_llm(index, self)
        texts, what = self.listing(index, graph, cand.ids)
        picked = choose(llm, state.question, what, texts, k)
        return ranked([int(cand.ids[i]) for i in picked], self.produces)

    def count(self, graph: Graph) -> int:
        """How many rows the seeds index (nodes or relations)."""
        raise NotImplementedError

    def listing(self, index: IndexView, graph: Graph, rows: np.ndarray) -> tuple[list[str], str]:
        """The seeds as the LLM reads them, and what they are ("entities", "relations", ...)."""
        raise NotImplementedError


__all__ = ["Agent"]
