"""EA-GraphRAG's decision and fusion steps (papers/ea-graphrag.txt §3.3, §3.4.3; Algorithm 1).

- ``ea-graphrag.complexity``: the complexity score ``s(q)`` of the question (Algorithm 1
  lines 1-2: syntactic features, MLP adapter, Eq. 1) from a trained router
  (:mod:`paretorag.retrieval.router`); the result (kind ``"complexity"``) is one row, ``0``, whose
  score is ``s(q)``; ``state.info["complexity"]`` holds it too.
- ``ea-graphrag.wrrf``: complexity-aware weighted reciprocal rank fusion of a dense and a
  graph chunk ranking (Eq. 8-9; Algorithm 1 lines 16-18):
  ``RRF(c) = (1 - s(q)) / (k + r_dense(c)) + s(q) / (k + r_graph(c))``, the top ``k``
  of the union. A row missing from a list adds nothing from it.
- ``ea-graphrag.route``: Algorithm 1's decision (Eq. 2): dense, graph or fusion, from
  ``s(q)`` and the thresholds, or a forced route (Table 6's ablations).
- ``ea-graphrag.path``: a registered method run as one path (the dense or the graph
  retriever, §3.4.1-§3.4.2), only when the route takes it.
- ``ea-graphrag.merge``: the single path's retrieval as the result, or on the fusion
  route the ``ea-graphrag.wrrf`` of both (Algorithm 1 lines 4-18).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from ...errors import ConfigError
from ...kernels.rank import RRF_K, rrf
from ...types import Scored
from .base import Operator, check_fraction, check_nonneg_int, check_positive_int, register_operator

if TYPE_CHECKING:
    from ..query import IndexView, State

COMPLEXITY = "complexity"
ROUTES = ("auto", "dense", "graph", "fusion")
RouteSetting = Literal["auto", "dense", "graph", "fusion"]


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


def route_setting(route: object) -> str:
    if route not in ROUTES:
        raise ConfigError(f"ea-graphrag: route must be auto, dense, graph or fusion, got {route!r}")
    return str(route)


@register_operator
class Route(Operator):
    """Algorithm 1's route for the question (EA-GraphRAG Eq. 2; Table 6 ablations forced).

    ``s(q) < tau_low`` dense, ``s(q) >= tau_high`` graph, fusion in between; without
    fusion, graph when ``s(q) >= tau_single``. Sets ``state.info["route"]`` and
    ``state.mode``; produces ``s(q)`` (as ``ea-graphrag.complexity``), or nothing for a
    forced dense or graph route, which scores no question.

    Parameters
    ----------
    router : str, optional
        Router folder (``paretorag train-router``); ``None``: the shipped default.
    tau_low, tau_high, tau_single : float, optional
        Thresholds overriding the router's tuned ones.
    fusion : bool
        Use the fusion route between the thresholds (True).
    route : {"auto", "dense", "graph", "fusion"}
        ``auto`` asks the router; the others force one route.
    """

    name = "ea-graphrag.route"
    kind = "ea-graphrag"
    produces = COMPLEXITY
    paper = "EA-GraphRAG §3.4, Eq. 2; Algorithm 1 lines 3-15; Table 6"

    def __init__(
        self,
        *,
        router: str | None = None,
        tau_low: float | None = None,
        tau_high: float | None = None,
        tau_single: float | None = None,
        fusion: bool = True,
        route: RouteSetting = "auto",
    ) -> None:
        self.router = router
        self.tau_low = tau_low
        self.tau_high = tau_high
        self.tau_single = tau_single
        self.fusion = fusion
        self.route = route

    def run(self, index: IndexView, state: State) -> Scored:
        from ..router.model import load_router, route_for

        forced = route_setting(self.route)
        if forced in ("dense", "graph"):
            route, out = forced, Scored.empty(COMPLEXITY)
        else:
            out = Complexity(router=self.router).run(index, state)
            router = load_router(self.router)
            lo = router.tau_low if self.tau_low is None else check_fraction(self, "tau_low", self.tau_low)
            hi = router.tau_high if self.tau_high is None else check_fraction(self, "tau_high", self.tau_high)
            single = (
                router.tau_single
                if self.tau_single is None
                else check_fraction(self, "tau_single", self.tau_single)
            )
            if lo > hi:
                raise ConfigError(f"ea-graphrag: tau_low ({lo}) must not exceed tau_high ({hi})")
            auto = route_for(float(out.scores[0]), lo, hi, fusion=bool(self.fusion), tau_single=single)
            route = auto if forced == "auto" else forced
        state.info["route"] = state.mode = route
        return out


@register_operator
class RouteMerge(Operator):
    """The routed retrieval: the one path's, or both fused by ``ea-graphrag.wrrf`` (Algorithm 1).

    Parameters
    ----------
    rrf_k : int
        The RRF constant k (60).
    k : int
        Passages kept on the fusion route (5).
    """

    name = "ea-graphrag.merge"
    kind = "ea-graphrag"
    produces = "chunk"
    consumes = (COMPLEXITY, "dense", "graph")
    paper = "EA-GraphRAG Algorithm 1 lines 4-18; §3.4.3, Eq. 8-9"

    def __init__(self, *, rrf_k: int = RRF_K, k: int = 5) -> None:
        self.rrf_k = rrf_k
        self.k = k

    def parts(self) -> list[Operator]:
        return [WeightedRRF(rrf_k=self.rrf_k, k=self.k)]

    def run(self, index: IndexView, state: State) -> Scored:
        route = state.info.get("route")
        if route == "fusion":
            out = WeightedRRF(rrf_k=check_nonneg_int(self, "rrf_k", self.rrf_k), k=self.k).run(index, state)
            names = [_path_label(state, p) for p in ("dense", "graph")]
            state.branch = f"{names[0]}+{names[1]} wRRF"
            return out
        if route not in state.paths:
            raise ConfigError(
                "ea-graphrag.merge needs the route's path: run ea-graphrag.route and ea-graphrag.path first"
            )
        sub = state.paths[route]
        state.items, state.context_text = sub.items, sub.context_text
        state.info.update({f"{route}.{key}": value for key, value in sub.info.items()})
        state.branch = _path_label(state, route)
        return sub.scored


def _path_label(state: State, path: str) -> str:
    return str(state.info.get("paths", {}).get(path, path))


__all__ = [
    "COMPLEXITY",
    "ROUTES",
    "Complexity",
    "Route",
    "RouteMerge",
    "RouteSetting",
    "WeightedRRF",
    "route_setting",
]
