"""Answer candidates from the top passages, and the features the ranker scores them by.

Candidates (the reader's second stage) are the typed spans of every sentence of the
passages (:mod:`paretorag.answering.reader.spans`: named entities, dates, numbers), the passage
titles (a bridge question's answer is often the page a passage is about), and copular
complements ("X is an American *film director*"). Each carries the sentence and
passage it comes from; the same answer found in several places is one candidate with
all its occurrences.

Features (the third stage; :data:`FEATURES` names the columns): the expected type
against the candidate's type; its sentence's IDF-weighted coverage of the question's
terms; how much of the question's *relation* terms ("father", "born", "director") its
sentence holds (Porter stems, a few synonyms: "died" for "death") and how close they
stand to it in tokens; whether it is already in the question; whether its passage is a
second hop (named by a passage about a question entity) and whether it is itself the
title of another passage (a bridge, rarely the final answer); how many passages support
it; its passage's retrieval rank; its position. The similarity of the sentence to the
question under the embedder is not a feature: on the held-out training questions it
added nothing to the ranker (top-1 of answerable questions 31.6% without it, 30.7% with
it), and leaving it out saves embedding every sentence of every answer.

One module (over 400 lines) because the candidates and their features are one contract:
the ranker's feature list must match what this module computes, name for name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...providers.base import Embedder
from ...providers.extractive import content_terms, term_overlap
from ...textutil import reading_sentences, stem
from .question import QuestionInfo
from .spans import Span, spans

# word tables as data (data/reader/tables.json): demonyms, countries, relation synonyms
_TABLES = json.loads(
    (resources.files("paretorag") / "data" / "reader" / "tables.json").read_text(encoding="utf-8")
)

if TYPE_CHECKING:
    from .stored import StoredSpans

CTYPES = ("person", "place", "date", "number", "org", "norp", "description", "phrase", "title")
QTYPES = ("person", "place", "date", "number", "org", "norp", "description", "phrase")
# the candidate types an expected answer type admits (all of them when none of these is found)
ADMITS: dict[str, frozenset[str]] = {
    "date": frozenset({"date"}),
    "number": frozenset({"number"}),
    "person": frozenset({"person", "title"}),
    "place": frozenset({"place", "org", "title"}),
    "org": frozenset({"org", "place", "title"}),
    "norp": frozenset({"norp", "place"}),
    "description": frozenset({"description"}),
}
# nationality adjectives and the country each names (for "the same country" and descriptions)
DEMONYMS: dict[str, str] = dict(_TABLES["demonyms"])
# countries and a few large regions: a city question rarely wants one of these
_COUNTRY_NAMES: tuple[str, ...] = tuple(_TABLES["countries"])
COUNTRIES = frozenset(DEMONYMS.values()) | frozenset(_COUNTRY_NAMES)
_COUNTRY_Q = re.compile(r"\b(?:country|nation|nationality)\b", re.IGNORECASE)
_CITY = re.compile(r"\b(?:city|town|village|birthplace|municipality)\b", re.IGNORECASE)
_MODIFIER = re.compile(r"^(?:[A-Z]\S*|\S+-born|\d\S*)$")
_WORD = re.compile(r"[\w'\u2019-]+")
_COPULA = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the)\s+((?:[\w-]+\s+){0,4}?[\w-]+?)"
    r"(?=\s*(?:[,.;()]|\swho\b|\sthat\b|\swhich\b|\sfrom\b|\sin\b|\sof\b|\sand\b|\sbased\b|\sborn\b|$))"
)
_COMPATIBLE = {
    ("place", "org"),
    ("org", "place"),
    ("phrase", "org"),
    ("phrase", "title"),
    ("person", "title"),
}


@dataclass(frozen=True)
class Passage:
    """A numbered passage the reader reads: ``[n]``, its title, text and retrieval score."""

    n: int
    title: str
    text: str
    score: float = 0.0
    row: int = -1  # chunk row in the index, when known


@dataclass
class Occurrence:
    span: Span
    passage: int  # index into the passage list (0-based)
    sentence: int  # index into the flat sentence list


@dataclass
class Candidate:
    """One answer (normalized key) with every place it occurs."""

    text: str
    kind: str
    occurrences: list[Occurrence] = field(default_factory=list)


@dataclass
class Reading:
    """Sentences of the passages and their question features (shared by every stage)."""

    passages: list[Passage]
    sentences: list[str]
    sent_passage: npt.NDArray[np.int64]  # 0-based passage index of each sentence
    sent_position: npt.NDArray[np.int64]  # position of the sentence in its passage
    sent_spans: list[tuple[Span, ...]]
    dense: npt.NDArray[np.float64]
    terms: npt.NDArray[np.float64]
    relation: npt.NDArray[np.float64]
    question: QuestionInfo | None = None
    embedder: Embedder | None = None
    lookup: Callable[[str], Passage | None] | None = None  # a passage by its title, from the index
    max_sentences: int = 12
    stored: StoredSpans | None = None  # the index's sentences and spans per chunk

    @property
    def relevance(self) -> npt.NDArray[np.float64]:
        """How well each sentence matches the question: similarity + term coverage + half the relation coverage."""
        return self.dense + self.terms + 0.5 * self.relation

    def best_occurrence(
        self, cand: Candidate, relevance: npt.NDArray[np.float64] | None = None
    ) -> Occurrence:
        """The occurrence whose sentence best matches the question (:attr:`relevance`, pass it when
        scoring many candidates): it stands for the candidate."""
        rel = self.relevance if relevance is None else relevance
        return max(cand.occurrences, key=lambda o: rel[o.sentence])

    def extend(self, passage: Passage) -> int:
        """Add a passage (fetched by :attr:`lookup`) and return its index."""
        more = read_passages(
            self.question or QuestionInfo("", "other", "phrase"),
            [passage],
            self.embedder,
            max_sentences=self.max_sentences,
            stored=self.stored,
        )
        pi = len(self.passages)
        self.passages.append(Passage(pi + 1, passage.title, passage.text, passage.score, passage.row))
        self.sentences.extend(more.sentences)
        self.sent_passage = np.concatenate([self.sent_passage, more.sent_passage + pi])
        self.sent_position = np.concatenate([self.sent_position, more.sent_position])
        self.sent_spans.extend(more.sent_spans)
        self.dense = np.concatenate([self.dense, more.dense])
        self.terms = np.concatenate([self.terms, more.terms])
        self.relation = np.concatenate([self.relation, more.relation])
        return pi


def key(text: str) -> str:
    """The comparison key of an answer: lower case, words only, no leading article."""
    words = [re.sub(r"['\u2019]s$", "", w.lower()) for w in _WORD.findall(text)]
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


_SYNONYMS: dict[str, tuple[str, ...]] = {
    key: tuple(values) for key, values in _TABLES["relation_synonyms"].items()
}


@lru_cache(maxsize=4096)
def relation_stems(term: str) -> frozenset[str]:
    """The stems a question's relation term matches in a sentence ("died" for "death")."""
    st = stem(term)
    return frozenset({st, *_SYNONYMS.get(st, ()), *_SYNONYMS.get(term, ())})


