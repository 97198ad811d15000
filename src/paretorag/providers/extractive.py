"""The ``extractive`` backend: summaries and answers without a generative model.

Summaries are the most central sentences (degree centrality over TF-IDF cosine, as in
LexRank). Answers are the one to three evidence sentences that best answer the
question, each cited as ``[n]`` (the passage it comes from). A sentence's score adds:

- its similarity to the question under the index's embedder (cosine of MiniLM vectors
  by default; the vectors are cached in the index like the chunk vectors);
- its coverage of the question's terms, each term weighted by its inverse document
  frequency over the candidate sentences (BM25's IDF), so that the rare words of the
  question ("Tr'en", "1889") count more than the common ones;
- the rank of its passage (``1 / rank``): the retriever's order is evidence too;
- a small bonus when it holds the kind of answer asked for: a year for "when", a
  number for "how many", a name for "who" / "where" (:func:`type_match`).

Without an embedder (``ExtractiveLLM()`` on its own) the first term is left out.
Candidates are whole sentences from :func:`paretorag.textutil.reading_sentences`
(no line-break debris, quotations kept whole); headings and other fragments of
fewer than ``min_words`` words are not candidates.

One module (over 400 lines) because summaries and answers share the sentence scoring; the
backend is one class with its helpers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from ..textutil import CONTENT_STOPWORDS, reading_sentences, split_sentences
from .base import Completion, Embedder, Request, Task, Tokenizer
from .counting import record

_TOKEN = re.compile(r"[a-z0-9]+")
NO_ANSWER = "The context does not contain an answer."
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_NUMBER = re.compile(
    r"\b\d+(?:[.,]\d+)*\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"twenty|thirty|forty|fifty|hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)
_CAPITALIZED = re.compile(r"\b[A-Z][\w'\u2019-]*")
_QUESTION_TYPES = (
    ("date", re.compile(r"\b(?:when|what year|which year|what date|what century)\b", re.IGNORECASE)),
    ("number", re.compile(r"\bhow (?:many|much|long|old|far|tall|big)\b", re.IGNORECASE)),
    ("name", re.compile(r"\b(?:who|whom|whose|where)\b", re.IGNORECASE)),
)


def _terms(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in CONTENT_STOPWORDS]


def _stem(term: str) -> str:
    """A crude plural stem ("films" -> "film"), enough to match question and sentence."""
    return term[:-1] if len(term) > 3 and term.endswith("s") and not term.endswith("ss") else term


def content_terms(text: str) -> set[str]:
    """The stemmed content words of ``text`` (no stopwords, no single letters)."""
    return {_stem(t) for t in _terms(text) if len(t) > 1 or t.isdigit()}


def _tfidf(docs: Sequence[str]) -> np.ndarray:
    """L2-normalized TF-IDF rows for a handful of sentences (vocabulary of the batch)."""
    vocab: dict[str, int] = {}
    rows = [[vocab.setdefault(t, len(vocab)) for t in _terms(d)] for d in docs]
    mat = np.zeros((len(docs), max(len(vocab), 1)), dtype=np.float32)
    for i, ids in enumerate(rows):
        for j in ids:
            mat[i, j] += 1.0
    df = (mat > 0).sum(axis=0)
    mat *= np.log((1 + len(docs)) / (1 + df)) + 1.0
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return mat / norms


def term_overlap(question: str, sentences: Sequence[str]) -> npt.NDArray[np.float64]:
    """IDF-weighted share of the question's terms that each sentence contains, in [0, 1].

    The IDF is BM25's, ``log(1 + (N - df + 0.5) / (df + 0.5))``, over the ``N``
    candidate sentences: a term found in every candidate tells them apart the least.
    """
    q = sorted(content_terms(question))
    if not q or not sentences:
        return np.zeros(len(sentences))
    terms = [content_terms(s) for s in sentences]
    has = np.array([[t in s for t in q] for s in terms], dtype=np.float64)
    df = has.sum(axis=0)
    idf = np.log1p((len(sentences) - df + 0.5) / (df + 0.5))
    return (has @ idf) / float(idf.sum())


def answer_type(question: str) -> str:
    """The kind of answer a question asks for: ``date``, ``number``, ``name`` or ``""``.

    "When ...", "what year ..." ask for a date; "how many / much / long / old ..." for a
    number; "who ...", "where ..." for a name (a person, a place).
    """
    for kind, pattern in _QUESTION_TYPES:
        if pattern.search(question):
            return kind
    return ""


def type_match(question: str, sentences: Sequence[str]) -> npt.NDArray[np.float64]:
    """1 for a sentence holding what the question asks for (:func:`answer_type`), else 0.

    A date is a year; a number, digits or a number word; a name, a capitalized word
    after the sentence's first that the question does not contain.
    """
    kind = answer_type(question)
    if kind == "date":
        return np.array([float(bool(_YEAR.search(s))) for s in sentences])
    if kind == "number":
        return np.array([float(bool(_NUMBER.search(s))) for s in sentences])
    if kind == "name":
        asked = {w.lower() for w in _CAPITALIZED.findall(question)}
        return np.array(
            [float(any(w.lower() not in asked for w in _CAPITALIZED.findall(s)[1:])) for s in sentences]
        )
    return np.zeros(len(sentences))


@dataclass(frozen=True)
class Candidates:
    """The candidate sentences of an answer and what they are scored by."""

    sentences: list[str]
    passage: npt.NDArray[np.int64]  # 1-based number of the passage ([n])
    position: npt.NDArray[np.int64]  # 0-based position of the sentence in its passage
    dense: npt.NDArray[np.float64]  # cosine to the question (zeros without an embedder)
    terms: npt.NDArray[np.float64]  # term_overlap
    kind: npt.NDArray[np.float64]  # type_match


def candidates(
    question: str, texts: Sequence[str], embedder: Embedder | None = None, *, min_words: int = 4
) -> Candidates:
    """Whole sentences of the numbered ``texts`` with their features."""
    sents: list[str] = []
    passage: list[int] = []
    position: list[int] = []
    for n, text in enumerate(texts, start=1):
        for i, s in enumerate(reading_sentences(text)):
            if len(s.split()) >= min_words and any(c.islower() for c in s):
                sents.append(s)
                passage.append(n)
                position.append(i)
    dense = np.zeros(len(sents))
    if embedder is not None and sents:
        vecs = np.asarray(embedder.embed([question, *sents]), dtype=np.float64)
        dense = vecs[1:] @ vecs[0]
    return Candidates(
        sents,
        np.array(passage, dtype=np.int64),
        np.array(position, dtype=np.int64),
        dense,
        term_overlap(question, sents),
        type_match(question, sents),
    )


class ExtractiveLLM:
    """An LLM-free backend that extracts instead of generating.

    Parameters
    ----------
    summary_ratio : float
        Summary length as a fraction of the input words (at least one sentence).
    max_summary_words : int
        Upper bound on a summary's length.
    answer_sentences : int
        At most this many evidence sentences in an answer (the best one always).
    keep_ratio : float
        A further sentence is kept only when its score is at least this share of the best.
    dense_weight, term_weight, rank_weight, type_weight : float
        Weights of the question similarity, the IDF-weighted term overlap, the
        passage's ``1 / rank`` and the answer-type match (:func:`type_match`) in a
        sentence's score.
    min_words : int
        Shorter sentences (headings, "By", "THE END") are not candidates.
    embedder : Embedder, optional
        Scores question similarity; an index binds its own (:meth:`bind`).
    tokenizer : Tokenizer, optional
        Counts the answer's tokens against ``Request.max_tokens`` (default: words).
    """

    name = "extractive"
    generative = False  # cannot follow instructions: agent operators refuse it
    version = 2  # of the answer selection; part of the identity, so cached answers renew

    def __init__(
        self,
        *,
        summary_ratio: float = 0.2,
        max_summary_words: int = 200,
        answer_sentences: int = 3,
        keep_ratio: float = 0.8,
        dense_weight: float = 1.0,
        term_weight: float = 0.5,
        rank_weight: float = 0.1,
        type_weight: float = 0.2,
        min_words: int = 4,
        embedder: Embedder | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if answer_sentences < 1:
            raise ConfigError(f"answer_sentences must be at least 1, got {answer_sentences}")
        if not 0.0 <= keep_ratio <= 1.0:
            raise ConfigError(f"keep_ratio must be in [0, 1], got {keep_ratio}")
        self.summary_ratio = summary_ratio
        self.max_summary_words = max_summary_words
        self.answer_sentences = answer_sentences
        self.keep_ratio = keep_ratio
        self.dense_weight = dense_weight
        self.term_weight = term_weight
        self.rank_weight = rank_weight
        self.type_weight = type_weight
        self.min_words = min_words
        self.embedder = embedder
        self.tokenizer = tokenizer

    def bind(self, embedder: Embedder, tokenizer: Tokenizer) -> None:
        """Use an index's embedder and tokenizer where none was given."""
        if self.embedder is None:
            self.embedder = embedder
        if self.tokenizer is None:
            self.tokenizer = tokenizer

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "backend": "extractive",
            "version": self.version,
            "summary_ratio": self.summary_ratio,
            "max_summary_words": self.max_summary_words,
            "answer_sentences": self.answer_sentences,
            "keep_ratio": self.keep_ratio,
            "weights": [self.dense_weight, self.term_weight, self.rank_weight, self.type_weight],
            "min_words": self.min_words,
            "embedder": getattr(self.embedder, "name", None),
        }

    def complete(self, request: Request) -> Completion:
        """A summary or an answer; no model runs, so it costs 0 LLM tokens (the sentences it
        scores are counted apart, as ``sentences_scored``, during a build)."""
        task = request.task
        if task.kind == "summarize":
            return Completion(self._summarize(task), 0, 0)
        if task.kind == "answer":
            return Completion(self._answer(task, request.max_tokens), 0, 0)
        raise ConfigError(
            "the extractive backend can only summarize and answer (Task kind 'summarize' or 'answer'); "
            "configure a generative LLM (--llm openai:MODEL or llamacpp:GGUF) for other prompts"
        )

    def _summarize(self, task: Task) -> str:
        sents = [s for t in task.texts for s in split_sentences(t)]
        if not sents:
            return ""
        record("sentences_scored", len(sents))
        words = sum(len(s.split()) for s in sents)
        budget = task.max_words or min(self.max_summary_words, max(1, int(words * self.summary_ratio)))
        sim = _tfidf(sents)
        centrality = (sim @ sim.T).sum(axis=1)
        chosen: list[int] = []
        used = 0
        for i in np.argsort(-centrality, kind="stable"):
            n = len(sents[i].split())
            if chosen and used + n > budget:
                continue
            chosen.append(int(i))
            used += n
            if used >= budget:
                break
        return " ".join(sents[i] for i in sorted(chosen))

    def scores(self, cands: Candidates) -> npt.NDArray[np.float64]:
        """Each candidate's score (higher is better)."""
        return (
            self.dense_weight * cands.dense
            + self.term_weight * cands.terms
            + self.rank_weight / cands.passage.astype(np.float64)
            + self.type_weight * cands.kind
        )

    def _count(self, text: str) -> int:
        return self.tokenizer.count([text])[0] if self.tokenizer is not None else len(text.split())

    def _answer(self, task: Task, max_tokens: int) -> str:
        if not content_terms(task.question):
            return NO_ANSWER
        cands = candidates(task.question, task.texts, self.embedder, min_words=self.min_words)
        if not cands.sentences:
            return NO_ANSWER
        record("sentences_scored", len(cands.sentences))
        scores = self.scores(cands)
        best = float(scores.max())
        parts: list[str] = []
        said: set[str] = set()
        used = 0
        for i in np.argsort(-scores, kind="stable"):
            if len(parts) == self.answer_sentences or (parts and scores[i] < self.keep_ratio * best):
                break
            key = " ".join(cands.sentences[i].lower().split())
            if key in said:  # the same sentence from an overlapping chunk: cite it once
                continue
            said.add(key)
            part = f"{cands.sentences[i]} [{cands.passage[i]}]"
            n = self._count(part) + (1 if parts else 0)
            if used + n > max_tokens:
                if not parts:  # the best sentence alone is too long: cut it at a word boundary
                    parts.append(_cut_to(part, max_tokens, self._count))
                break
            parts.append(part)
            used += n
        return " ".join(parts)


def _cut_to(part: str, max_tokens: int, count: Any) -> str:
    """``part`` (a sentence and its ``[n]``) cut at a word boundary to ``max_tokens``."""
    body, _, marker = part.rpartition(" ")
    words = body.split()
    lo, hi = 0, len(words)
    while lo < hi:  # the most words that fit with " … [n]"
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + f" … {marker}") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return (" ".join(words[:lo]) + f" … {marker}").strip()
