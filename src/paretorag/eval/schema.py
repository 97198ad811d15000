"""One schema for every benchmark: questions, passages and the data set that holds them.

A :class:`Passage` becomes a paretorag :class:`~paretorag.types.Document` whose
``doc_id`` is its ``key`` (``sha256(title + "\\x00" + text)[:16]``), so gold
passage keys compare directly with the ``doc_id`` of retrieved context items.
Passage corpora (MuSiQue, HotpotQA, ...) are ``presplit`` (one chunk each); long
documents (QuALITY stories, NQ pages, the medical text) are chunked by the index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..ingest.files import doc_id_for
from ..types import Document


@dataclass(frozen=True)
class Passage:
    """One corpus entry.

    Parameters
    ----------
    key : str
        ``doc_id_for(title, text)``; equals the ``doc_id`` of the indexed document.
    title : str
        Title (Wikipedia page title for passage corpora).
    text : str
        Full text.
    presplit : bool
        True for short passages kept as one chunk; False for long documents the
        index chunks itself.
    source : str
        File (and record) the passage came from.
    """

    key: str
    title: str
    text: str
    presplit: bool = True
    source: str = ""

    @classmethod
    def make(cls, title: str, text: str, *, presplit: bool = True, source: str = "") -> Passage:
        """A passage whose key is computed from its title and text."""
        return cls(doc_id_for(title, text), title, text, presplit, source)

    def to_document(self) -> Document:
        """The paretorag document to index (``doc_id == key``)."""
        return Document(
            doc_id=self.key, title=self.title, text=self.text, source=self.source, presplit=self.presplit
        )


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Parameters
    ----------
    qid : str
        Identifier from the source file.
    text : str
        The question (for multiple choice: the stem, without the options).
    answers : list of str
        Gold answer first, then aliases. For multiple choice: the text of the
        correct option.
    options : list of str or None
        Option texts (without their ``(A)`` labels) for multiple choice, else None.
    gold_keys : list of str
        Keys of the gold (supporting) passages; empty where the set has none.
    context_keys : list of str
        Keys of the passages shipped with this question (its own paragraphs, or its
        document); used to restrict the corpus to the questions' own passages.
    meta : dict
        Anything else worth keeping (question type, hop count, gold option letter).
    """

    qid: str
    text: str
    answers: list[str]
    options: list[str] | None = None
    gold_keys: list[str] = field(default_factory=list)
    context_keys: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def gold_option(self) -> int | None:
        """0-based index of the correct option (multiple choice only)."""
        value = self.meta.get("gold_option")
        return int(value) if value is not None else None

    def prompt(self) -> str:
        """The text to send to the system: the question plus its lettered options, if any."""
        if not self.options:
            return self.text
        lines = [f"({chr(ord('A') + i)}) {opt}" for i, opt in enumerate(self.options)]
        return self.text + "\n" + "\n".join(lines)


SPLIT_FOLDS = 5  # Dataset.split: one fold in five is dev


def question_fold(name: str, qid: str) -> int:
    """The fold (0..SPLIT_FOLDS-1) of question ``qid`` of data set ``name``; fold 0 is dev."""
    return int(hashlib.sha256(f"{name}:{qid}".encode()).hexdigest()[:8], 16) % SPLIT_FOLDS