def _stem_match(term: str, words: set[str]) -> bool:
    """Whether ``term`` (or a stem it stands for) occurs among the stemmed ``words``."""
    return bool(relation_stems(term) & words)


def relation_coverage(relation: frozenset[str], sentences: Sequence[str]) -> npt.NDArray[np.float64]:
    """Share of the question's relation terms each sentence holds (stems, with a few synonyms)."""
    if not relation:
        return np.zeros(len(sentences))
    out = np.zeros(len(sentences))
    for i, s in enumerate(sentences):
        words = {stem(w) for w in _tokens(s)}
        out[i] = sum(_stem_match(t, words) for t in relation) / len(relation)
    return out


def read_passages(
    info: QuestionInfo,
    passages: Sequence[Passage],
    embedder: Embedder | None,
    *,
    max_sentences: int = 12,
    lookup: Callable[[str], Passage | None] | None = None,
    stored: StoredSpans | None = None,
) -> Reading:
    """Split the passages into sentences, find their spans and score them against the question.

    ``stored``: the index's sentences and spans of its chunks, used for the passages that
    are whole chunks (the same values, without splitting or parsing them again).
    """
    sents: list[str] = []
    known: list[tuple[Span, ...] | None] = []
    sp: list[int] = []
    pos: list[int] = []
    for pi, p in enumerate(passages):
        hit = stored.lookup(p.row, p.text, max_sentences) if stored is not None else None
        if hit is None:
            found = reading_sentences(p.text)[:max_sentences]
            parsed: Sequence[tuple[Span, ...] | None] = [None] * len(found)
        else:
            found, parsed = hit
        for i, (s, parse) in enumerate(zip(found, parsed, strict=True)):
            if any(c.isalnum() for c in s):
                sents.append(s)
                known.append(parse)
                sp.append(pi)
                pos.append(i)
    dense = np.zeros(len(sents))
    if embedder is not None and sents:
        vecs = np.asarray(embedder.embed([info.text, *sents]), dtype=np.float64)
        dense = vecs[1:] @ vecs[0]
    return Reading(
        list(passages),
        sents,
        np.array(sp, dtype=np.int64),
        np.array(pos, dtype=np.int64),
        spans(sents, known) if sents else [],
        dense,
        term_overlap(info.text, sents) if sents else np.zeros(0),
        relation_coverage(info.relation_terms, sents),
        info,
        embedder,
        lookup,
        max_sentences,
        stored,
    )


