r"""The sentences of a passage that name an entity, for the graph view (:mod:`paretorag.explore.browse`):
a node's passages -> the sentences that hold its name or one of its other names, matched
word by word on stems, case-insensitive (``otter`` finds "Otters"), with the offsets of each
name in the sentence for highlighting.

A sentence is quoted with its whitespace collapsed (a hard-wrapped line break becomes a space)
and, when long, cut to a window around the first name, so a node's quotes stay short whatever
the corpus.

Examples
--------
>>> words = PassageWords("Otters eat fish.\nSea otters float on\ntheir backs. Herons wade.")
>>> [(m["sentence"], m["highlights"]) for m in mentions(words, name_stems(["otter"]))]
[('Otters eat fish.', [[0, 6]]), ('Sea otters float on their backs.', [[4, 10]])]
"""

from __future__ import annotations

import re
from typing import Any

from ..textutil import sentence_spans, stem_words

PER_PASSAGE = 2  # sentences quoted per passage
SENTENCE_CHARS = 320  # a longer sentence is cut to about this many characters around the name

_WORD = re.compile(r"[^\W_]+")


class PassageWords:
    """A passage's words (offsets and stems) and sentences, read once per neighborhood."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        self.stems = stem_words([text[a:b].lower() for a, b in self.words])
        self.at: dict[str, list[int]] = {}
        for i, s in enumerate(self.stems):
            self.at.setdefault(s, []).append(i)
        self.sentences = sentence_spans(text)

    def find(self, names: list[tuple[str, ...]]) -> list[tuple[int, int]]:
        """Character spans of the names (as word stems) in the text, longest first where they
        overlap, in order."""
        hits: list[tuple[int, int]] = []
        for stems in names:
            for i in self.at.get(stems[0], ()):
                if tuple(self.stems[i : i + len(stems)]) == stems:
                    hits.append((self.words[i][0], self.words[i + len(stems) - 1][1]))
        hits.sort(key=lambda h: (h[0], -h[1]))
        out: list[tuple[int, int]] = []
        for a, b in hits:
            if not out or a >= out[-1][1]:
                out.append((a, b))
        return out


def name_stems(names: list[str]) -> list[tuple[str, ...]]:
    """Each name as the stems of its words (case-insensitive), longest first; names without
    a word are dropped."""
    out = {tuple(stem_words([w.lower() for w in _WORD.findall(n)])) for n in names}
    return sorted((s for s in out if s), key=lambda s: (-len(s), s))


def quote(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> dict[str, Any]:
    """The sentence ``text[start:end]`` with its whitespace collapsed (hard line breaks go), cut
    to :data:`SENTENCE_CHARS` around its first span, and the ``spans`` inside it as
    ``highlights``: ``[from, to]`` offsets into the returned ``sentence``."""
    pieces: list[tuple[str, bool]] = []
    at = start
    for a, b in spans:
        if a >= start and b <= end:
            pieces.append((text[at:a], False))
            pieces.append((text[a:b], True))
            at = b
    pieces.append((text[at:end], False))
    sentence, marks = "", []
    for piece, marked in pieces:
        piece = re.sub(r"\s+", " ", piece)
        if marked:
            marks.append([len(sentence), len(sentence) + len(piece)])
        sentence += piece
    if len(sentence) > SENTENCE_CHARS:  # a window around the first name, cut at spaces
        first, first_end = (marks[0][0], marks[0][1]) if marks else (0, 0)
        lo = max(0, min(first - SENTENCE_CHARS // 3, len(sentence) - SENTENCE_CHARS))
        hi = lo + SENTENCE_CHARS
        if lo > 0 and (space := sentence.find(" ", lo, first)) >= 0:
            lo = space + 1
        if hi < len(sentence) and (space := sentence.rfind(" ", first_end, hi)) > 0:
            hi = space
        head, tail = ("\u2026" if lo > 0 else ""), ("\u2026" if hi < len(sentence) else "")
        shift = len(head) - lo
        marks = [[x + shift, y + shift] for x, y in marks if x >= lo and y <= hi]
        sentence = head + sentence[lo:hi] + tail
    return {"sentence": sentence, "start": start, "end": end, "highlights": marks}


def mentions(
    passage: PassageWords, names: list[tuple[str, ...]], limit: int = PER_PASSAGE
) -> list[dict[str, Any]]:
    """The first ``limit`` sentences of ``passage`` that name one of ``names`` (word stems,
    case-insensitive), each a :func:`quote`; none name it: the first sentence, no highlights."""
    spans = passage.find(names)
    out: list[dict[str, Any]] = []
    k = 0
    for a, b in passage.sentences:
        inside = []
        while k < len(spans) and spans[k][0] < b:
            if spans[k][0] >= a:
                inside.append(spans[k])
            k += 1
        if inside:
            out.append(quote(passage.text, a, b, inside))
            if len(out) >= limit:
                break
    if not out and passage.sentences:
        a, b = passage.sentences[0]
        out.append(quote(passage.text, a, b, []))
    return out


__all__ = ["PER_PASSAGE", "SENTENCE_CHARS", "PassageWords", "mentions", "name_stems", "quote"]
