"""``ea-graphrag``: complexity-aware routing between dense and graph retrieval (papers/ea-graphrag.txt).

Algorithm 1: the router scores the question (``ea-graphrag.complexity``, Eq. 1); with
``s(q) < tau_low`` the dense method retrieves, with ``s(q) >= tau_high`` the graph
method, and in between both do and ``ea-graphrag.wrrf`` fuses their lists with weights
``1 - s(q)`` and ``s(q)`` (Eq. 8-9). The dense and graph paths are registered methods,
by default the two the router was trained on: the shipped router's are ``vanilla`` and
``entity-walk`` (the offline graph path that beats dense here; ``graph_method="hipporag2"``
is the paper's HippoRAG 2 path, §3.4.1-§3.4.2). The retrieval's ``mode`` is
the route taken (``dense``, ``graph`` or ``fusion``) and ``info["complexity"]`` the score,
so ``paretorag eval`` reports the share of questions on each route.

Table 6's ablations are settings registered as presets: ``ea-graphrag-dense-only``
(``route="dense"``), ``ea-graphrag-graph-only`` (``route="graph"``) and
``ea-graphrag-no-fusion`` (``fusion=False``: one threshold, ``tau_single``).
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigError
from ..kernels.rank import RRF_K
from ..operators.routing import COMPLEXITY, Complexity, WeightedRRF
from ..params import check_fraction, check_nonneg_int, check_positive_int
from ..query import IndexView, QueryOptions, Retrieval, State
from ..router.model import load_router, route_for
from .base import Method, get_method, register, register_preset

RouteSetting = Literal["auto", "dense", "graph", "fusion"]


@register
class EAGraphRAG(Method):
    """EA-GraphRAG: route by syntactic complexity to dense, graph or wRRF fusion (§3, Algorithm 1).

    Parameters
    ----------
    router : str, optional
        Router folder (``paretorag train-router``); ``None``: the shipped default.
    dense_method, graph_method : str, optional
        Registered methods of the two paths; ``None`` (default): the ones the router was
        trained to choose between (its ``dense_method`` / ``graph_method``; the shipped
        router: ``"vanilla"`` and ``"entity-walk"``).
    tau_low, tau_high, tau_single : float, optional
        Thresholds overriding the router's tuned ones (Eq. 2; ``tau_single`` without fusion).
    fusion : bool
        Use the fusion route between the thresholds (True); False routes by ``tau_single``.
    route : {"auto", "dense", "graph", "fusion"}
        ``auto`` asks the router; the others force one path (Table 6's ablations).
    rrf_k : int
        RRF constant k (60).
    k : int
        Passages retrieved (5, the paper's top-k); a query's ``k`` overrides it.
    """

    name = "ea-graphrag"
    paper = "EA-GraphRAG (papers/ea-graphrag.txt) §3.3-3.4, Eq. 2 and 8, Algorithm 1"

    def __init__(
        self,
        *,
        router: str | None = None,
        dense_method: str | None = None,
        graph_method: str | None = None,
        tau_low: float | None = None,
        tau_high: float | None = None,
        tau_single: float | None = None,
        fusion: bool = True,
        route: RouteSetting = "auto",
        rrf_k: int = RRF_K,
        k: int = 5,
    ) -> None:
        self.router = router
        self.dense_method = dense_method
        self.graph_method = graph_method
        self.tau_low = tau_low
        self.tau_high = tau_high
        self.tau_single = tau_single
        self.fusion = fusion
        self.route = route
        self.rrf_k = rrf_k
        self.k = k

    def _paths(self) -> tuple[str, ...]:
        if self.route not in ("auto", "dense", "graph", "fusion"):
            raise ConfigError(f"ea-graphrag: route must be auto, dense, graph or fusion, got {self.route!r}")
        return {"dense": ("dense",), "graph": ("graph",)}.get(self.route, ("dense", "graph"))

    def path_method(self, path: str) -> str:
        """The registered method of ``path`` ("dense" or "graph"): the setting, else the router's."""
        name = self.dense_method if path == "dense" else self.graph_method
        if name is None:
            meta = load_router(self.router).meta
            name = str(meta.get(f"{path}_method", "vanilla" if path == "dense" else "hipporag2"))
        return name

    def _method(self, path: str) -> Method:
        name = self.path_method(path)
        method = get_method(name)
        if isinstance(method, EAGraphRAG):
            raise ConfigError(f"ea-graphrag: {path}_method={name!r} would recurse; name another method")
        return method

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for p in self._paths() for s in self._method(p).requires))

    @property
    def uses_llm(self) -> bool:
        return any(self._method(p).uses_llm for p in self._paths())

    def choose(self, index: IndexView, state: State) -> str:
        """The route for ``state.question`` (Eq. 2), scoring it unless the route is forced."""
        if self.route != "auto":
            self._paths()
            return self.route
        score = float(Complexity(router=self.router)(index, state).scores[0])
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
        return route_for(score, lo, hi, fusion=bool(self.fusion), tau_single=single)

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        state = State(question, options)
        k = check_positive_int(self, "k", options.k if options.k is not None else self.k)
        route = self.choose(index, state)
        sub_options = QueryOptions(k=k, budget=options.budget, context_only=options.context_only)
        subs: dict[str, Retrieval] = {}
        for path in ("dense", "graph") if route == "fusion" else (route,):
            subs[path] = self._method(path).retrieve(index, question, sub_options)
            state.put(path, subs[path].scored)
        if route == "fusion":
            if COMPLEXITY not in state.results:  # a forced fusion route still weighs by s(q)
                Complexity(router=self.router)(index, state)
            WeightedRRF(rrf_k=check_nonneg_int(self, "rrf_k", self.rrf_k), k=k)(index, state)
            state.branch = f"{self.path_method('dense')}+{self.path_method('graph')} wRRF"
        else:
            sub = subs[route]
            state.put("chunk", sub.scored)
            state.items, state.context_text = sub.items, sub.context_text
            state.info.update({f"{route}.{key}": value for key, value in sub.info.items()})
            state.branch = self.path_method(route)
        state.mode = route
        state.info["route"] = route
        return state.retrieval()


register_preset(
    "ea-graphrag-dense-only",
    EAGraphRAG,
    "EA-GraphRAG Table 6 ablation: dense retrieval for every question",
    route="dense",
)
register_preset(
    "ea-graphrag-graph-only",
    EAGraphRAG,
    "EA-GraphRAG ablation: graph retrieval for every question",
    route="graph",
)
register_preset(
    "ea-graphrag-no-fusion",
    EAGraphRAG,
    "EA-GraphRAG Table 6 ablation: routing between dense and graph without the fusion route",
    fusion=False,
)

__all__ = ["EAGraphRAG"]