def description(phrase: str) -> str:
    """The common-noun part of a copular complement ("English Conservative Party politician" ->
    "politician"): leading names, nationalities and "-born" words dropped; "" when none is left."""
    words = phrase.split()
    lead = 0
    while lead < len(words) - 1 and (_MODIFIER.match(words[lead]) or words[lead].lower() in DEMONYMS):
        lead += 1
    desc = " ".join(words[lead:])
    return desc if desc and not desc[0].isupper() else ""


def copulas(sentence: str) -> list[tuple[str, int]]:
    """The copular complements of a sentence ("X is an *American actor*") and where they start."""
    return [(m.group(1), m.start(1)) for m in _COPULA.finditer(sentence)]


def gather(reading: Reading) -> list[Candidate]:
    """Every candidate of the passages: typed spans, passage titles, copular complements."""
    found: dict[str, Candidate] = {}

    def add(text: str, kind: str, occ: Occurrence) -> None:
        k = key(text)
        if not k or len(k) > 80:
            return
        cand = found.get(k)
        if cand is None:
            cand = found[k] = Candidate(text.strip(" ,;:"), kind, [])
        cand.occurrences.append(occ)

    first_sentence: dict[int, int] = {}
    for si, (sent, sps) in enumerate(zip(reading.sentences, reading.sent_spans, strict=True)):
        pi = int(reading.sent_passage[si])
        first_sentence.setdefault(pi, si)
        for s in sps:
            add(s.text, s.kind, Occurrence(s, pi, si))
        for m in _COPULA.finditer(sent):
            phrase = m.group(1)
            words = phrase.split()
            if len(words) > 5 or phrase[0].isdigit():
                continue
            # its common-noun part without names and nationalities ("American talent manager"
            # -> "talent manager"): a description (an occupation, a genre)
            desc = description(phrase)
            if desc:
                at = m.start(1) + phrase.rfind(desc)
                add(
                    desc,
                    "description",
                    Occurrence(Span(desc, "description", at, at + len(desc), "COPULA"), pi, si),
                )
            # the complement and each shorter tail ("English Conservative Party politician",
            # ..., "politician"): the answer is often the head without its modifiers
            for i in range(len(words)):
                tail = " ".join(words[i:])
                start = m.start(1) + phrase.find(tail, sum(len(w) + 1 for w in words[:i]) - 1 if i else 0)
                add(
                    tail,
                    "phrase",
                    Occurrence(Span(tail, "phrase", start, start + len(tail), "COPULA"), pi, si),
                )
    for pi, p in enumerate(reading.passages):
        if p.title and pi in first_sentence and not file_like(p.title):
            si = first_sentence[pi]
            sent = reading.sentences[si]
            at = sent.lower().find(p.title.lower())
            start = max(at, 0)
            add(
                p.title,
                "title",
                Occurrence(Span(p.title, "title", start, start + len(p.title), "TITLE"), pi, si),
            )
    return list(found.values())


