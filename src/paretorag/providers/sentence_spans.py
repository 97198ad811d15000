"""Named entities and date/number spans of sentences, for the offline reader.

The small English spaCy model (``en_core_web_sm`` 3.8.0, from the PyPI package the
entity graph uses) runs its entity recogniser only: it has its own embedding layer, so
the shared ``tok2vec``, the tagger and the parser are disabled for these calls. On 300
HotpotQA passages that halves the time (3.9 s to 2.0 s) and gives the same entities. The
model object is the one that parses the question for the retrieval operators, so a query
loads spaCy once (1,183 HotpotQA sentences: the same entities as a model loaded with the
recogniser alone). Sentences come from
:func:`paretorag.textutil.reading_sentences`, so a sentence is the unit quoted as
evidence. Parses are memoized per sentence (an LRU of 20,000), because the same
passages come back for many questions. The index stores the spans of every chunk's
first sentences (:mod:`paretorag.graphs.reader_spans`, computed by :func:`parse`, the same
function), so a query on long chunks runs no entity recogniser for them (``known``).

Dates and numbers are also matched by patterns (:data:`DATE`), since the statistical
model misses some ("15 April 1899" inside a parenthesis, "c. 1127").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MissingDependencyError
from .nlp import MODEL, load_spacy

if TYPE_CHECKING:
    from spacy.language import Language

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTH}\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{3,4}}|{_MONTH}\s+\d{{3,4}}|"
    r"(?:1[0-9]{3}|20[0-9]{2}|[1-9][0-9]{2})(?:s)?)\b"
)
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2}|[1-9][0-9]{2})\b")

# spaCy labels grouped into the reader's answer types (question.TYPES)
LABEL_TYPE = {
    "PERSON": "person",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "DATE": "date",
    "TIME": "date",
    "CARDINAL": "number",
    "QUANTITY": "number",
    "MONEY": "number",
    "PERCENT": "number",
    "ORDINAL": "number",
    "ORG": "org",
    "NORP": "norp",
    "LANGUAGE": "norp",
    "WORK_OF_ART": "phrase",
    "EVENT": "phrase",
    "PRODUCT": "phrase",
    "LAW": "phrase",
}

_LOCK = threading.Lock()
NOT_NER = ("tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer")
_CACHE: OrderedDict[str, tuple[Span, ...]] = OrderedDict()
_CACHE_SIZE = 20_000


@dataclass(frozen=True)
class Span:
    """A typed span of a sentence: ``text``, reader type, character offsets, spaCy label."""

    text: str
    kind: str
    start: int
    end: int
    label: str


_NLP: list[Language] = []
_NLP_LOCK = threading.Lock()


def pipeline() -> Language:
    """spaCy's entity recogniser alone (its other components left out: the recogniser reads
    the tokens, not their tags), loaded once per process; its weights are those of every
    other spaCy pipeline here (:func:`paretorag.providers.nlp.load_spacy`), the question's
    parse included. A pipeline of its own, not the parser's with components switched off
    for each call, which would switch them off for a thread parsing a question meanwhile."""
    with _NLP_LOCK:
        if not _NLP:
            try:
                _NLP.append(load_spacy("the reader", MODEL, exclude=NOT_NER))
            except MissingDependencyError as exc:
                raise MissingDependencyError(f"the reader needs spaCy and its English model: {exc}") from exc
        return _NLP[0]


def _pattern_spans(sentence: str, taken: list[tuple[int, int]]) -> list[Span]:
    out = []
    for m in DATE.finditer(sentence):
        if not any(a <= m.start() < b or a < m.end() <= b for a, b in taken):
            out.append(Span(m.group(0), "date", m.start(), m.end(), "DATE"))
    return out


def parse(sentences: list[str], *, batch_size: int = 64) -> list[tuple[Span, ...]]:
    """The typed spans of each sentence, computed (no memo): entities, then pattern dates
    the model missed, in order of their start."""
    if not sentences:
        return []
    nlp = pipeline()
    out = []
    for sentence, doc in zip(sentences, nlp.pipe(sentences, batch_size=batch_size), strict=True):
        found = [
            Span(e.text, LABEL_TYPE[e.label_], e.start_char, e.end_char, e.label_)
            for e in doc.ents
            if e.label_ in LABEL_TYPE
        ]
        found += _pattern_spans(sentence, [(s.start, s.end) for s in found])
        out.append(tuple(sorted(found, key=lambda s: s.start)))
    return out


def spans(
    sentences: list[str], known: Sequence[tuple[Span, ...] | None] | None = None
) -> list[tuple[Span, ...]]:
    """The typed spans of each sentence (entities, then pattern dates the model missed).

    ``known``, when given, holds each sentence's spans already computed by :func:`parse`
    (stored in the index) or None: only the others are looked up in the memo or parsed.
    """
    out: list[tuple[Span, ...] | None] = list(known) if known is not None else [None] * len(sentences)
    todo: list[int] = []
    with _LOCK:
        for i, s in enumerate(sentences):
            if out[i] is not None:
                continue
            hit = _CACHE.get(s)
            if hit is not None:
                _CACHE.move_to_end(s)
                out[i] = hit
            else:
                todo.append(i)
    if todo:
        found = parse([sentences[i] for i in todo])
        with _LOCK:
            for i, value in zip(todo, found, strict=True):
                _CACHE[sentences[i]] = value
                out[i] = value
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return [o or () for o in out]


def question_entities(question: str) -> tuple[str, ...]:
    """The question's named entities (not dates or numbers)."""
    (found,) = spans([question])
    return tuple(s.text for s in found if s.kind not in ("date", "number"))


__all__ = ["DATE", "LABEL_TYPE", "YEAR", "Span", "parse", "pipeline", "question_entities", "spans"]
