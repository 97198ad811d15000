"""The long-document features of ``chunk.learned_fusion`` (``long_order="dense"`` / ``"model"``).

On a corpus of long documents (fewer than half of the chunks are whole documents) the
preset ``fusion-long`` scores ``fusion``'s candidates (:func:`~paretorag.retrieval.operators.fusion.gather`)
with one LightGBM lambdarank model on :data:`~paretorag.retrieval.ranking.LONG_FEATURES`:
the first-hop features, and where each chunk sits in its document: its position, its
heading path against the question, how its neighbours (the chunks before and after), its
section (same heading path) and its whole document score for the question, dense and
BM25, and how its best window scores (MaxP, Dai and Callan 2019 §3: the cosine of the
question with the best of the chunk's stored window vectors, :mod:`paretorag.graphs.chunk_windows`,
and its rank among the candidates; the chunk vector's cosine where the index has no window
vectors yet) (docs/long-documents.md). The model is trained by ``paretorag train-ranker --long``
(:mod:`paretorag.training.ranker`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import MissingStructureError
from ...graphs.chunk_windows import STRUCTURE as WINDOWS
from ...textutil import FUSION_STOPWORDS
from ..ranking import FIRST_HOP, LONG_FEATURES
from .fusion import Candidates, normalize
from .sparse import bm25_scores

if TYPE_CHECKING:
    from ..query import IndexView

LONG = {name: j for j, name in enumerate(LONG_FEATURES)}


@dataclass
class LongDocs:
    """Where each chunk sits in its document and section (built once per index)."""

    doc: npt.NDArray[np.int64]  # document number of each row
    pos: npt.NDArray[np.int64]  # position of the row among its document's chunks
    section: npt.NDArray[np.int64]  # section number (document and heading path) of each row
    doc_rows: list[npt.NDArray[np.int64]]  # each document's rows in chunk order
    section_rows: list[npt.NDArray[np.int64]]
    heading_words: list[frozenset[str]]
    heading_depth: npt.NDArray[np.float32]

    @classmethod
    def of(cls, index: IndexView) -> LongDocs:
        def build() -> LongDocs:
            chunks = index.chunks
            n = len(chunks)
            docs: dict[str, int] = {}
            sections: dict[tuple[int, str], int] = {}
            doc = np.empty(n, dtype=np.int64)
            section = np.empty(n, dtype=np.int64)
            headings = [chunks.heading(r) for r in range(n)]
            for r, d in enumerate(chunks.doc_ids):
                doc[r] = docs.setdefault(d, len(docs))
                section[r] = sections.setdefault((int(doc[r]), headings[r]), len(sections))
            order = np.lexsort((np.asarray(chunks.orders), doc))
            doc_rows = [np.zeros(0, np.int64)] * len(docs)
            pos = np.empty(n, dtype=np.int64)
            bounds = np.flatnonzero(np.diff(doc[order])) + 1
            for group in np.split(order, bounds) if n else []:
                doc_rows[int(doc[group[0]])] = group
                pos[group] = np.arange(group.size)
            by_section = np.argsort(section, kind="stable")
            cuts = np.flatnonzero(np.diff(section[by_section])) + 1
            section_rows = list(np.split(by_section, cuts)) if n else []
            return cls(
                doc,
                pos,
                section,
                doc_rows,
                section_rows,
                [frozenset(normalize(h).split()) - FUSION_STOPWORDS for h in headings],
                np.array([h.count(" > ") + 1 if h else 0 for h in headings], dtype=np.float32),
            )

        long_docs: LongDocs = index.cached("fusion:long_docs", build)
        return long_docs


@dataclass
class WindowVectors:
    """The stored window vectors of the index's long chunks (:mod:`paretorag.graphs.chunk_windows`)."""

    indptr: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]

    @classmethod
    def of(cls, index: IndexView) -> WindowVectors | None:
        """The index's window vectors, loaded once; None where the index has none yet (built
        before them: they come with its next commit) or they are of another chunk set."""

        def build() -> WindowVectors | None:
            try:
                data = index.structure(WINDOWS)
            except MissingStructureError:
                return None
            if int(data.meta.get("n_chunks", -1)) != len(index.chunks):
                return None
            return cls(data.arrays["indptr"], data.arrays["vectors"])

        found: WindowVectors | None = index.cached("fusion:chunk_windows", build)
        return found

    def best(
        self,
        rows: npt.NDArray[np.int64],
        query_vector: npt.NDArray[np.float32],
        whole: npt.NDArray[np.float32],
    ) -> npt.NDArray[np.float32]:
        """Each row's best window cosine (MaxP); ``whole`` (its chunk vector's) where it has no windows."""
        out = whole.astype(np.float32, copy=True)
        for j, r in enumerate(map(int, rows)):
            a, b = int(self.indptr[r]), int(self.indptr[r + 1])
            if b > a:
                out[j] = float((self.vectors[a:b] @ query_vector).max())
        return out