def file_like(title: str) -> bool:
    """A title that is a file's name, not a page's ("captain_chaos", "reader", "notes.md"): no
    capital letter anywhere. A user's file name is never the answer to a question about it."""
    return not any(c.isupper() for c in title)


def admitted(expected: str, cands: list[Candidate]) -> list[Candidate]:
    """The candidates of the types the expected answer type admits (:data:`ADMITS`); all when none is."""
    kinds = ADMITS.get(expected)
    if kinds is None:
        return cands
    kept = [c for c in cands if c.kind in kinds]
    return kept or cands


FEATURES: tuple[str, ...] = (
    *(f"q_{t}" for t in QTYPES),
    *(f"c_{t}" for t in CTYPES),
    "type_match",
    "type_compatible",
    "terms",
    "terms_rank",
    "relation",
    "relation_near",
    "qterms_near",
    "distance",
    "in_question",
    "in_question_entity",
    "n_passages",
    "n_mentions",
    "passage_rank",
    "sentence_position",
    "char_position",
    "title_in_question",
    "second_hop",
    "bridge",
    "q_relation_terms",
    "q_words",
    "q_city",
    "q_country",
    "c_country",
    "place_first",
    "in_parentheses",
    "is_title",
    "n_words",
    "has_digit",
)
_F = {name: i for i, name in enumerate(FEATURES)}


