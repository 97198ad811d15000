"""Sentence splitting with character offsets (shared by chunking and the extractive LLM),
a document's outline (its headings, for chunking and heading paths), and the package's one
English stemmer (BM25 and the offline reader)."""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_STEMMERS = threading.local()


def english_stemmer() -> Any:
    """This thread's Snowball English stemmer (Porter2, PyStemmer's ``"english"``).

    PyStemmer is the Snowball project's C code: it imports in a millisecond (NLTK's
    pure-Python stemmers import scipy.stats through ``nltk/__init__``, about a second of
    every CLI query) and needs no data files. A stemmer instance keeps state while it
    stems, so each thread has its own.
    """
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        import Stemmer

        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
    return stemmer


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word ("died" -> "die", "spouse" -> "spous")."""
    return str(english_stemmer().stemWord(word))


def stem_words(words: list[str]) -> list[str]:
    """The stems of ``words``, in order (one call into the C stemmer)."""
    return list(english_stemmer().stemWords(words))


# A sentence ends at . ! ? (plus closing quotes/brackets) followed by whitespace and a
# likely sentence start, or at a blank line, or at a line that starts a Markdown block.
_BOUNDARY = re.compile(
    r"""(?<=[.!?])["'\u201d\u2019)\]]*\s+(?=["'\u201c\u2018(\[]?[A-Z0-9])"""
    r"""|\n\s*\n"""
    r"""|\n(?=\s*(?:[#>*+-]|\d+[.)])\s)"""
)
_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e|No|Vol|Fig|Inc|Ltd|Co)\.|\b[A-Z]\.)$"
)
_ABBREV_CHARS = 8  # the longest abbreviation above ("Prof.") plus room


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (whitespace between them excluded).

    Rule-based and fast; common abbreviations and initials ("Dr.", "J. R.") do not
    end a sentence.
    """
    return list(iter_sentence_spans(text))


def iter_sentence_spans(text: str) -> Iterator[tuple[int, int]]:
    """:func:`sentence_spans` one at a time, in linear time.

    The abbreviation check looks only at the last characters before a boundary, so a
    run of initials ("A. B. C. ...") costs no more than other text.
    """
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.start()
        if "\n" not in m.group() and _ABBREV.search(text, max(start, end - _ABBREV_CHARS), end):
            continue
        span = _trim(text, start, end)
        if span is not None:
            yield span
        start = m.end()
    span = _trim(text, start, len(text))
    if span is not None:
        yield span


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``."""
    return [text[a:b] for a, b in sentence_spans(text)]


_OPEN_CLOSE = {"\u201c": 1, "\u201d": -1}
_CLOSERS = frozenset("\"'\u201d\u2019)]")
_PARAGRAPH = re.compile(r"\n\s*\n")
# abbreviations that sentence_spans (shared with chunking, so left unchanged) ends sentences at
_MORE_ABBREV = re.compile(
    r"\b(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Gen|Col|Capt|Lt|Sgt|Gov|Sen|Rep|Rev|Hon|"
    r"Mt|Ft|Ave|approx|ca|cf|al|Nos)\.$"
)
_MAX_QUOTE_SPANS = 6  # a quotation left open (a typo, a cut passage) stops merging here


def _open_quote(sentence: str) -> bool:
    """Whether a quotation opened in ``sentence`` is still open at its end."""
    curly = sum(sentence.count(ch) * v for ch, v in _OPEN_CLOSE.items())  # str.count: no loop per character
    return sentence.count('"') % 2 == 1 or curly > 0


