"""EA-GraphRAG's decision and fusion steps (papers/ea-graphrag.txt §3.3, §3.4.3; Algorithm 1).

- ``ea-graphrag.complexity``: the complexity score ``s(q)`` of the question (Algorithm 1
  lines 1-2: syntactic features, MLP adapter, Eq. 1) from a trained router
  (:mod:`paretorag.router`); the result (kind ``"complexity"``) is one row, ``0``, whose
  score is ``s(q)``; ``state.info["complexity"]`` holds it too.
- ``ea-graphrag.wrrf``: complexity-aware weighted reciprocal rank fusion of a dense and a
  graph chunk ranking (Eq. 8-9; Algorithm 1 lines 16-18):
  ``RRF(c) = (1 - s(q)) / (k + r_dense(c)) + s(q) / (k + r_graph(c))``, the top ``k``
  of the union. A row missing from a list adds nothing from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from ..kernels.rank import RRF_K, rrf
from ..types import Scored
from .base import Operator, check_fraction, check_nonneg_int, check_positive_int, register_operator

if TYPE_CHECKING:
    from ..query import IndexView, State

COMPLEXITY = "complexity"


@register_operator
class Complexity(Operator):
    """The question's complexity score s(q) in (0, 1) (EA-GraphRAG §3.2-§3.3, Eq. 1).

    One spaCy parse of the question gives the syntactic features; the router's selected
    features are standardized and scored by its MLP adapter (numpy, no torch).

    Parameters
    ----------
    router : str, optional
        A router folder written by ``paretorag train-router``; ``None`` uses the one
        shipped with paretorag.
    """

    name = "ea-graphrag.complexity"
    kind = "ea-graphrag"
    produces = COMPLEXITY
    paper = "EA-GraphRAG §3.2-3.3, Eq. 1; Algorithm 1 lines 1-2"

    def __init__(self, *, router: str | None = None) -> None:
        self.router = router

    def run(self, index: IndexView, state: State) -> Scored:
        from ..router.model import load_router

        if self.router is not None and not isinstance(self.router, str):
            raise ConfigError(f"Complexity.router must be a folder path or None, got {self.router!r}")
        score = load_router(self.router).score(state.question)
        state.info[COMPLEXITY] = round(score, 6)
        return Scored(np.zeros(1, np.int64), np.asarray([score], np.float32), COMPLEXITY)


@register_operator
class WeightedRRF(Operator):
    """Complexity-aware weighted RRF of two chunk rankings (EA-GraphRAG §3.4.3, Eq. 8-9).

    Reads the chunk rankings stored under ``dense_result`` and ``graph_result`` and the
    weight ``s(q)`` from ``weight`` or, when it is ``None``, from the ``complexity``
    result; dense gets ``1 - s(q)``, graph ``s(q)``.

    Parameters
    ----------
    dense_result, graph_result : str
        Result keys of the two rankings (``"dense"``, ``"graph"``).
    weight : float, optional
        A fixed graph weight in [0, 1]; ``None`` reads ``s(q)``.
    rrf_k : int
        The RRF constant k (60, Cormack et al. 2009, the paper's default).
    k : int
        Number of chunks kept (5, the paper's top-k).
    """

    name = "ea-graphrag.wrrf"
    kind = "ea-graphrag"
    produces = "chunk"
    consumes = ("dense", "graph", COMPLEXITY)
    paper = "EA-GraphRAG §3.4.3, Eq. 8-9; Algorithm 1 lines 16-18"

    def __init__(
        self,
        *,
        dense_result: str = "dense",
        graph_result: str = "graph",
        weight: float | None = None,
        rrf_k: int = RRF_K,
        k: int = 5,
    ) -> None:
        self.dense_result = dense_result
        self.graph_result = graph_result
        self.weight = weight
        self.rrf_k = rrf_k
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        rrf_k = check_nonneg_int(self, "rrf_k", self.rrf_k)
        if self.weight is None:
            complexity = state.get(COMPLEXITY)
            if len(complexity) != 1:
                raise ConfigError(
                    "the complexity result must hold one score; run ea-graphrag.complexity first"
                )
            s = float(complexity.scores[0])
        else:
            s = check_fraction(self, "weight", self.weight)
        dense, graph = state.get(self.dense_result), state.get(self.graph_result)
        fused = rrf([dense, graph], weights=[1.0 - s, s], k=rrf_k)
        return Scored(fused.ids[:k], fused.scores[:k], "chunk")


__all__ = ["COMPLEXITY", "Complexity", "WeightedRRF"]
