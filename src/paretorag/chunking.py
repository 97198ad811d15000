"""Documents -> chunks: token-based, sentence-aligned, with character offsets.

Defaults follow E2GraphRAG and the unified framework: 1200-token chunks with 100
tokens of overlap, counted with the embedder's tokenizer. Chunks end at sentence
boundaries; a sentence longer than a chunk is cut at word boundaries. Pre-split
passages (corpus records) are kept as given.
"""

from __future__ import annotations

from .errors import ConfigError
from .providers.base import Tokenizer
from .providers.embedders import window_spans
from .textutil import sentence_spans
from .types import Chunk, Document


def _units(text: str, tokenizer: Tokenizer, size: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) of sentences, long sentences cut into pieces of <= size tokens."""
    spans = sentence_spans(text)
    counts = tokenizer.count([text[a:b] for a, b in spans])
    units: list[tuple[int, int, int]] = []
    for (a, b), n in zip(spans, counts, strict=True):
        if n <= size:
            units.append((a, b, n))
            continue
        piece = text[a:b]
        for pa, pb in window_spans(tokenizer.offsets(piece), piece, size):
            seg = piece[pa:pb].rstrip()
            if seg:
                units.append((a + pa, a + pa + len(seg), tokenizer.count([seg])[0]))
    return units


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
        n = tokenizer.count([text])[0]
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
