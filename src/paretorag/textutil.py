"""Sentence splitting with character offsets (shared by chunking and the extractive LLM)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
