"""``Pipeline``: a method defined as named operator steps (unified framework §6.2).

As scikit-learn's ``Pipeline``: settings are the ``steps`` and every step's settings
as ``step__param``; ``requires`` is the union of the steps' structures and ``uses_llm``
whether any step calls the LLM. Steps run in order on one :class:`~paretorag.query.State`;
each result is stored under its step's name and under what the operator ``produces``,
so a later step reads it. The state's ``"chunk"`` result (or its ``items``) is the
retrieval. A query's ``k`` (``QueryOptions.k``) sets ``k`` of the last step that
produces chunks.

Example
-------
>>> from paretorag.methods.pipeline import Pipeline
>>> from paretorag.operators import get_operator
>>> p = Pipeline(steps=[("search", get_operator("chunk.vdb", k=5))])
>>> p.set_params(search__k=8).get_params()["search__k"]
8
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import ConfigError
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
    """

    mode: str = ""
    # add the chunk result's passages to the context when steps put other items there
    # (reports, paths); False for the methods whose context is the graph alone (§7.2 L7-L8)
    context_chunks: ClassVar[bool] = True

    def __init__(self, *, steps: Sequence[tuple[str, Operator]] | None = None) -> None:
        self.steps = list(steps) if steps is not None else self.default_steps()

    def default_steps(self) -> Steps:
        return []

    # -- metadata -----------------------------------------------------------------
    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for _, op in self._checked_steps() for s in op.requires))

    @property
    def uses_llm(self) -> bool:
        return any(op.uses_llm for _, op in self._checked_steps())

    def operators(self) -> list[Operator]:
        return [op for _, op in self._checked_steps()]

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
        if deep:
            for name, op in self.steps:
                out[name] = op
                for key, value in op.get_params(deep=True).items():
                    out[f"{name}__{key}"] = value
        return out

    def set_params(self, **params: Any) -> Pipeline:
        if "steps" in params:
            self.steps = list(params.pop("steps"))
        index = {name: i for i, (name, _) in enumerate(self._checked_steps())}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, _, rest = key.partition("__")
            if head not in index:
                raise ConfigError(
                    f"{self._label()} has no setting {head!r}; valid settings: steps, "
                    f"{', '.join(index)}, or STEP__PARAM (e.g. {next(iter(index), 'step')}__k)"
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
        steps = self._checked_steps()
        last_chunk = max((i for i, (_, op) in enumerate(steps) if op.produces == "chunk"), default=-1)
        for i, (name, op) in enumerate(steps):
            if i == last_chunk and state.options.k is not None and "k" in op.get_params(deep=False):
                op = op.clone().set_params(k=state.options.k)
            state.results[name] = op(index, state)
        return state

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
