"""The offline reader's sentence spans of every chunk, computed at index time.

The reader (:mod:`paretorag.answering.reader`) reads the first sentences of each passage
(:func:`paretorag.textutil.reading_sentences`) and their named-entity and date spans
(:func:`paretorag.providers.sentence_spans.parse`, spaCy's entity recogniser). On long
chunks that parse was most of a query's answer time; this structure stores, per chunk
row, the first ``sentences`` reading sentences and their spans, computed by the same
functions, so a query looks them up instead. Per-chunk results are cached in the index
by chunk text, so an insert parses its new chunks only and a delete none.

Arrays: ``sent_indptr`` (chunk row -> its sentences), ``sent_utf8`` / ``sent_offsets``
(the sentences), ``complete`` (1 where the chunk has no more sentences than stored),
``span_indptr`` (sentence -> its spans), ``span_start`` / ``span_end`` (character
offsets in the sentence) and ``span_label`` (index into ``meta["labels"]``). A span's
text is its slice of the sentence and its reader type follows from its label.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..params import check_positive_int
from ..providers.nlp import MODEL
from ..storage.structures import pack_texts
from ..textutil import reading_sentences
from .base import BuildContext, Builder, StructureData, cached_per_text, register_builder

READ_SENTENCES = 12  # the reader's default sentences per passage (reader.candidates.read_passages)


def chunk_sentences(text: str, n: int) -> tuple[list[str], bool]:
    """The first ``n`` reading sentences of a chunk and whether they are all of them."""
    sents = reading_sentences(text)
    return sents[:n], len(sents) <= n


@register_builder
class ReaderSpans(Builder):
    """Per-chunk reading sentences and their spans for the offline reader (no LLM call).

    Parameters
    ----------
    sentences : int
        Sentences stored per chunk (the reader reads 12 per passage); a passage whose
        sentences are not all stored has the rest parsed at query time.
    batch_size : int
        Sentences per spaCy batch.
    """

    name = "reader_spans"
    version = 1
    _extract_version = 1  # part of the per-chunk cache key: bump when the spans' computation changes
    runtime_params = ("batch_size",)
    requires = ()
    uses_llm = False

    def __init__(self, *, sentences: int = READ_SENTENCES, batch_size: int = 256) -> None:
        self.sentences = sentences
        self.batch_size = batch_size

    def build(self, ctx: BuildContext) -> StructureData:
        from ..providers.sentence_spans import parse

        check_positive_int(self, "sentences", self.sentences)
        check_positive_int(self, "batch_size", self.batch_size)
        chunks = ctx.chunks
        t0 = time.perf_counter()
        salt = json.dumps({"model": MODEL, "v": self._extract_version, "sentences": self.sentences})

        def extract(texts: list[str]) -> Iterable[tuple[Any, int]]:
            # a batch of chunks at a time, their sentences parsed in one nlp.pipe call
            step = max(1, self.batch_size // self.sentences)
            for at in range(0, len(texts), step):
                split = [chunk_sentences(t, self.sentences) for t in texts[at : at + step]]
                flat = [s for sents, _ in split for s in sents]
                parsed = iter(parse(flat, batch_size=self.batch_size))
                for sents, complete in split:
                    spans = [[[sp.start, sp.end, sp.label] for sp in next(parsed)] for _ in sents]
                    yield {"sentences": sents, "complete": complete, "spans": spans}, len(sents)

        run = cached_per_text(ctx, "reader_spans", salt, list(chunks.texts), extract, "reader spans (spaCy)")
        labels: dict[str, int] = {}
        sent_counts, texts, complete, span_counts = [], [], [], []
        start: list[int] = []
        end: list[int] = []
        label: list[int] = []
        for value in run.values:
            sent_counts.append(len(value["sentences"]))
            texts.extend(value["sentences"])
            complete.append(bool(value["complete"]))
            for sent_spans in value["spans"]:
                span_counts.append(len(sent_spans))
                for a, b, lab in sent_spans:
                    start.append(a)
                    end.append(b)
                    label.append(labels.setdefault(lab, len(labels)))
        arrays: dict[str, np.ndarray] = {
            "sent_indptr": np.concatenate([[0], np.cumsum(sent_counts, dtype=np.int64)]).astype(np.int64),
            "complete": np.asarray(complete, dtype=np.uint8),
            "span_indptr": np.concatenate([[0], np.cumsum(span_counts, dtype=np.int64)]).astype(np.int64),
            "span_start": np.asarray(start, dtype=np.int32),
            "span_end": np.asarray(end, dtype=np.int32),
            "span_label": np.asarray(label, dtype=np.int16),
        }
        arrays["sent_utf8"], arrays["sent_offsets"] = pack_texts(texts)
        seconds = time.perf_counter() - t0
        meta = {
            "n_chunks": len(chunks),
            "model": MODEL,
            "sentences": self.sentences,
            "labels": sorted(labels, key=labels.__getitem__),
            "stats": {
                "sentences": len(texts),
                "spans": len(start),
                "chunks_parsed": run.computed,
                "chunks_from_cache": len(chunks) - run.computed,
                "spacy_seconds": round(seconds, 4),
            },
        }
        return StructureData(arrays, meta)


__all__ = ["READ_SENTENCES", "ReaderSpans", "chunk_sentences"]
