"""Sentence splitting with character offsets (shared by chunking and the extractive LLM)."""

from __future__ import annotations

import re

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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (whitespace between them excluded).

    Rule-based and fast; common abbreviations and initials ("Dr.", "J. R.") do not
    end a sentence.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.start()
        piece = text[start:end]
        if _ABBREV.search(piece) and "\n" not in m.group():
            continue
        _append(spans, text, start, end)
        start = m.end()
    _append(spans, text, start, len(text))
    return spans


def _append(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``."""
    return [text[a:b] for a, b in sentence_spans(text)]