@dataclass(frozen=True)
class Dataset:
    """Questions plus the corpus they are asked over.

    Parameters
    ----------
    name : str
        Subset name (``musique_dev200``, ...); a suffix records a restricted corpus.
    questions : list of Question
    passages : list of Passage
        Unique by key, in first-occurrence order (the indexing order).
    meta : dict
        Source files and notes.
    """

    name: str
    questions: list[Question]
    passages: list[Passage]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def has_gold(self) -> bool:
        """Whether any question carries gold passage keys (Recall@k is defined)."""
        return any(q.gold_keys for q in self.questions)

    @property
    def is_multiple_choice(self) -> bool:
        return any(q.options for q in self.questions)

    def documents(self) -> list[Document]:
        """The corpus as paretorag documents, in indexing order."""
        return [p.to_document() for p in self.passages]

    def corpus_fingerprint(self) -> str:
        """Hash of the passage keys in order (identifies the corpus for index caching)."""
        h = hashlib.sha256()
        for p in self.passages:
            h.update(p.key.encode())
            h.update(b"\n")
        return h.hexdigest()[:16]

    def head(self, limit: int | None) -> Dataset:
        """The first ``limit`` questions (the corpus is unchanged)."""
        if limit is None:
            return self
        if limit <= 0:
            raise ConfigError(f"limit must be a positive number of questions, got {limit}")
        return replace(self, questions=self.questions[:limit])

    def split(self, part: str) -> Dataset:
        """The ``dev`` or ``train`` part of the questions (the corpus is unchanged).

        A question is ``dev`` when the sha256 of ``"NAME:QID"`` is 0 modulo
        :data:`SPLIT_FOLDS` (a fifth of the questions, fixed for a question whatever else
        the file holds); ``train`` is the rest. Models trained on a set's ``train`` part
        (the long-document ranker) are measured on its ``dev`` part, out of sample.
        """
        if part not in ("dev", "train"):
            raise ConfigError(f"split must be 'dev' or 'train', got {part!r}, e.g. nq_leval@dev")
        kept = [q for q in self.questions if (question_fold(self.name, q.qid) == 0) == (part == "dev")]
        return replace(self, name=f"{self.name}@{part}", questions=kept)

    def head_per_type(self, limit: int | None) -> Dataset:
        """The first ``limit`` questions of each question type (``meta["type"]``), in file order.

        A small sample that keeps every type when a file lists its questions type by type
        (GraphRAG-Bench medical: 879 fact-retrieval questions come first).
        """
        if limit is None:
            return self
        if limit <= 0:
            raise ConfigError(f"--limit-per-type must be a positive number of questions, got {limit}")
        seen: dict[str, int] = {}
        kept = []
        for q in self.questions:
            kind = str(q.meta.get("type") or "")
            if seen.get(kind, 0) < limit:
                seen[kind] = seen.get(kind, 0) + 1
                kept.append(q)
        return replace(self, questions=kept)

    def restricted(self) -> Dataset:
        """Keep only the passages shipped with the current questions (their ``context_keys``).

        A small, fast corpus for smoke tests and CI; the default everywhere else is
        the full corpus.
        """
        keep: set[str] = set()
        for q in self.questions:
            keep.update(q.context_keys)
        if not keep:
            raise ConfigError(
                f"data set {self.name!r} has no per-question passages, so the corpus cannot be "
                "restricted to the questions' own passages; use the full corpus"
            )
        passages = [p for p in self.passages if p.key in keep]
        return replace(self, name=f"{self.name}-own", passages=passages)

    def shuffled(self, seed: int | None) -> Dataset:
        """The corpus in a random order (``seed``), questions unchanged; None keeps the order.

        Benchmark corpora list each question's passages together, so anything that links
        neighbouring passages (adjacency edges, a summary tree over consecutive chunks) can
        score from the order alone; a shuffled corpus shows whether a figure depends on it.
        The corpus fingerprint hashes the order, so a shuffled corpus gets its own index.
        """
        if seed is None:
            return self
        order = np.random.default_rng(seed).permutation(len(self.passages))
        meta = {**self.meta, "shuffle_corpus": seed}
        return replace(self, passages=[self.passages[int(i)] for i in order], meta=meta)


def unique_passages(passages: Iterable[Passage]) -> list[Passage]:
    """Drop repeated keys, keeping the first occurrence."""
    seen: set[str] = set()
    out: list[Passage] = []
    for p in passages:
        if p.key not in seen:
            seen.add(p.key)
            out.append(p)
    return out


class KeyResolver:
    """Maps a question's own (title, text) paragraphs to corpus passage keys.

    Exact (title, text) match first; else the corpus passage with the same title
    when that title is unique in the corpus (the corpus builders dropped a few
    re-crawled variants of the same page); else the whitespace-normalized text.
    """

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._keys = {p.key for p in passages}
        by_title: dict[str, list[str]] = {}
        self._by_text: dict[str, str] = {}
        for p in passages:
            by_title.setdefault(p.title, []).append(p.key)
            self._by_text.setdefault(" ".join(p.text.split()), p.key)
        self._by_title = {t: ks[0] for t, ks in by_title.items() if len(ks) == 1}

    def resolve(self, title: str, text: str) -> str | None:
        key = doc_id_for(title, text)
        if key in self._keys:
            return key
        if title in self._by_title:
            return self._by_title[title]
        return self._by_text.get(" ".join(text.split()))


__all__ = ["Dataset", "KeyResolver", "Passage", "Question", "doc_id_for", "unique_passages"]