def long_features(
    index: IndexView, c: Candidates, question: str, query_vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """:data:`~paretorag.retrieval.ranking.LONG_FEATURES` of the candidates: the first-hop
    features, and where each chunk sits in its document (position, heading), how its
    neighbours, its section and its whole document score for the question (dense and BM25)."""
    docs = LongDocs.of(index)
    rows = c.rows
    n = rows.size
    bm25 = c.bm25 if c.bm25 is not None else bm25_scores(index, question)
    cand_docs = np.unique(docs.doc[rows])
    near = np.concatenate([docs.doc_rows[int(d)] for d in cand_docs])
    dense = np.full(len(docs.doc), -1.0, dtype=np.float32)
    dense[near] = index.chunk_vectors(near) @ np.asarray(query_vector, dtype=np.float32)
    doc_max = {int(d): float(dense[docs.doc_rows[int(d)]].max()) for d in cand_docs}
    doc_rank = {d: i for i, d in enumerate(sorted(doc_max, key=lambda d: (-doc_max[d], d)))}
    q_words = frozenset(normalize(question).split()) - FUSION_STOPWORDS
    out = np.zeros((n, len(LONG_FEATURES)), dtype=np.float32)
    out[:, : len(FIRST_HOP)] = c.first
    q = np.asarray(query_vector, dtype=np.float32)
    whole = dense[rows]
    windows = WindowVectors.of(index)
    best = windows.best(rows, q, whole) if windows is not None else whole
    out[:, LONG["window_dense_max"]] = best
    out[:, LONG["window_dense_rank"]] = np.argsort(np.argsort(-best, kind="stable"), kind="stable")
    for j, r in enumerate(map(int, rows)):
        d = int(docs.doc[r])
        mine = docs.doc_rows[d]
        p = int(docs.pos[r])
        nbrs = mine[max(p - 1, 0) : p + 2]
        nbrs = nbrs[nbrs != r]
        same = docs.section_rows[int(docs.section[r])]
        same = same[same != r]
        out[j, LONG["doc_position"]] = p / max(mine.size - 1, 1)
        out[j, LONG["doc_first_chunk"]] = float(p == 0)
        out[j, LONG["doc_chunks_log"]] = np.log1p(mine.size)
        out[j, LONG["heading_overlap"]] = len(docs.heading_words[r] & q_words) / max(len(q_words), 1)
        out[j, LONG["heading_depth"]] = docs.heading_depth[r]
        out[j, LONG["neighbour_dense_max"]] = dense[nbrs].max() if nbrs.size else -1.0
        out[j, LONG["neighbour_bm25_max"]] = bm25[nbrs].max() if nbrs.size else 0.0
        out[j, LONG["doc_dense_max"]] = doc_max[d]
        out[j, LONG["doc_dense_rank"]] = doc_rank[d]
        out[j, LONG["dense_rank_in_doc"]] = int((dense[mine] > dense[r]).sum())
        out[j, LONG["doc_bm25_max"]] = bm25[mine].max()
        out[j, LONG["section_dense_max"]] = dense[same].max() if same.size else -1.0
        out[j, LONG["section_bm25_max"]] = bm25[same].max() if same.size else 0.0
    return out


__all__ = ["LongDocs", "WindowVectors", "long_features"]
