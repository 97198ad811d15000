"""Methods: named compositions of operators (unified framework §3 stage 4).

A method declares the structures it ``requires`` and whether it ``uses_llm`` at
query time besides the answer, and implements ``retrieve``: question -> a
:class:`Retrieval` over chunk rows. Context packing under the token budget and
generation with citations are shared (:mod:`paretorag.context`,
:mod:`paretorag.answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from ..errors import ConfigError
from ..operators.base import Params
from ..types import Budget, ContextItem, FloatArray, Scored, Usage

if TYPE_CHECKING:
    from ..graphs.base import StructureData
    from ..providers.base import LLM
    from ..store import ChunkTable


class IndexView(Protocol):
    """The read side of a loaded index, as methods see it."""

    chunks: ChunkTable

    def embed_query(self, text: str) -> FloatArray:
        """Normalized query vector (1-d)."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Normalized vectors (2-d), cached by text hash."""
        ...

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        """Exact inner-product top-k over chunk vectors."""
        ...

    def structure(self, name: str) -> StructureData:
        """A built structure; raises MissingStructureError naming the fix."""
        ...

    def cached(self, key: str, factory: Any) -> Any:
        """Per-index memo for objects derived from structures (graphs, matrices)."""
        ...

    def llm(self, stage: str) -> LLM: ...

    def count_tokens(self, text: str) -> int: ...

    def chunk_item(self, row: int, score: float) -> ContextItem:
        """The context item of chunk ``row`` (for methods that build ``Retrieval.items``)."""
        ...


@dataclass(frozen=True)
class QueryOptions:
    """Per-query options (frozen). ``k`` overrides the method's own default when set."""

    k: int | None = None
    budget: Budget = field(default_factory=Budget)
    context_only: bool = False


@dataclass
class Retrieval:
    """What a method retrieves: chunk rows (best first), the mode and branch taken.

    ``items`` (optional) are the ordered context items to pack when they are not
    plain chunks (tree summaries, merged evidence); ``context_text`` replaces the
    default numbered-passage formatting when the method has its own evidence format.
    """

    scored: Scored
    mode: str = "dense"
    branch: str = ""
    items: list[ContextItem] | None = None
    context_text: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)  # LLM calls made while retrieving (set by RAG)


class Method(Params):
    """Base class of retrieval methods (see module docstring)."""

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    uses_llm: ClassVar[bool] = False
    paper: ClassVar[str] = ""

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        raise NotImplementedError


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator adding a method to the registry under ``cls.name``."""
    if not cls.name:
        raise ConfigError(f"method {cls.__name__} has no name")
    METHODS[cls.name] = cls
    return cls


def get_method(name: str, **params: Any) -> Method:
    """A fresh method instance by registered name."""
    from . import _load_all

    _load_all()
    try:
        cls = METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}") from None
    return cls(**params)


def available_methods() -> list[str]:
    from . import _load_all

    _load_all()
    return sorted(METHODS)
