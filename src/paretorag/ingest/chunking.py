"""Documents -> chunks: token-based, sentence-aligned, following sections, with character offsets.

Defaults follow E2GraphRAG and the unified framework: 1200-token chunks with 100
tokens of overlap, counted with the embedder's tokenizer. Chunks end at sentence
boundaries; with ``by="sections"`` also at a heading or page break
(:func:`paretorag.textutil.outline`) once they hold half of their size, and a section
longer than a chunk is cut at a paragraph break where one falls in the chunk's second
half, the only place where such chunks overlap. A sentence
longer than a chunk is cut at word boundaries, and where a piece has no word boundary
either, it is cut hard at the token limit. Pre-split passages (corpus records) are kept
as given.

Time is linear and memory bounded in the input: sentences are counted in batches of
about :data:`COUNT_BATCH_CHARS` characters, and a long sentence is tokenized in blocks of
at most ``max(32 * size, 32768)`` characters, never whole."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from ..errors import ConfigError
from ..providers.base import Tokenizer
from ..textutil import iter_sentence_spans, outline
from ..types import Chunk, Document

COUNT_BATCH_CHARS = 1 << 20  # characters of sentences counted in one tokenizer call
_NONSPACE = re.compile(r"\S")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
CHUNKING = ("sections", "sentences")  # where chunks may end (chunk_document's ``by``)
SECTION_MIN_FILL = 0.5  # a section starts a new chunk once the chunk holds this share of its size

Unit = tuple[int, int, int]  # (start, end, tokens)


def _block_chars(size: int) -> int:
    """Characters tokenized at once inside a long sentence (many windows' worth, bounded)."""
    return max(32 * size, 1 << 15)


def _begins_word(offsets: list[tuple[int, int]], k: int, text: str) -> bool:
    a = offsets[k][0]
    return a > offsets[k - 1][1] or text[a - 1].isspace()


def _windows(
    offs: list[tuple[int, int]], block: str, size: int, at_end: bool
) -> tuple[list[tuple[int, int]], int]:
    """Block-relative spans of <= ``size`` tokens each, and the character where the rest starts.

    A window ends where a word starts; with no word start in it, it is cut hard at the
    limit. Unless ``at_end``, the last ``size`` tokens stay for the next block: the
    block may end inside a word.
    """
    spans: list[tuple[int, int]] = []
    i = 0
    while len(offs) - i > size:
        j = i + size
        k = j
        while k > i + 1 and not _begins_word(offs, k, block):
            k -= 1
        j = k if k > i + 1 else j
        spans.append((offs[i][0], offs[j][0]))
        i = j
    if at_end:
        if i < len(offs):
            spans.append((offs[i][0], len(block)))
        return spans, len(block)
    if spans:
        return spans, offs[i][0]
    # fewer than `size` tokens in a whole block (very long tokens): stop at its last word start
    k = len(offs) - 1
    while k > 1 and not _begins_word(offs, k, block):
        k -= 1
    cut = offs[k][0] if k > 1 else len(block)
    return [(offs[0][0] if offs else 0, cut)], cut


def _cut_long(text: str, a: int, b: int, tokenizer: Tokenizer, size: int, units: list[Unit]) -> None:
    """Append pieces of ``text[a:b]`` of at most ``size`` tokens, tokenizing a bounded block at a time."""
    block_chars = _block_chars(size)
    pos = a
    while True:
        m = _NONSPACE.search(text, pos, b)
        if m is None:
            return
        pos = m.start()
        end = min(pos + block_chars, b)
        block = text[pos:end]
        spans, rest = _windows(tokenizer.offsets(block), block, size, end == b)
        segs = [block[sa:sb].rstrip() for sa, sb in spans]
        for (sa, _), seg, n in zip(spans, segs, tokenizer.count(segs), strict=True):
            while n > size and len(seg) > 1:  # a hard cut inside a word can re-tokenize longer
                seg = seg[: max(1, len(seg) * size // n - 1)].rstrip()
                n = tokenizer.count([seg])[0]
            if seg:
                units.append((pos + sa, pos + sa + len(seg), n))
        if end == b:
            return
        pos += max(rest, 1)


def _units(text: str, tokenizer: Tokenizer, size: int, ranges: Sequence[tuple[int, int]]) -> list[Unit]:
    """(start, end, tokens) of the sentences of each range of ``text``, in order; long
    sentences are cut into pieces of <= size tokens. No unit crosses a range's end."""
    units: list[Unit] = []
    batch: list[tuple[int, int]] = []
    batch_chars = 0
    long_chars = 8 * size  # a longer sentence is cut without counting it whole

    def flush() -> None:
        nonlocal batch_chars
        counts = tokenizer.count([text[a:b] for a, b in batch])
        for (a, b), n in zip(batch, counts, strict=True):
            if n <= size:
                units.append((a, b, n))
            else:
                _cut_long(text, a, b, tokenizer, size, units)
        batch.clear()
        batch_chars = 0

    for lo, hi in ranges:
        part = text if (lo, hi) == (0, len(text)) else text[lo:hi]
        for a, b in iter_sentence_spans(part):
            a, b = a + lo, b + lo
            if b - a > long_chars:
                flush()
                _cut_long(text, a, b, tokenizer, size, units)
                continue
            batch.append((a, b))
            batch_chars += b - a
            if batch_chars >= COUNT_BATCH_CHARS:
                flush()
    flush()
    return units


def _sections(text: str) -> list[tuple[int, int]]:
    """Character ranges of the document's sections: cut where a heading or page break starts."""
    cuts = sorted({h.start for h in outline(text)} - {0})
    bounds = [0, *cuts, len(text)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if text[a:b].strip()]


def count_tokens(text: str, tokenizer: Tokenizer) -> int:
    """Tokens of ``text``, counted in blocks of about :data:`COUNT_BATCH_CHARS` cut at whitespace."""
    total = 0
    pos = 0
    while pos < len(text):
        end = min(pos + COUNT_BATCH_CHARS, len(text))
        if end < len(text):
            space = text.rfind(" ", pos, end)
            end = space + 1 if space > pos else end
        total += tokenizer.count([text[pos:end]])[0]
        pos = end
    return total


def chunk_document(
    doc: Document,
    tokenizer: Tokenizer,
    *,
    size: int = 1200,
    overlap: int = 100,
    by: str = "sentences",
) -> list[Chunk]:
    """Split a document into chunks of at most ``size`` tokens.

    With ``by="sections"`` a chunk ends where a section starts (a heading or a
    page break, :func:`paretorag.textutil.outline`) once it holds half of ``size``
    (a smaller section joins the next, so a heading never stands alone), and a section
    longer than a chunk is cut at its last paragraph break in the chunk's second half
    where it has one, with ``overlap`` tokens repeated only inside that section. With
    ``by="sentences"`` (the default) the text is one run of sentences, cut wherever a chunk
    is full, always with overlap. Sections are not the default yet: on ``make demo``'s own
    documentation the offline reader answered its third question wrongly from section
    chunks (docs/long-documents.md), though retrieval was better.

    Parameters
    ----------
    doc : Document
        The document; ``doc.presplit`` documents become exactly one chunk.
    tokenizer : Tokenizer
        Counts tokens (the embedder's word-pieces by default).
    size, overlap : int
        Chunk size and overlap in tokens (``0 <= overlap < size``).
    by : {"sections", "sentences"}
        Where chunks may end (see above).
    """
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ConfigError(f"chunk size {size} and overlap {overlap}: need size > 0 and 0 <= overlap < size")
    if by not in CHUNKING:
        raise ConfigError(f"chunking must be one of {', '.join(CHUNKING)}, got {by!r}")
    text = doc.text
    if doc.presplit:
        n = count_tokens(text, tokenizer)
        return [Chunk(f"{doc.doc_id}#0", doc.doc_id, 0, 0, len(text), text, n, doc.title)]
    sectioned = by == "sections"
    ranges = _sections(text) if sectioned else [(0, len(text))]
    units = _units(text, tokenizer, size, ranges)
    section_of = _range_index(units, ranges)
    paragraph = [
        sectioned and i > 0 and _PARAGRAPH.search(text, units[i - 1][1], u[0]) is not None
        for i, u in enumerate(units)
    ]
    min_fill = int(size * SECTION_MIN_FILL)
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j = i
        total = 0
        while j < len(units) and total + units[j][2] <= size:
            if sectioned and j > i and section_of[j] != section_of[j - 1] and total >= min_fill:
                break  # a section starts: end the chunk here
            total += units[j][2]
            j += 1
        if sectioned and j < len(units) and section_of[j] == section_of[j - 1]:
            j, total = _paragraph_cut(units, paragraph, i, j, total, size // 2)
        start, end = units[i][0], units[j - 1][1]
        order = len(chunks)
        chunks.append(
            Chunk(f"{doc.doc_id}#{order}", doc.doc_id, order, start, end, text[start:end], total, doc.title)
        )
        if j >= len(units):
            break
        if sectioned and section_of[j] != section_of[j - 1]:
            i = j  # no overlap across a section's start
            continue
        # next chunk starts with the longest suffix of this one that fits in `overlap`
        k = j
        tail = 0
        while k - 1 > i and tail + units[k - 1][2] <= overlap and section_of[k - 1] == section_of[j]:
            k -= 1
            tail += units[k][2]
        i = k
    return chunks


def _range_index(units: Sequence[Unit], ranges: Sequence[tuple[int, int]]) -> list[int]:
    """For each unit, the index of the range (section) it lies in."""
    out: list[int] = []
    r = 0
    for a, _, _ in units:
        while r + 1 < len(ranges) and a >= ranges[r + 1][0]:
            r += 1
        out.append(r)
    return out


def _paragraph_cut(
    units: Sequence[Unit], paragraph: Sequence[bool], i: int, j: int, total: int, least: int
) -> tuple[int, int]:
    """Move a chunk's end ``j`` back to the last paragraph start after ``least`` tokens."""
    tokens = total
    for k in range(j - 1, i, -1):
        tokens -= units[k][2]
        if tokens < least:
            break
        if paragraph[k]:
            return k, tokens
    return j, total
