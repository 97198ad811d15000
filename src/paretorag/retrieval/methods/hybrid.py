"""``bm25`` and ``hybrid``: sparse retrieval, and dense + sparse fused by reciprocal rank.

- ``bm25``: one step, ``chunk.bm25``: top-k chunks by BM25 over titles and texts
  (k = 5, as ``vanilla``).
- ``hybrid``: ``dense`` (``chunk.vdb``) and ``sparse`` (``chunk.bm25``) each rank
  ``DEPTH`` chunks, and ``fuse`` (``chunk.fuse``) merges them by reciprocal rank fusion
  (Cormack et al. 2009, constant 60; weighted as EA-GraphRAG Eq. 2 with
  ``fuse__weights=(w_dense, w_sparse)``). Dense and lexical retrieval fail on different
  questions (a paraphrase against a rare name), so their fusion recovers some of each.
"""

from __future__ import annotations

from ..operators.dense import ChunkVDB
from ..operators.sparse import ChunkBM25, ChunkFuse
from ..query import State
from .base import register
from .pipeline import Pipeline, Steps

DEPTH = 50  # chunks each ranking contributes to the fusion (a query's k deepens it)


@register
class BM25(Pipeline):
    """Sparse top-k retrieval: ``search`` = ``chunk.bm25``, k = 5 (BM25 over title + text)."""

    name = "bm25"
    paper = "Robertson and Zaragoza 2009 (BM25), with bm25s scoring"
    mode = "sparse"

    def default_steps(self) -> Steps:
        return [("search", ChunkBM25(k=5))]

    def _branch(self, state: State) -> str:
        return f"bm25 top-{len(state.get('chunk'))}"


@register
class Hybrid(Pipeline):
    """Dense + BM25 fused by reciprocal rank (RRF, k = 60): ``dense``, ``sparse``, ``fuse``.

    ``get_method("hybrid", fuse__weights=(1.0, 0.5))`` weights the rankings (EA-GraphRAG
    Eq. 2); ``dense__k`` / ``sparse__k`` set how deep each ranking is (``DEPTH`` = 50).
    A query's ``k`` sets ``fuse__k`` and deepens both rankings to at least ``k`` (the
    Pipeline's rule for a fusing last step).
    """

    name = "hybrid"
    paper = "Cormack et al. 2009 (RRF) over dense and BM25 rankings; EA-GraphRAG §3.4.3, Eq. 2"
    mode = "hybrid"
    deepen_sources = True

    def default_steps(self) -> Steps:
        return [
            ("dense", ChunkVDB(k=DEPTH)),
            ("sparse", ChunkBM25(k=DEPTH)),
            ("fuse", ChunkFuse(sources=("dense", "sparse"), k=5)),
        ]

    def _branch(self, state: State) -> str:
        return f"rrf(dense, bm25) top-{len(state.get('chunk'))}"


__all__ = ["BM25", "DEPTH", "Hybrid"]
