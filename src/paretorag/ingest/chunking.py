"""Documents -> chunks: token-based, sentence-aligned, with character offsets.

Defaults follow E2GraphRAG and the unified framework: 1200-token chunks with 100
tokens of overlap, counted with the embedder's tokenizer. Chunks end at sentence
boundaries; a sentence longer than a chunk is cut at word boundaries, and where a
piece has no word boundary either, it is cut hard at the token limit. Pre-split
passages (corpus records) are kept as given.

Time is linear and memory bounded in the input: sentences are counted in batches of
about :data:`COUNT_BATCH_CHARS` characters, and a long sentence is tokenized in blocks of
at most ``max(32 * size, 32768)`` characters, never whole.
"""

from __future__ import annotations

import re

from ..errors import ConfigError
from ..providers.base import Tokenizer
from ..textutil import iter_sentence_spans
from ..types import Chunk, Document

COUNT_BATCH_CHARS = 1 << 20  # characters of sentences counted in one tokenizer call
_NONSPACE = re.compile(r"\S")

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


def _units(text: str, tokenizer: Tokenizer, size: int) -> list[Unit]:
    """(start, end, tokens) of sentences, long sentences cut into pieces of <= size tokens."""
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

    for a, b in iter_sentence_spans(text):
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
    doc: Document, tokenizer: Tokenizer, *, size: int = 1200, overlap: int = 100
) -> list[Chunk]:
    """Split a document into chunks of at most ``size`` tokens overlapping by at most ``overlap``.

    Parameters
    ----------
    doc : Document
        The document; ``doc.presplit`` documents become exactly one chunk.
    tokenizer : Tokenizer
        Counts tokens (the embedder's word-pieces by default).
    size, overlap : int
        Chunk size and overlap in tokens (``0 <= overlap < size``).
    """
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ConfigError(f"chunk size {size} and overlap {overlap}: need size > 0 and 0 <= overlap < size")
    text = doc.text
    if doc.presplit:
        n = count_tokens(text, tokenizer)
        return [Chunk(f"{doc.doc_id}#0", doc.doc_id, 0, 0, len(text), text, n, doc.title)]
    units = _units(text, tokenizer, size)
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j = i
        total = 0
        while j < len(units) and total + units[j][2] <= size:
            total += units[j][2]
            j += 1
        start, end = units[i][0], units[j - 1][1]
        order = len(chunks)
        chunks.append(
            Chunk(f"{doc.doc_id}#{order}", doc.doc_id, order, start, end, text[start:end], total, doc.title)
        )
        if j >= len(units):
            break
        # next chunk starts with the longest suffix of this one that fits in `overlap`
        k = j
        tail = 0
        while k - 1 > i and tail + units[k - 1][2] <= overlap:
            k -= 1
            tail += units[k][2]
        i = k
    return chunks
