"""The vectors of each long chunk's windows, for ``fusion``'s long-document ranker.

A chunk longer than the embedder reads (256 word-pieces for MiniLM; a 1,200-token chunk is
five windows) is embedded window by window and its vector is their mean
(:class:`~paretorag.providers.embedders.WindowedEmbedder`). The mean blurs a chunk whose
answer sits in one window; scoring a long text by its best part instead is MaxP (Dai and
Callan 2019, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
§3: a document scored by its best passage). This structure keeps the window vectors, so the
long-document ranker reads each candidate's best window against the question
(``window_dense_max``, :func:`paretorag.retrieval.operators.fusion_long.long_features`).

Only chunks of long documents have windows stored, and only on a corpus of long documents
(fewer than half of the chunks are whole documents, as ``fusion`` decides): a passage corpus
stores none and embeds nothing more. The window vectors are embedded through the index's
cache (by window text), so an insert embeds its new windows only.

Arrays: ``indptr`` (chunk row -> its windows; none for a chunk of one window) and
``vectors`` (float32, normalized, one row per window).
"""

from __future__ import annotations

import time

import numpy as np

from ..storage.store import MIN_PASSAGE_SHARE
from .base import BuildContext, Builder, StructureData, register_builder

STRUCTURE = "chunk_windows"


@register_builder
class ChunkWindows(Builder):
    """Window vectors of the chunks of long documents (MaxP; no LLM call)."""

    name = STRUCTURE
    version = 1
    requires = ()
    uses_llm = False

    def build(self, ctx: BuildContext) -> StructureData:
        chunks = ctx.chunks
        t0 = time.perf_counter()
        # the model's own windows: the cache (and its progress label) wrap the model as ``inner``
        model: object = ctx.embedder
        while getattr(model, "inner", None) is not None:
            model = model.inner  # type: ignore[attr-defined]
        split = getattr(model, "windows", None)
        long_corpus = chunks.whole_document_share() < MIN_PASSAGE_SHARE
        counts = np.zeros(len(chunks), dtype=np.int64)
        texts: list[str] = []
        if long_corpus and callable(split):
            for row, text in enumerate(chunks.texts):
                windows = split(text)
                if len(windows) > 1:
                    counts[row] = len(windows)
                    texts.extend(windows)
        vectors = (
            np.asarray(ctx.embedder.embed(texts), dtype=np.float32)
            if texts
            else np.zeros((0, ctx.embedder.dim), dtype=np.float32)
        )
        arrays: dict[str, np.ndarray] = {
            "indptr": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            "vectors": vectors,
        }
        meta = {
            "n_chunks": len(chunks),
            "long_corpus": long_corpus,
            "stats": {
                "windows": len(texts),
                "chunks_with_windows": int((counts > 0).sum()),
                "seconds": round(time.perf_counter() - t0, 4),
            },
        }
        return StructureData(arrays, meta)


__all__ = ["STRUCTURE", "ChunkWindows"]
