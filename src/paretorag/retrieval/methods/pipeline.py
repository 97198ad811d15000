"""``Pipeline``: a method defined as named operator steps (unified framework §6.2).

As scikit-learn's ``Pipeline``: settings are the ``steps`` and every step's settings
as ``step__param``; ``requires`` is the union of the steps' structures and ``uses_llm``
whether any step calls the LLM. Steps run in order on one :class:`~paretorag.retrieval.query.State`;
each result is stored under its step's name and under what the operator ``produces``,
so a later step reads it. The state's ``"chunk"`` result (or its ``items``) is the
retrieval. A query's ``k`` (``QueryOptions.k``) sets ``k`` of the last step that
produces chunks (or the step settings named by ``query_k``); with ``deepen_sources``,
when that step fuses rankings named in its ``sources`` setting (``chunk.fuse``), those
steps rank at least ``k`` chunks too (``hybrid``).

A method's own settings are declared once, as ``aliases``: a short name
(``e2graphrag``'s ``h``) for one or more step settings (``select__h``), so that
``get_method("e2graphrag", h=3)`` and ``--set e2graphrag.h=3`` keep working and a
setting shared by two steps (G2ConS's Table 4 variants) is never copied by hand.

Example
-------
>>> from paretorag.retrieval.methods.pipeline import Pipeline
>>> from paretorag.retrieval.operators import get_operator
>>> p = Pipeline(steps=[("search", get_operator("chunk.vdb", k=5))])
>>> p.set_params(search__k=8).get_params()["search__k"]
8
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from ...errors import ConfigError
from ..operators.base import Operator
from ..query import IndexView, QueryOptions, Retrieval, State
from .base import Method

Steps = list[tuple[str, Operator]]


class Pipeline(Method):
    """A method made of named operator steps (see the module docstring).

    Subclasses registered as methods give their ``default_steps``.

    Parameters
    ----------
    steps : list of (str, Operator), optional
        Named steps; default: :meth:`default_steps`.
    **settings
        The method's own settings (``aliases``), as ``get_method(name, **settings)``.
    """

    mode: str = ""
    # short setting names -> the step settings they set ("h" -> ("select__h",))
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {}
    # the step settings a query's k sets (("select__k",)); empty: k of the last chunk step
    query_k: ClassVar[tuple[str, ...]] = ()
    # a query's k deepens the rankings the last chunk step fuses (its "sources") to >= k
    deepen_sources: ClassVar[bool] = False
    # record each step's wall time in the trace (info["timings_ms"][step])
    timed: ClassVar[bool] = False
    # add the chunk result's passages to the context when steps put other items there
    # (reports, paths); False for the methods whose context is the graph alone (§7.2 L7-L8)
    context_chunks: ClassVar[bool] = True

    def __init__(self, *, steps: Sequence[tuple[str, Operator]] | None = None, **settings: Any) -> None:
        self.steps = list(steps) if steps is not None else self.default_steps()
        unknown = sorted(set(settings) - set(self.aliases))
        if unknown:
            raise ConfigError(
                f"{self._label()} has no setting {unknown[0]!r}; its own settings: "
                f"{', '.join(self.aliases) or 'none'} (steps' settings: STEP__PARAM via set_params)"
            )
        self.set_params(**settings)

    def default_steps(self) -> Steps:
        return []

    def __getattr__(self, name: str) -> Any:
        """A method's own setting read as an attribute (``get_method("tog").depth``)."""
        if name in type(self).aliases and "steps" in self.__dict__:
            return self.get_params(deep=False)[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- metadata -----------------------------------------------------------------
    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for _, op in self._checked_steps() for s in op.requires))

    @property
    def uses_llm(self) -> bool:
        return any(op.uses_llm for op in self.operators())

    def operators(self) -> list[Operator]:
        return [part for _, op in self._checked_steps() for part in (*op.parts(), op)]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["steps"] = [{"step": n, "operator": op.name, **op.get_params(deep=False)} for n, op in self.steps]
        return out

    def _checked_steps(self) -> Steps:
        names: set[str] = set()
        for item in self.steps:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Operator)):
                raise ConfigError(f"{self._label()}: each step must be (name, Operator), got {item!r}")
            if "__" in item[0] or item[0] in names or item[0] == "steps":
                raise ConfigError(f"{self._label()}: step name {item[0]!r} is repeated, reserved or has '__'")
            names.add(item[0])
        return self.steps

    def _label(self) -> str:
        return self.name or type(self).__name__

    # -- settings (scikit-learn's Pipeline convention) ------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": list(self.steps)}
        params = {n: op.get_params(deep=True) for n, op in self.steps}
        for alias, targets in self.aliases.items():
            head, _, rest = targets[0].partition("__")
            if head in params and rest in params[head]:
                out[alias] = params[head][rest]
        if deep:
            for name, op in self.steps:
                out[name] = op
                for key, value in params[name].items():
                    out[f"{name}__{key}"] = value
        return out

    def set_params(self, **params: Any) -> Pipeline:
        if "steps" in params:
            self.steps = list(params.pop("steps"))
        for alias in [key for key in params if key in self.aliases]:
            value = params.pop(alias)
            for target in self.aliases[alias]:
                params.setdefault(target, value)
        index = {name: i for i, (name, _) in enumerate(self._checked_steps())}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, _, rest = key.partition("__")
            if head not in index:
                own = ", ".join([*self.aliases, "steps", *index])
                raise ConfigError(
                    f"{self._label()} has no setting {head!r}; valid settings: {own}, "
                    f"or STEP__PARAM (e.g. {next(iter(index), 'step')}__k)"
                )
            if rest:
                nested.setdefault(head, {})[rest] = value
            elif not isinstance(value, Operator):
                raise ConfigError(f"{self._label()}: step {head!r} must be set to an Operator, got {value!r}")
            else:
                self.steps[index[head]] = (head, value)
        for head, sub in nested.items():
            self.steps[index[head]][1].set_params(**sub)
        return self

    # -- running ----------------------------------------------------------------------
    def run(self, index: IndexView, state: State) -> State:
        """Run every step on ``state`` (in place) and return it."""
        steps = self._with_query_k(self._checked_steps(), state.options.k)
        timings: dict[str, float] = {}
        for name, op in steps:
            t0 = time.perf_counter()
            state.results[name] = op(index, state)
            if self.timed:
                timings[name] = round((time.perf_counter() - t0) * 1e3, 3)
        if self.timed:
            state.info["timings_ms"] = timings
        return state

    def _with_query_k(self, steps: Steps, k: int | None) -> Steps:
        """The steps with a query's ``k`` set where it belongs (see the module docstring)."""
        if k is None:
            return steps
        if self.query_k:
            targets = dict(t.split("__", 1) for t in self.query_k)
            return [(n, op.clone().set_params(**{targets[n]: k}) if n in targets else op) for n, op in steps]
        last = max((i for i, (_, op) in enumerate(steps) if op.produces == "chunk"), default=-1)
        if last < 0 or "k" not in steps[last][1].get_params(deep=False):
            return steps
        sources = steps[last][1].get_params(deep=False).get("sources") or () if self.deepen_sources else ()
        out: Steps = []
        for i, (name, op) in enumerate(steps):
            depth = op.get_params(deep=False).get("k")
            if i == last or (name in sources and isinstance(depth, int) and depth < k):
                op = op.clone().set_params(k=k)
            out.append((name, op))
        return out

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        state = self.run(index, State(question, options))
        r = state.retrieval(default_mode=self.mode or self.name, default_branch=self._branch(state))
        if r.items is not None and self.context_chunks and len(r.scored):
            have = {it.chunk_id for it in r.items}
            chunks = [
                index.chunk_item(int(i), float(s))
                for i, s in zip(r.scored.ids, r.scored.scores, strict=True)
                if index.chunks.ids[int(i)] not in have
            ]
            r.items = chunks + r.items  # the passages first: a budget cut drops graph text first
        r.generation = self.generation
        return r

    def _branch(self, state: State) -> str:
        """The branch label of a retrieval (default: the operators run)."""
        return " -> ".join(op.name for _, op in self.steps)


__all__ = ["Pipeline", "Steps"]