def reading_sentences(text: str) -> list[str]:
    """Whole sentences of ``text`` as a reader quotes them, for extractive answers.

    Built on :func:`sentence_spans` (abbreviations and initials do not end a sentence,
    blank lines and Markdown list items do), then:

    - line-break debris is removed: the whitespace inside a sentence (hard-wrapped
      lines, indentation) becomes one space;
    - a quotation is not cut: a sentence whose double quotes are unbalanced is joined
      with the next ones of its paragraph until they balance (at most 6), so dialogue
      such as ``"You are to go to him. Such is his command."`` stays one unit;
    - a closing quote or bracket after the final stop stays with its sentence, and a few
      more abbreviations (months, titles such as "Gen.", "Mt.", "et al.") do not end one.

    Examples
    --------
    >>> reading_sentences('"It is late," he said. "You are\\n to go. Now."\\n\\nShe left.')
    ['"It is late," he said.', '"You are to go. Now."', 'She left.']
    """
    spans = []
    for a, b in sentence_spans(text):
        while b < len(text) and text[b] in _CLOSERS:  # the closing quote after "him." is the sentence's
            b += 1
        spans.append((a, b))
    out: list[str] = []
    i = 0
    while i < len(spans):
        a, b = spans[i]
        j = i
        while (
            (_open_quote(text[a:b]) or _MORE_ABBREV.search(text, a, b))
            and j + 1 < len(spans)
            and j + 1 - i < _MAX_QUOTE_SPANS
            and not _PARAGRAPH.search(text, b, spans[j + 1][0])
        ):
            j += 1
            b = spans[j][1]
        out.append(" ".join(text[a:b].split()))
        i = j + 1
    return out


# -- stopword lists --------------------------------------------------------------------------
# Four lists, one per use, kept apart on purpose: each is part of something measured or
# shipped, so replacing one with another (or with spaCy's) changes published figures or
# needs a model retrained. Change one only with the figures it moves.

# ``fusion``'s title-match features (retrieval/operators/fusion.py): the shipped ranker
# (data/ranker) was trained on features computed with this list.
FUSION_STOPWORDS: frozenset[str] = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "is",
        "was",
        "were",
        "are",
        "be",
        "been",
        "who",
        "what",
        "which",
        "when",
        "where",
        "how",
        "did",
        "does",
        "do",
        "whose",
        "that",
        "this",
        "as",
        "it",
        "its",
        "his",
        "her",
        "their",
        "film",
    ]
)

# content words of the extractive answerer and of the offline reader's features
# (providers/extractive.py ``content_terms``): the shipped reader ranker (data/reader) was
# trained on features computed with this list.
CONTENT_STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "as",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "not",
        "no",
        "than",
        "then",
        "there",
        "their",
        "they",
        "he",
        "she",
        "his",
        "her",
        "him",
        "we",
        "you",
        "your",
        "i",
        "me",
        "my",
        "our",
        "us",
    ]
)

# words that carry no evidence, for the evidence-recall metric (eval/metrics.py): the
# README's and docs/' evidence figures are computed with this list (SQuAD normalization
# already drops a/an/the).
EVIDENCE_STOPWORDS: frozenset[str] = frozenset(
    [
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "their",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "we",
        "you",
        "your",
        "our",
        "not",
        "no",
        "can",
        "may",
        "might",
        "will",
        "would",
        "should",
        "could",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "why",
        "how",
        "than",
        "then",
        "so",
        "such",
        "also",
        "into",
        "about",
        "over",
        "under",
        "more",
        "most",
        "other",
        "some",
        "any",
        "each",
        "all",
        "both",
    ]
)

# capitalised words that start sentences or questions rather than name things: a chat
# follow-up's condensing (server/compat_condense.py) drops them from the names it carries.
OPENING_WORDS: frozenset[str] = frozenset(
    (  # noqa: SIM905  (a word list reads better as words)
        "a about after also an and any are as at be but by can could did do does for from give "
        "hello hi how i if in is it its let list me my no now of ok okay on or please say she he "
        "should show so tell thank thanks that the then these they this those to was we were what "
        "what's when where which who who's whom whose why will with would yes you your explain "
        "describe compare summarize summarise"
    ).split()
)


