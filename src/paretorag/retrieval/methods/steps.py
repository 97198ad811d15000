"""Whole methods run as one step of another: EA-GraphRAG's two retrievers and G2ConS's second path.

A :class:`SubMethod` is a registered operator that runs a registered method. It lives
here, beside the methods, because only the methods layer may look a method up by name:
the operators below it never import ``methods`` (the data flow runs operators ->
methods -> facade, with no import back up).

- ``ea-graphrag.path`` (:class:`RoutedPath`): a registered method run as one path (the
  dense or the graph retriever, EA-GraphRAG §3.4.1-§3.4.2), only when the route takes it.
- ``g2cons.second`` (:class:`SecondPath`): G2ConS's second path (§3.2.1), a registered
  method on the core chunks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import numpy as np

from ...errors import ConfigError
from ...graphs.core_kg import CORE
from ...types import Budget, Scored
from ..operators.base import Operator, check_fraction, check_positive_int, register_operator
from ..operators.concepts import PAPER, STRUCTURE, CoreChunks
from ..operators.g2cons_paths import SECOND, beta_of, rank_scores
from ..operators.routing import COMPLEXITY, RouteSetting, route_setting
from ..query import QueryOptions, Retrieval
from .base import Method, get_method
from .pipeline import Pipeline

if TYPE_CHECKING:
    from ..query import IndexView, State


class SubMethod(Operator):
    """An operator that runs a registered method (by name) as one step.

    Subclasses say which method (:meth:`method_name`), how a recursion is reported
    (:meth:`recursion_error`) and may adapt the method to the step (:meth:`adapt`).
    """

    def method_name(self) -> str:
        raise NotImplementedError

    def recursion_error(self, name: str) -> str:
        return f"{self.name}: method {name!r} would recurse; name another method"

    def adapt(self, method: Method) -> Method:
        return method

    def _method(self) -> Method:
        name = self.method_name()
        method = get_method(name)
        if any(isinstance(op, type(self)) for op in method.operators()):
            raise ConfigError(self.recursion_error(name))
        return self.adapt(method)


@register_operator
class RoutedPath(SubMethod):
    """One of Algorithm 1's two retrievers, a registered method, run when the route takes it.

    Runs on the ``dense`` or ``graph`` route as named by ``path``, and on ``fusion``;
    stores the method's retrieval in ``state.paths`` under ``path`` and produces its
    chunk ranking (empty when not run).

    Parameters
    ----------
    path : {"dense", "graph"}
        Which retriever this is.
    method : str, optional
        Its registered method; ``None``: the one the router was trained with (the
        shipped router's: ``vanilla`` and ``entity-walk``).
    router : str, optional
        The router whose methods ``None`` means.
    route : {"auto", "dense", "graph", "fusion"}
        The method's forced route: a path the route never takes reads no structure.
    k : int
        Passages the path retrieves (5).
    """

    name = "ea-graphrag.path"
    kind = "ea-graphrag"
    produces = "path"
    consumes = (COMPLEXITY,)
    paper = "EA-GraphRAG §3.4.1-3.4.2 (dense and graph retrievers); Algorithm 1"

    def __init__(
        self,
        *,
        path: Literal["dense", "graph"] = "dense",
        method: str | None = None,
        router: str | None = None,
        route: RouteSetting = "auto",
        k: int = 5,
    ) -> None:
        self.path = path
        self.method = method
        self.router = router
        self.route = route
        self.k = k

    def method_name(self) -> str:
        """The registered method of this path: the setting, else the router's."""
        if self.path not in ("dense", "graph"):
            raise ConfigError(f"ea-graphrag.path: path must be 'dense' or 'graph', got {self.path!r}")
        if self.method is not None:
            return self.method
        from ..router.model import load_router

        meta = load_router(self.router).meta
        return str(meta.get(f"{self.path}_method", "vanilla" if self.path == "dense" else "hipporag2"))

    def recursion_error(self, name: str) -> str:
        return f"ea-graphrag: {self.path}_method={name!r} would recurse; name another method"

    def _taken(self) -> bool:
        return route_setting(self.route) in ("auto", "fusion", self.path)

    def parts(self) -> list[Operator]:
        return self._method().operators() if self._taken() else []

    @property
    def requires(self) -> tuple[str, ...]:
        return self._method().requires if self._taken() else ()

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        if not self._taken() or state.info.get("route") not in (self.path, "fusion"):
            return Scored.empty("chunk")
        opts = state.options
        sub = self._method().retrieve(
            index, state.question, QueryOptions(k=k, budget=opts.budget, context_only=opts.context_only)
        )
        state.paths[self.path] = sub
        state.info.setdefault("paths", {})[self.path] = self.method_name()
        state.put(self.path, sub.scored)
        return sub.scored


@register_operator
class SecondPath(SubMethod):
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
    core : g2cons.core
        The core chunks kept with ``core_only``: its ``kappa`` (``None``: as built, 0.8)
        and the concept graph variant are ``g2cons.core``'s own settings, read from it
        (the method sets them with the concept path's: ``second__core__kappa``).
    second_k : int, optional
        ``k`` of the method; ``None``: enough chunks to fill beta.
    budget : int
        Beta (12,000), a query's budget overrides it.
    """

    name = "g2cons.second"
    kind = "g2cons"
    produces = "path"
    structures = ("vectors", STRUCTURE)
    paper = PAPER + "; §3.2.1 dual-path retrieval"

    def __init__(
        self,
        *,
        method: str = "vanilla",
        core_kg: bool = False,
        core_only: bool = True,
        core: CoreChunks | None = None,
        second_k: int | None = None,
        budget: int = 12000,
    ) -> None:
        self.method = method
        self.core_kg = core_kg
        self.core_only = core_only
        self.core = CoreChunks() if core is None else core
        self.second_k = second_k
        self.budget = budget

    def method_name(self) -> str:
        return self.method

    def recursion_error(self, name: str) -> str:
        return f"g2cons: second={name!r} would recurse; name another method (e.g. 'vanilla')"

    def adapt(self, method: Method) -> Method:
        """With ``core_kg``, the method's knowledge graphs are the core-chunk ones."""
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

    def parts(self) -> list[Operator]:
        return [*self._method().operators(), *([self.core] if self.core_only and not self.core_kg else [])]

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.structures, *self._method().requires)))

    def _kappa(self, index: IndexView) -> float:
        if self.core.kappa is None:
            return float(index.structure(STRUCTURE).meta["core"]["kappa"])
        return check_fraction(self.core, "kappa", self.core.kappa)

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
            core_rows = self.core.run(index, state).ids
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


__all__ = ["RoutedPath", "SecondPath", "SubMethod"]
