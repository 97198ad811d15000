"""The nouns of paretorag: documents, chunks, scored arrays, contexts, answers, usage.

Operators pass :class:`Scored` arrays (integer rows and float scores), never dicts
keyed by names. Rows index the index's chunk table in its canonical order (see
:class:`paretorag.storage.store.ChunkTable`); other structures (tree nodes, entities,
concepts) have their own row spaces, named by ``Scored.kind``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import ConfigError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

MAX_K = 100
"""The most passages one question may retrieve (``k``), the same at every entry point: the
``-k`` flag, ``index.k`` of paretorag.toml and ``$PARETORAG_K``, :meth:`paretorag.RAG.query`,
the HTTP API and the MCP tools."""


@dataclass(frozen=True)
class Document:
    """A source document.

    Parameters
    ----------
    doc_id : str
        Content hash of ``title`` and ``text`` (the document's identity).
    title : str
        Title (file name for plain files, ``title`` field for corpus records).
    text : str
        Full text.
    source : str
        Where it came from (a path, optionally ``path#record``).
    presplit : bool
        True for passages from corpus files: kept as one chunk, never re-split.
    key : str
        What the document is a version of: its file's absolute path (every record of a corpus
        file shares it) or the ``--id`` given; a new version replaces the documents stored
        under the same key. Empty: identified by content only (never replaces anything).
    """

    doc_id: str
    title: str
    text: str
    source: str
    presplit: bool = False
    key: str = ""


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of a document: ``doc.text[start:end] == text``."""

    chunk_id: str
    doc_id: str
    order: int
    start: int
    end: int
    text: str
    n_tokens: int
    title: str = ""
    # the outline's headings in force at the chunk's start, "Methods > Indexing" ("" for none;
    # filled when chunks are read from an index, paretorag.textutil.heading_paths)
    heading: str = ""


@dataclass(frozen=True)
class Scored:
    """Rows of some structure with one score each, the currency of operators.

    ``ids`` and ``scores`` have the same length; order is meaningful (best first
    once :meth:`sorted` is applied).
    """

    ids: IntArray
    scores: FloatArray
    kind: str = "chunk"

    def __post_init__(self) -> None:
        ids = np.asarray(self.ids, dtype=np.int64).reshape(-1)
        scores = np.asarray(self.scores, dtype=np.float32).reshape(-1)
        if ids.shape != scores.shape:
            raise ConfigError(
                f"Scored needs as many scores as ids (got {ids.size} ids, {scores.size} scores)"
            )
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "scores", scores)

    @classmethod
    def empty(cls, kind: str = "chunk") -> Scored:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float32), kind)

    def __len__(self) -> int:
        return int(self.ids.size)

    def sorted(self) -> Scored:
        """Best score first; ties broken by row (stable and deterministic)."""
        order = np.lexsort((self.ids, -self.scores))
        return Scored(self.ids[order], self.scores[order], self.kind)

    def top(self, k: int) -> Scored:
        """The ``k`` best rows, best first."""
        s = self.sorted()
        return Scored(s.ids[:k], s.scores[:k], self.kind)


@dataclass(frozen=True)
class Budget:
    """A token budget for the context given to the LLM.

    ``max_tokens`` counts context tokens only (the question and instructions are
    extra). ``None`` means unbounded.
    """

    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ConfigError(f"Budget.max_tokens must be positive or None, got {self.max_tokens}")


