"""Methods: named compositions of operators (unified framework §3 stage 4, §6.2).

A method declares the structures it ``requires`` and whether it ``uses_llm`` at
query time besides the answer, and implements ``retrieve``: question -> a
:class:`Retrieval` over chunk rows. Most methods are a :class:`~paretorag.retrieval.methods.pipeline.Pipeline`
of registered operators; those whose control flow is not a line (E2GraphRAG's
routing, G2ConS's dual path, agent loops) override ``retrieve`` and still call
registered operators. Context packing under the token budget and generation with
citations are shared (:mod:`paretorag.answering.context`, :mod:`paretorag.answering.answer`).

A *preset* is a registered name for a parameter setting of a method (E2GraphRAG's
Table 3 ablations): ``get_method("e2graphrag-dense-only")`` is
``E2GraphRAG(dense_only=True)`` under that name, not a generated class.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import ConfigError
from ...params import Params
from ..operators.base import Operator
from ..query import IndexView, QueryOptions, Retrieval


class Method(Params):
    """Base class of retrieval methods (see module docstring).

    ``name`` is the registered name (a preset's instance carries the preset's name);
    non-pipeline methods list their ``structures`` and set ``query_llm`` when they
    call the LLM while retrieving.
    """

    name: str = ""
    paper: ClassVar[str] = ""
    structures: ClassVar[tuple[str, ...]] = ()
    # structures read where present (built at the next commit), never required
    optional_structures: ClassVar[tuple[str, ...]] = ()
    query_llm: ClassVar[bool] = False
    generation: ClassVar[str] = "direct"  # or "map-reduce" (§6.3)
    recommended: ClassVar[bool] = False  # exactly one method: the default of query, serve and the web page

    def operators(self) -> list[Operator]:
        """The registered operators this method composes (what ``methods --table`` shows)."""
        return []

    @property
    def needs_generative(self) -> bool:
        """Whether the method needs an LLM that follows instructions (an Agent step)."""
        return any(op.generative_only for op in self.operators())

    @property
    def requires(self) -> tuple[str, ...]:
        """Structures this method reads (``index`` builds them)."""
        return self.structures

    @property
    def uses_llm(self) -> bool:
        """Whether retrieval calls the LLM (besides the answer)."""
        return self.query_llm

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What ``paretorag methods`` prints."""
        return {
            "name": self.name,
            "paper": self.paper,
            "requires": list(self.requires),
            "uses_llm": self.uses_llm,
            "needs_generative": self.needs_generative,
            "generation": self.generation,
            "recommended": self.recommended,
            "params": {
                k: v
                for k, v in self.get_params(deep=False).items()
                if isinstance(v, str | int | float | bool | None)
            },
        }


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its class and, for a preset, the settings it fixes."""

    cls: type[Method]
    preset: dict[str, Any] = field(default_factory=dict)
    doc: str = ""


METHODS: dict[str, MethodSpec] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator adding a method to the registry under ``cls.name``."""
    if not cls.name:
        raise ConfigError(f"method {cls.__name__} has no name")
    METHODS[cls.name] = MethodSpec(cls, {}, (cls.__doc__ or "").strip().split("\n", 1)[0])
    return cls


def register_preset(name: str, cls: type[Method], doc: str, **preset: Any) -> None:
    """Register ``name`` as ``cls`` with the settings ``preset`` (an ablation, a variant)."""
    cls().set_params(**preset)  # validates the setting names
    METHODS[name] = MethodSpec(cls, dict(preset), doc)


def suggest(name: str, known: Iterable[str]) -> str:
    """ "did you mean 'entity-walk'?" for a near miss (difflib), then where the names are listed
    (not the names themselves: there are dozens)."""
    names = sorted(known)
    close = difflib.get_close_matches(name.lower(), names, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"{hint}see `paretorag methods` for all {len(names)}"


def get_method(name: str, **params: Any) -> Method:
    """A fresh method instance by registered name, with ``params`` set."""
    from . import _load_all

    _load_all()
    try:
        spec = METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; {suggest(name, METHODS)}") from None
    method = spec.cls()
    method.set_params(**{**spec.preset, **params})
    method.name = name
    return method


def recommended_method() -> str:
    """The name of the one method marked ``recommended`` (what ``query`` and ``serve`` use by default)."""
    from . import _load_all

    _load_all()
    names = [name for name, spec in METHODS.items() if spec.cls.recommended and not spec.preset]
    if len(names) != 1:
        raise ConfigError(f"exactly one method must be recommended, found {names or 'none'}")
    return names[0]


def available_methods() -> list[str]:
    from . import _load_all

    _load_all()
    return sorted(METHODS)


__all__ = [
    "METHODS",
    "IndexView",
    "Method",
    "MethodSpec",
    "QueryOptions",
    "Retrieval",
    "available_methods",
    "get_method",
    "recommended_method",
    "register",
    "register_preset",
]