# -- outline: headings and page breaks ------------------------------------------------------------
# A document's outline: its headings and page breaks, found in its text.
#
# The file readers write headings into a document's text as Markdown does (``## Methods``):
# Markdown files have them already, HTML pages get them from ``<h1>``..``<h6>``, DOCX files
# from their "Heading N" paragraph styles and PDFs from their outline (bookmarks). HTML-like
# heading tags left in plain text (``<H2> History </H2>``, as in Natural Questions' Wikipedia
# pages) count too, and a form feed (a PDF page break) ends a section without naming one.
# Lines inside fenced code blocks are never headings (``# a comment`` in a shell example).
#
# Chunking cuts at these boundaries (:func:`paretorag.ingest.chunking.chunk_document`); each
# chunk's heading path ("Methods > Indexing") is the outline's stack at the chunk's first
# character (:func:`heading_paths`), computed from the stored text, so nothing about it is
# stored apart from the document.

PAGE = 0  # level of a page break: a boundary with no heading
MAX_HEADING_CHARS = 200  # a longer "heading" is a paragraph that happens to start with '#'

_ATX = re.compile(r"[ ]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")
_TAG = re.compile(
    rf"<h([1-6])(?:\s[^>]*)?>(.{{1,{MAX_HEADING_CHARS}}}?)</h\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
_INNER_TAG = re.compile(r"<[^>]{0,80}>")


@dataclass(frozen=True)
class Heading:
    """A boundary of the outline: ``text[start:end]`` is the heading's own markup."""

    start: int
    end: int
    level: int  # 1-6, or PAGE for a page break
    title: str


def _atx(text: str) -> list[Heading]:
    out: list[Heading] = []
    fence = ""
    if "#" not in text:  # no heading without one
        return out
    start = 0
    for line in text.split("\n"):
        at, start = start, start + len(line) + 1
        f = _FENCE.match(line)
        if f is not None:
            mark = f.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = ""
            continue
        if fence or "#" not in line[:12]:
            continue
        page = len(line) - len(line.lstrip("\f"))  # a heading right after a page break
        h = _ATX.match(line, page)
        if h is not None and len(h.group(2)) <= MAX_HEADING_CHARS:
            title = " ".join(h.group(2).split())
            if title:
                out.append(Heading(at + page, at + len(line), len(h.group(1)), title))
    return out


def outline(text: str) -> list[Heading]:
    """The headings and page breaks of ``text``, in order of position."""
    found = _atx(text)
    if "<" in text:
        for m in _TAG.finditer(text):
            title = " ".join(_INNER_TAG.sub(" ", m.group(2)).split())
            if title:
                found.append(Heading(m.start(), m.end(), int(m.group(1)), title))
    if "\f" in text:
        found.extend(Heading(i, i + 1, PAGE, "") for i, c in enumerate(text) if c == "\f")
    found.sort(key=lambda h: h.start)
    return found


def paths_at(headings: Sequence[Heading], offsets: Sequence[int]) -> list[tuple[str, ...]]:
    """The heading path (outermost first) in force at each offset of ``offsets``.

    A heading that starts at an offset is part of that offset's path.
    """
    starts = [h.start for h in headings]
    stacks: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for h in headings:
        if h.level != PAGE:
            while stack and stack[-1][0] >= h.level:
                stack.pop()
            stack.append((h.level, h.title))
        stacks.append(tuple(t for _, t in stack))
    out: list[tuple[str, ...]] = []
    for off in offsets:
        k = bisect.bisect_right(starts, off)
        out.append(stacks[k - 1] if k else ())
    return out


def heading_paths(text: str, offsets: Sequence[int], title: str = "") -> list[str]:
    """``"Part > Section"`` for each offset of ``text`` ("" outside any heading).

    A first heading equal to the document's ``title`` (a page's ``<h1>``) is left out: the
    title is shown beside the path anyway.
    """
    paths = paths_at(outline(text), offsets)
    norm = " ".join(title.split()).casefold()
    out: list[str] = []
    for p in paths:
        if p and norm and p[0].casefold() == norm:
            p = p[1:]
        out.append(" > ".join(p))
    return out
