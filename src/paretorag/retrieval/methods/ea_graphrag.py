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

from typing import ClassVar

from ..operators.routing import Route, RouteMerge
from .base import register, register_preset
from .pipeline import Pipeline, Steps
from .steps import RoutedPath


@register
class EAGraphRAG(Pipeline):
    """EA-GraphRAG: route by syntactic complexity to dense, graph or wRRF fusion (§3, Algorithm 1).

    Steps: ``route`` (``ea-graphrag.route``: s(q) and Eq. 2), ``dense`` and ``graph``
    (``ea-graphrag.path``: each a registered method, run when the route takes it),
    ``merge`` (``ea-graphrag.merge``: one path's retrieval, or both fused by wRRF).

    Settings: ``router`` (folder; ``None``: the shipped one), ``dense_method`` and
    ``graph_method`` (``None``: the router's, ``vanilla`` and ``entity-walk``),
    ``tau_low`` / ``tau_high`` / ``tau_single`` (``None``: the router's tuned ones),
    ``fusion`` (True), ``route`` (``auto``; ``dense``/``graph``/``fusion`` force one),
    ``rrf_k`` (60) and ``k`` (5, the paper's top-k; a query's ``k`` sets it).
    """

    name = "ea-graphrag"
    paper = "EA-GraphRAG (papers/ea-graphrag.txt) §3.3-3.4, Eq. 2 and 8, Algorithm 1"
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        "router": ("route__router", "dense__router", "graph__router"),
        "dense_method": ("dense__method",),
        "graph_method": ("graph__method",),
        "tau_low": ("route__tau_low",),
        "tau_high": ("route__tau_high",),
        "tau_single": ("route__tau_single",),
        "fusion": ("route__fusion",),
        "route": ("route__route", "dense__route", "graph__route"),
        "rrf_k": ("merge__rrf_k",),
        "k": ("dense__k", "graph__k", "merge__k"),
    }
    query_k = ("dense__k", "graph__k", "merge__k")
    context_chunks = False

    def default_steps(self) -> Steps:
        return [
            ("route", Route()),
            ("dense", RoutedPath(path="dense")),
            ("graph", RoutedPath(path="graph")),
            ("merge", RouteMerge()),
        ]


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