@dataclass(frozen=True)
class ContextItem:
    """One retrieved passage as shown to the LLM and to the user."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    score: float
    n_tokens: int = 0
    row: int = -1
    # a text made from passages (a RAPTOR summary): the chunk ids of the passages it stands for
    sources: tuple[str, ...] = ()
    heading: str = ""  # the chunk's heading path in its document ("Methods > Indexing"; "" for none)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "text": self.text,
            "score": round(float(self.score), 6),
        }
        if self.heading:
            out["heading"] = self.heading
        if self.sources:
            out["sources"] = list(self.sources)
        return out


@dataclass(frozen=True)
class Context:
    """The packed context: passages under a budget plus the text the LLM reads.

    ``text`` is normally the numbered passages; methods with their own evidence
    format (E2GraphRAG's entity-grouped evidence) put it here instead.
    """

    items: tuple[ContextItem, ...]
    text: str
    n_tokens: int
    cut: tuple[str, ...] = ()  # chunk ids of the items left out for the budget, best first


@dataclass
class StageUsage:
    """LLM (or embedder) usage of one stage."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: int = 0

    def add(self, other: StageUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.seconds += other.seconds
        self.cached += other.cached

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["seconds"] = round(self.seconds, 4)
        return d


@dataclass
class Usage:
    """Usage per stage (``"index.summarize"``, ``"query.answer"``, ...)."""

    stages: dict[str, StageUsage] = field(default_factory=dict)

    def stage(self, name: str) -> StageUsage:
        return self.stages.setdefault(name, StageUsage())

    def merge(self, other: Usage) -> None:
        for name, s in other.stages.items():
            self.stage(name).add(s)

    @property
    def total(self) -> StageUsage:
        t = StageUsage()
        for s in self.stages.values():
            t.add(s)
        return t

    @property
    def llm_calls(self) -> int:
        return self.total.calls

    @property
    def prompt_tokens(self) -> int:
        return self.total.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.total.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return {name: s.to_json() for name, s in sorted(self.stages.items())}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, Any]]) -> Usage:
        u = cls()
        for name, s in data.items():
            u.stages[name] = StageUsage(
                calls=int(s.get("calls", 0)),
                prompt_tokens=int(s.get("prompt_tokens", 0)),
                completion_tokens=int(s.get("completion_tokens", 0)),
                seconds=float(s.get("seconds", 0.0)),
                cached=int(s.get("cached", 0)),
            )
        return u


@dataclass(frozen=True)
class Citation:
    """A sentence or span of the answer attributed to a context passage."""

    marker: int
    chunk_id: str
    doc_id: str
    title: str
    # a cited summary cites the passages it summarises (their chunk ids)
    sources: tuple[str, ...] = ()
    heading: str = ""  # the cited chunk's heading path ("" for none)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.sources:
            out["sources"] = list(self.sources)
        else:
            del out["sources"]
        if not self.heading:
            del out["heading"]
        return out


@dataclass
class Answer:
    """What :meth:`paretorag.RAG.query` returns."""

    question: str
    text: str
    method: str
    mode: str
    contexts: list[ContextItem]
    citations: list[Citation]
    usage: Usage
    timings: dict[str, float]
    branch: str = ""
    context_text: str = ""
    warnings: list[str] = field(default_factory=list)  # e.g. the context was cut to fit the LLM
    # set when the offline reader answered (paretorag.answering.reader): the short answer, its evidence
    # sentences ({"sentence", "passage"}), a confidence in [0, 1] and whether it found one
    short: str | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    confidence: float | None = None
    found: bool | None = None
    answered_by: str = ""  # "reader", "extractive" or the LLM's name; "" with context_only
    # what the method recorded on the way (keywords, paths, router score, candidates): this
    # question's own, like ``usage``, so one RAG answers many questions at once
    trace: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON: ``answer`` is the short answer when the reader answered, else the
        LLM's text; ``text`` is always the full text a user reads."""
        total = self.usage.total
        return {
            "answer": self.short if self.short is not None else self.text,
            "text": self.text,
            "evidence": list(self.evidence),
            "confidence": None if self.confidence is None else round(float(self.confidence), 4),
            "found": self.found,
            "answered_by": self.answered_by,
            "method": self.method,
            "mode": self.mode,
            "branch": self.branch,
            "contexts": [c.to_json() for c in self.contexts],
            "citations": [c.to_json() for c in self.citations],
            "usage": {
                "llm_calls": total.calls,
                "prompt_tokens": total.prompt_tokens,
                "completion_tokens": total.completion_tokens,
            },
            "timings_ms": {k: round(v * 1000.0, 3) for k, v in self.timings.items()},
            "warnings": list(self.warnings),
            "trace": dict(self.trace),
        }


__all__ = [
    "MAX_K",
    "Answer",
    "Budget",
    "Chunk",
    "Citation",
    "Context",
    "ContextItem",
    "Document",
    "FloatArray",
    "IntArray",
    "Scored",
    "StageUsage",
    "Usage",
]