def _tokens(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _stems_of(terms: frozenset[str]) -> frozenset[str]:
    """Every stem the question's terms match in a sentence (:func:`relation_stems`)."""
    out: set[str] = set()
    for t in terms:
        out |= relation_stems(t)
    return frozenset(out)


def _near(sentence: str, span: Span, wanted: frozenset[str], window: int = 6) -> tuple[int, int]:
    """Stems of ``wanted`` within ``window`` tokens of the span, and the distance to the nearest one."""
    if not wanted:
        return 0, 99
    left = _tokens(sentence[: span.start])
    right = _tokens(sentence[span.end :])
    hits = 0
    best = 99
    for side in (reversed(left), right):
        for d, w in enumerate(side, start=1):
            if d > 30:
                break
            if stem(w) in wanted:
                best = min(best, d)
                hits += d <= window
    return hits, best


def _rank_desc(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1-based rank of each value, highest first."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    return ranks


def features(info: QuestionInfo, reading: Reading, cands: list[Candidate]) -> npt.NDArray[np.float32]:
    """The feature matrix of ``cands`` (rows) over :data:`FEATURES` (columns)."""
    x = np.zeros((len(cands), len(FEATURES)), dtype=np.float32)
    if not cands:
        return x
    terms_rank = _rank_desc(reading.terms)
    relevance = reading.relevance
    q_terms = frozenset(info.terms)
    q_stems = _stems_of(q_terms)
    rel_stems = _stems_of(frozenset(info.relation_terms))
    q_key = " " + key(info.text) + " "
    ent_keys = [key(e) for e in info.entities]
    title_in_q = [bool(p.title) and f" {key(p.title)} " in q_key for p in reading.passages]
    title_keys = [key(p.title) for p in reading.passages]
    # a passage whose title a question-entity passage names is a second hop (the father's page)
    anchor_text = " ".join(key(p.text) for p, inq in zip(reading.passages, title_in_q, strict=True) if inq)
    second_hop = [
        bool(t) and not inq and f" {t} " in f" {anchor_text} "
        for t, inq in zip(title_keys, title_in_q, strict=True)
    ]
    exp = info.expected if info.expected in QTYPES else "phrase"
    q_city = float(bool(_CITY.search(info.text)))
    q_country = float(bool(_COUNTRY_Q.search(info.text)))
    # how complex the question is: a second-hop passage helps a multi-hop question only
    q_relations = float(len(info.relation_terms))
    q_words = float(len(info.text.split()))
    for r, c in enumerate(cands):
        row = x[r]
        row[_F[f"q_{exp}"]] = 1.0
        row[_F[f"c_{c.kind}"]] = 1.0
        row[_F["type_match"]] = float(c.kind == exp)
        row[_F["type_compatible"]] = float((exp, c.kind) in _COMPATIBLE)
        best = reading.best_occurrence(c, relevance)
        si, pi = best.sentence, best.passage
        sent = reading.sentences[si]
        row[_F["terms"]] = reading.terms[si]
        row[_F["terms_rank"]] = terms_rank[si]
        row[_F["relation"]] = reading.relation[si]
        rel_hits, dist = _near(sent, best.span, rel_stems)
        q_hits, q_dist = _near(sent, best.span, q_stems)
        row[_F["relation_near"]] = rel_hits
        row[_F["qterms_near"]] = q_hits
        row[_F["distance"]] = min(dist, q_dist)
        ck = key(c.text)
        words = content_terms(c.text)
        row[_F["in_question"]] = len(words & q_terms) / len(words) if words else 0.0
        row[_F["in_question_entity"]] = float(
            f" {ck} " in q_key or any(ck in e or e in ck for e in ent_keys if e)
        )
        row[_F["n_passages"]] = len({o.passage for o in c.occurrences})
        row[_F["n_mentions"]] = len(c.occurrences)
        row[_F["passage_rank"]] = min(o.passage for o in c.occurrences) + 1
        row[_F["sentence_position"]] = reading.sent_position[si]
        row[_F["char_position"]] = best.span.start / max(len(sent), 1)
        row[_F["title_in_question"]] = float(title_in_q[pi])
        row[_F["second_hop"]] = float(any(second_hop[o.passage] for o in c.occurrences))
        # the candidate names another retrieved passage: a bridge entity, rarely the final answer
        row[_F["bridge"]] = float(any(ck == t for j, t in enumerate(title_keys) if j != pi))
        row[_F["q_relation_terms"]] = q_relations
        row[_F["q_words"]] = q_words
        row[_F["q_city"]] = q_city
        row[_F["q_country"]] = q_country
        row[_F["c_country"]] = float(ck in COUNTRIES)
        after = sent[best.span.end : best.span.end + 3]
        row[_F["place_first"]] = float(
            c.kind == "place"
            and after.startswith(",")
            and any(sp.kind == "place" and 0 < sp.start - best.span.end <= 3 for sp in reading.sent_spans[si])
        )
        before = sent[: best.span.start]
        row[_F["in_parentheses"]] = float(before.count("(") > before.count(")"))
        row[_F["is_title"]] = float(c.kind == "title")
        row[_F["n_words"]] = len(c.text.split())
        row[_F["has_digit"]] = float(any(ch.isdigit() for ch in c.text))
    return x


__all__ = [
    "ADMITS",
    "CTYPES",
    "DEMONYMS",
    "FEATURES",
    "QTYPES",
    "Candidate",
    "Occurrence",
    "Passage",
    "Reading",
    "admitted",
    "copulas",
    "description",
    "features",
    "gather",
    "key",
    "read_passages",
    "relation_coverage",
]
