"""What retrieval reads and writes: the index view, query options, the state operators
share, and the retrieval a method returns (unified framework §3 stage 4).

An operator is called as ``op(index, state) -> Scored``. The :class:`State` carries the
question, the query options and the results so far by kind (``"entity"``,
``"relation"``, ``"chunk"``, ``"subgraph"``, ``"community"``, ...) and by step name, so
a later step reads what an earlier one produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import ConfigError
from ..types import Budget, ContextItem, FloatArray, Scored, Usage

if TYPE_CHECKING:
    from ..providers.base import LLM
    from ..providers.question_nlp import QuestionNLP
    from ..storage.store import ChunkTable
    from ..storage.structures import StructureData


class IndexView(Protocol):
    """The read side of a loaded index, as methods and operators see it."""

    chunks: ChunkTable
    nlp: QuestionNLP  # spaCy's readings of a question: operators reach spaCy only through it

    def embed_query(self, text: str) -> FloatArray:
        """Normalized query vector (1-d)."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Normalized vectors (2-d), cached by text hash."""
        ...

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        """Exact inner-product top-k over chunk vectors."""
        ...

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of chunk ``rows`` (2-d, normalized)."""
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
    ``generation`` is how the answer is made from them (§6.3): ``"direct"`` (one call)
    or ``"map-reduce"`` (each item answers with a score, the best partial answers are
    reduced into one; :func:`paretorag.answering.answer.map_reduce`).
    """

    scored: Scored
    mode: str = "dense"
    branch: str = ""
    items: list[ContextItem] | None = None
    context_text: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)  # LLM calls made while retrieving (set by RAG)
    generation: str = "direct"  # or "map-reduce" (GraphRAG global, CheapRAG; unified framework §6.3)


@dataclass
class State:
    """The question and everything retrieved for it so far.

    ``results`` maps a result key (a kind such as ``"entity"`` or ``"chunk"``, and each
    step's name) to its :class:`Scored`; ``terms`` are the question's retrieval
    primitives once extracted (entities or keywords, §6.3 question conversion);
    ``items``/``context_text``/``mode``/``branch`` become the :class:`Retrieval`;
    ``paths`` holds the retrievals of whole methods run as steps.
    """

    question: str
    options: QueryOptions = field(default_factory=QueryOptions)
    results: dict[str, Scored] = field(default_factory=dict)
    terms: list[str] | None = None
    items: list[ContextItem] | None = None
    context_text: str | None = None
    mode: str = ""
    branch: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    # whole methods run as steps (``ea-graphrag.path``, ``g2cons.second``), by step name
    paths: dict[str, Retrieval] = field(default_factory=dict)

    def get(self, key: str) -> Scored:
        """The result stored under ``key``; a clear error names the missing step."""
        try:
            return self.results[key]
        except KeyError:
            have = ", ".join(sorted(self.results)) or "nothing yet"
            raise ConfigError(
                f"no {key!r} result in the retrieval state (have: {have}); "
                f"put a step that produces {key!r} before this one"
            ) from None

    def put(self, key: str, scored: Scored) -> Scored:
        self.results[key] = scored
        return scored

    def vector(self, index: IndexView) -> FloatArray:
        """The question's vector (memoized by the index)."""
        return index.embed_query(self.question)

    def retrieval(self, default_mode: str = "", default_branch: str = "") -> Retrieval:
        """The state's chunk result (and items, evidence text) as a :class:`Retrieval`."""
        scored = self.results.get("chunk", Scored.empty())
        return Retrieval(
            scored=scored,
            mode=self.mode or default_mode,
            branch=self.branch or default_branch,
            items=self.items,
            context_text=self.context_text,
            info=self.info,
        )


__all__ = ["IndexView", "QueryOptions", "Retrieval", "State"]
