"""The reader's sentences and spans of a passage, looked up in the index.

An index built for the offline reader stores the first reading sentences of every chunk
and their spans (:mod:`paretorag.graphs.reader_spans`, the same functions the reader
runs). A passage that is a whole chunk of the index takes them from there; any other
(a summary, an index built before the structure, a chunk with more sentences than stored)
is split and parsed at query time, with the same result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import MissingStructureError
from ...storage.structures import StructureData
from .spans import LABEL_TYPE, Span

STRUCTURE = "reader_spans"


class StoredSpans:
    """Per-chunk reading sentences and spans of an index (decoded per chunk on demand)."""

    def __init__(self, data: StructureData, chunk_texts: Sequence[str]) -> None:
        a = data.arrays
        self.chunk_texts = chunk_texts
        self.sentences_stored = int(data.meta.get("sentences", 0))
        self._labels = [str(x) for x in data.meta.get("labels", [])]
        self._sent_indptr = np.asarray(a["sent_indptr"], dtype=np.int64)
        self._complete = np.asarray(a["complete"], dtype=bool)
        self._blob = np.asarray(a["sent_utf8"], dtype=np.uint8).tobytes()
        self._offsets = np.asarray(a["sent_offsets"], dtype=np.int64)
        self._span_indptr = np.asarray(a["span_indptr"], dtype=np.int64)
        self._start = np.asarray(a["span_start"], dtype=np.int64)
        self._end = np.asarray(a["span_end"], dtype=np.int64)
        self._label = np.asarray(a["span_label"], dtype=np.int64)
        self._memo: dict[int, tuple[list[str], list[tuple[Span, ...]]]] = {}
        self._names: frozenset[str] | None = None

    def __len__(self) -> int:
        return len(self._sent_indptr) - 1

    def chunk(self, row: int) -> tuple[list[str], list[tuple[Span, ...]]]:
        """The stored sentences of chunk ``row`` and each one's spans."""
        hit = self._memo.get(row)
        if hit is not None:
            return hit
        lo, hi = int(self._sent_indptr[row]), int(self._sent_indptr[row + 1])
        o = self._offsets
        sents = [self._blob[o[i] : o[i + 1]].decode("utf-8") for i in range(lo, hi)]
        spans: list[tuple[Span, ...]] = []
        for si, sent in zip(range(lo, hi), sents, strict=True):
            found = []
            for j in range(int(self._span_indptr[si]), int(self._span_indptr[si + 1])):
                a, b, label = int(self._start[j]), int(self._end[j]), self._labels[int(self._label[j])]
                found.append(Span(sent[a:b], LABEL_TYPE[label], a, b, label))
            spans.append(tuple(found))
        if len(self._memo) >= 4096:
            self._memo.clear()
        self._memo[row] = (sents, spans)
        return sents, spans

    def names(self) -> frozenset[str]:
        """Every stored entity span's text (not a date or a number) that holds a capital letter,
        its whitespace collapsed: the corpus's names as the reader's entity recogniser found
        them (:func:`paretorag.answering.reader.question.known_entities` matches a question against them)."""
        if self._names is None:
            keep = np.array([LABEL_TYPE[lab] not in ("date", "number") for lab in self._labels], dtype=bool)
            picked = np.flatnonzero(keep[self._label]) if len(keep) else np.zeros(0, dtype=np.int64)
            # the sentence of each span: the span index's position in span_indptr
            sent = np.searchsorted(self._span_indptr, picked, side="right") - 1
            o, blob = self._offsets, self._blob
            found: set[str] = set()
            sentence: dict[int, str] = {}
            for j, si in zip(picked.tolist(), sent.tolist(), strict=True):
                if si not in sentence:
                    sentence[si] = blob[o[si] : o[si + 1]].decode("utf-8")
                text = sentence[si][int(self._start[j]) : int(self._end[j])]
                if any(c.isupper() for c in text):
                    found.add(" ".join(text.split()))
            self._names = frozenset(found)
        return self._names

    def lookup(
        self, row: int, text: str, max_sentences: int
    ) -> tuple[list[str], list[tuple[Span, ...]]] | None:
        """The first ``max_sentences`` reading sentences of a passage and their spans, when the
        passage is chunk ``row`` whole and they are stored; else None."""
        if not 0 <= row < len(self) or row >= len(self.chunk_texts) or self.chunk_texts[row] != text:
            return None
        if max_sentences > self.sentences_stored and not self._complete[row]:
            return None
        sents, spans = self.chunk(row)
        return sents[:max_sentences], spans[:max_sentences]


def stored_spans(view: Any) -> StoredSpans | None:
    """The index view's stored reader spans, loaded once per view; None when the index has none."""

    def build() -> StoredSpans | None:
        try:
            data = view.structure(STRUCTURE)
        except MissingStructureError:
            return None
        if int(data.meta.get("n_chunks", -1)) != len(view.chunks):
            return None
        return StoredSpans(data, view.chunks.texts)

    found: StoredSpans | None = view.cached("reader.stored_spans", build)
    return found


__all__ = ["STRUCTURE", "StoredSpans", "stored_spans"]
