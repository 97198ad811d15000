"""Learned fusion of dense, BM25 and entity-walk rankings, with a second hop (``chunk.learned_fusion``).

Learning to rank (LambdaMART: Burges 2010, "From RankNet to LambdaRank to LambdaMART"),
in two stages over one candidate set:

1. **Candidates** are the union of the dense top 30, the BM25 top 30 (chunks sharing a
   term with the question) and the entity walk's top 30 (:mod:`paretorag.retrieval.operators.walk`),
   about 70 passages per question.
2. **First hop.** Each candidate gets :data:`FIRST_HOP` features: its dense score, rank and
   margin under the best; its BM25 score and rank; its walk mass and rank; whether its
   title is in the question and how much of the title is; how many of the dense top 5
   mention its title; its similarity and shared rare entities (IDF-weighted, as the walk's
   edges) with the dense top 3; its similarity to the question plus the best passage
   (a pseudo-relevance query); the share of the question's words it holds; its length.
   A LightGBM lambdarank model orders them.
3. **Second hop.** The first stage's best three passages become the bridge: each
   candidate gets :data:`SECOND_HOP` features relative to them (does the bridge mention
   its title, does it mention the bridge's titles, shared rare entities, similarity, and
   its similarity to what the question asks beyond each bridge passage: the question
   vector with the bridge passage projected out). A second model, trained on
   out-of-fold first-stage scores, gives the final order. This is the second hop of
   multi-hop questions without an LLM: the first hop's passages name the bridge entity,
   and the passage about that entity is found by its title and shared names.

No feature reads the corpus order, so a shuffled corpus ranks the same. The models learned
from passage corpora (one short passage per document) and were trained on the train splits
only (``musique_train``, ``hotpotqa_train``, the 2Wiki question set disjoint from its dev
file, ``popqa[400:]``) by ``paretorag train-ranker`` (:mod:`paretorag.training.ranker`);
the shipped pair lives in ``paretorag/data/ranker/``.

On a corpus of long documents, where fewer than half of the chunks are whole documents,
the passage ranker lost to dense retrieval (answer-in-context@5 on nq_leval 82.1 against
88.1), and the operator keeps the entity walk's order. A model trained on long documents
(``paretorag train-ranker --long``, ``paretorag/data/ranker_long/``) orders the same
candidates by the first-hop features and
:func:`~paretorag.retrieval.operators.fusion_long.long_features` (where each chunk sits in its
document, how its neighbours, its section and its document score for the question), fused
with the dense ranking's order by reciprocal rank (RRF, Cormack, Clarke and Buettcher 2009,
k=60): ``long_order="dense"``, the preset ``fusion-long``. It is not the default: it beat
dense retrieval on GraphRAG-Bench medical, QuALITY and nq_leval, but on this project's own
documentation (``make demo``'s index) it lost the chunk that answers "How many passages does
the MuSiQue dev corpus have?", first in dense and walk order, out of the top 5: the model
learned from one medical text and SQuAD articles, whose questions share most of their words
with the answer's paragraph, and ranks a chunk with few of the question's words low
(docs/long-documents.md).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ...errors import ConfigError
from ...graphs.bm25 import STRUCTURE as BM25_STRUCTURE
from ...kernels.rank import rrf, top_k
from ...storage.store import MIN_PASSAGE_SHARE
from ...textutil import FUSION_STOPWORDS
from ...types import Scored
from ..ranking import BRIDGE, FIRST_HOP, SECOND_HOP
from .base import Operator, check_positive_int, load_graph, register_operator
from .sparse import bm25_scores
from .walk import idf_bipartite

if TYPE_CHECKING:
    from ..query import IndexView, State

CANDIDATES = 30  # from each ranking
LONG_ORDERS = ("walk", "dense", "model")  # ChunkLearnedFusion's long_order
# feature columns by name (the models' order: ranking.FIRST_HOP, ranking.SECOND_HOP)
FIRST = {name: j for j, name in enumerate(FIRST_HOP)}
SECOND = {name: j for j, name in enumerate(SECOND_HOP)}
DENSE_DEPTH = 50  # dense ranks beyond the candidates still inform dense_rank
MISSING_DENSE_RANK, MISSING_WALK_RANK, MISSING_BM25_RANK = 60, 40, 1000

_NON_WORD = re.compile(r"[^a-z0-9 ]+")


def normalize(text: str) -> str:
    """Lower-case words separated by single spaces, padded with a space on each side
    (so that ``" paris " in normalize(text)`` matches whole words only)."""
    return " " + " ".join(_NON_WORD.sub(" ", text.lower()).split()) + " "


@dataclass
class CorpusText:
    """Per-index normalized titles and texts, and their word sets (built once per index).

    A chunk of a document split into several chunks has no title here: every chunk of a
    long page would otherwise match the page's title, which says nothing about the chunk.
    """

    titles: list[str]
    texts: list[str]
    title_words: list[frozenset[str]]
    text_words: list[frozenset[str]]
    lengths: npt.NDArray[np.float32]
    passage_share: float  # the share of chunks that are whole documents

    @classmethod
    def of(cls, index: IndexView) -> CorpusText:
        def build() -> CorpusText:
            # a title names a passage only when the chunk is its whole document (as in the
            # chunk vectors, ChunkTable.embedded_texts): the chunks of a long page share it
            chunks = index.chunks
            per_doc = Counter(chunks.doc_ids)
            titles = [
                normalize(t) if per_doc[d] == 1 else " "
                for d, t in zip(chunks.doc_ids, chunks.titles, strict=True)
            ]
            texts = [normalize(t) for t in index.chunks.texts]
            return cls(
                titles,
                texts,
                [frozenset(t.split()) - FUSION_STOPWORDS for t in titles],
                [frozenset(t.split()) for t in texts],
                np.array([len(t.split()) for t in texts], dtype=np.float32),
                chunks.whole_document_share(),
            )

        corpus: CorpusText = index.cached("fusion:corpus_text", build)
        return corpus


@dataclass
class Candidates:
    """One question's candidate passages and what both stages need about them."""

    rows: npt.NDArray[np.int64]
    first: npt.NDArray[np.float32]  # candidates x FIRST_HOP
    links: npt.NDArray[np.float32]  # links[a, b] = 1 if b's text names a's title
    shared: npt.NDArray[np.float32]  # IDF sum of the rare entities a and b share
    similarity: npt.NDArray[np.float32]  # passage-passage cosine
    bm25: npt.NDArray[np.float64] | None = None  # every chunk's BM25 score for the question


def _rank_of(scored: Scored) -> dict[int, int]:
    return {int(r): i for i, r in enumerate(scored.ids)}


def gather(
    index: IndexView, question: str, query_vector: npt.NDArray[np.float32], dense: Scored, walk: Scored
) -> Candidates:
    """The candidates of one question and their first-hop features (:data:`FIRST_HOP`)."""
    corpus = CorpusText.of(index)
    bm25 = bm25_scores(index, question)
    bm_order = np.argsort(-bm25, kind="stable")
    bm_top = bm_order[:CANDIDATES]
    bm_top = bm_top[bm25[bm_top] > 0]
    rows = np.fromiter(
        dict.fromkeys(
            [*map(int, dense.ids[:CANDIDATES]), *map(int, bm_top), *map(int, walk.ids[:CANDIDATES])]
        ),
        dtype=np.int64,
    )
    n = rows.size
    vectors = index.chunk_vectors(rows)
    dense_score = vectors @ np.asarray(query_vector, dtype=np.float32)
    dense_rank = _rank_of(dense)
    walk_rank = _rank_of(walk)
    walk_mass = {int(r): float(s) for r, s in zip(walk.ids, walk.scores, strict=True)}
    walk_max = max(walk_mass.values(), default=1.0) or 1.0
    bm_rank = np.empty(bm25.size, dtype=np.int64)
    bm_rank[bm_order] = np.arange(bm25.size)
    bm_max = max(float(bm25.max()) if bm25.size else 0.0, 1e-9)
    seeds = np.asarray(dense.ids[:BRIDGE], dtype=np.int64)
    seed_pos = [int(np.flatnonzero(rows == s)[0]) for s in seeds]  # the dense top 3 are candidates
    similarity = (vectors @ vectors.T).astype(np.float32)
    b = index.cached("fusion:idf_bipartite", lambda: _bipartite(index))
    b_rows = b[rows]
    present = b_rows.copy()
    present.data[:] = 1.0
    shared = np.asarray((b_rows @ present.T).todense(), dtype=np.float32)
    top1 = float(dense.scores[0]) if len(dense) else 0.0
    prf = vectors[seed_pos[0]] + np.asarray(query_vector, dtype=np.float32) if seed_pos else None
    prf_score = vectors @ (prf / np.linalg.norm(prf)) if prf is not None else np.zeros(n, np.float32)
    nq = normalize(question)
    q_words = frozenset(nq.split()) - FUSION_STOPWORDS
    top5_texts = [corpus.texts[int(r)] + corpus.titles[int(r)] for r in dense.ids[:5]]
    top5_rows = [int(r) for r in dense.ids[:5]]
    links = _links(corpus, rows)
    not_self = rows[:, None] != seeds[None, :]  # candidates x dense top-3
    sims = np.where(not_self, similarity[:, seed_pos], -1.0)
    sh = np.where(not_self, shared[:, seed_pos], 0.0)
    has_seeds = len(seed_pos) > 0
    first = np.zeros((n, len(FIRST_HOP)), dtype=np.float32)
    first[:, FIRST["dense_score"]] = dense_score
    first[:, FIRST["dense_margin"]] = dense_score - top1
    first[:, FIRST["dense_rank"]] = [dense_rank.get(int(r), MISSING_DENSE_RANK) for r in rows]
    first[:, FIRST["bm25_relative"]] = bm25[rows] / bm_max
    first[:, FIRST["bm25_score"]] = bm25[rows]
    first[:, FIRST["bm25_rank"]] = np.where(bm25[rows] > 0, bm_rank[rows], MISSING_BM25_RANK)
    first[:, FIRST["walk_relative"]] = [walk_mass.get(int(r), 0.0) / walk_max for r in rows]
    first[:, FIRST["walk_rank"]] = [walk_rank.get(int(r), MISSING_WALK_RANK) for r in rows]
    for j, r in enumerate(map(int, rows)):
        title = corpus.titles[r]
        t_words = corpus.title_words[r]
        named = bool(title.strip())
        first[j, FIRST["title_in_question"]] = float(named and title in nq)
        first[j, FIRST["title_overlap"]] = len(t_words & q_words) / max(len(t_words), 1)
        first[j, FIRST["title_in_dense_top5"]] = sum(
            1 for s, text in zip(top5_rows, top5_texts, strict=True) if s != r and named and title in text
        )
        first[j, FIRST["question_coverage"]] = len(q_words & (corpus.text_words[r] | t_words)) / max(
            len(q_words), 1
        )
    first[:, FIRST["sim_dense_top3_max"]] = sims.max(axis=1) if has_seeds else -1.0
    first[:, FIRST["sim_dense_top1"]] = sims[:, 0] if has_seeds else -1.0
    first[:, FIRST["sim_question_plus_top1"]] = prf_score
    first[:, FIRST["shared_idf_top3_max"]] = sh.max(axis=1) if has_seeds else 0.0
    first[:, FIRST["shared_idf_top3_sum"]] = sh.sum(axis=1) if has_seeds else 0.0
    first[:, FIRST["length_words"]] = corpus.lengths[rows]
    return Candidates(rows, first, links, shared, similarity, bm25)


def _links(corpus: CorpusText, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """``links[a, b] = 1`` where candidate ``b``'s text names candidate ``a``'s title (whole words).

    A title whose words are not all among the text's words cannot be in it, so the
    substring test runs only on the pairs that pass the word-set test.
    """
    n = rows.size
    links = np.zeros((n, n), dtype=np.float32)
    texts = [corpus.texts[int(r)] for r in rows]
    words = [corpus.text_words[int(r)] for r in rows]
    for a, r in enumerate(map(int, rows)):
        title = corpus.titles[r]
        if not title.strip():
            continue
        t_words = corpus.title_words[r]
        for b in range(n):
            if a != b and t_words <= words[b] and title in texts[b]:
                links[a, b] = 1.0
    return links


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread.

    The products here are tens of rows; with more threads, OpenBLAS's workers spin after
    each one and take the cores from the next query's embedding (on two cores the query
    took twice as long).
    """
    return _controller().limit(limits=1, user_api="blas")


def _bipartite(index: IndexView) -> sp.csr_matrix:
    return idf_bipartite(load_graph(index, "entity_graph")).tocsr()


def second_hop(c: Candidates, first_scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """:data:`FIRST_HOP` and :data:`SECOND_HOP` features, the bridge being the first stage's best three.

    The residual similarity of candidate ``c`` to bridge passage ``p`` is the cosine of
    ``c`` with the question vector once ``p`` is projected out,
    ``(q.c - (q.p)(p.c)) / sqrt(1 - (q.p)^2)``: what the question asks beyond ``p``.
    ``residual12`` projects out the best two together.
    """
    n = c.rows.size
    order = np.argsort(-first_scores, kind="stable")
    rank = np.empty(n)
    rank[order] = np.arange(n)
    qc = c.first[:, FIRST["dense_score"]].astype(np.float64)
    sim = c.similarity.astype(np.float64)
    out = np.zeros((n, len(SECOND_HOP)), dtype=np.float32)
    m = BRIDGE

    def fill(js: npt.NDArray[np.int64], bridge: list[int]) -> None:
        for i, p in enumerate(bridge):
            out[js, SECOND[f"bridge{i + 1}_mentions_title"]] = c.links[js, p]
            out[js, SECOND[f"bridge{i + 1}_shared_idf"]] = c.shared[js, p]
            out[js, SECOND[f"bridge{i + 1}_similarity"]] = sim[js, p]
            qp = qc[p]
            out[js, SECOND[f"residual{i + 1}_similarity"]] = (qc[js] - qp * sim[js, p]) / np.sqrt(
                max(1.0 - qp * qp, 1e-6)
            )
        out[js, SECOND["mentions_bridge_titles"]] = (
            c.links[np.ix_(np.asarray(bridge, dtype=np.int64), js)].sum(axis=0) if bridge else 0.0
        )
        if len(bridge) >= 2:
            a, b = bridge[0], bridge[1]
            gram = np.array([[1.0, sim[a, b]], [sim[a, b], 1.0]])
            rhs = np.array([qc[a], qc[b]])
            coef = np.linalg.lstsq(gram, rhs, rcond=None)[0]
            norm2 = max(1.0 - float(coef @ rhs), 1e-6)
            out[js, SECOND["residual12_similarity"]] = (
                qc[js] - coef[0] * sim[js, a] - coef[1] * sim[js, b]
            ) / np.sqrt(norm2)

    # every candidate's bridge is the first stage's best m, except for those among the best m + 1
    head = [int(o) for o in order[: m + 1]]
    rest = np.setdiff1d(np.arange(n), head)
    fill(rest, [int(o) for o in order[:m]])
    for j in head:
        fill(np.array([j]), [o for o in head if o != j][:m])
    out[:, SECOND["first_stage_score"]] = first_scores
    out[:, SECOND["first_stage_margin"]] = first_scores - first_scores.max()
    out[:, SECOND["first_stage_rank"]] = rank
    out[:, SECOND["title_in_bridge"]] = c.links[:, order[:m]].sum(axis=1)
    return np.concatenate([c.first, out], axis=1)


@register_operator
class ChunkLearnedFusion(Operator):
    """Passages ordered by the two-stage learned ranker over dense, BM25 and walk candidates.

    Parameters
    ----------
    dense : str
        The dense ranking's result key (a ``chunk.vdb`` step at least 50 deep).
    walk : str
        The entity walk's result key (a ``chunk.entity_walk`` step at least 30 deep).
    k : int
        Passages returned (5).
    model : str, optional
        Folder of a model pair written by ``paretorag train-ranker`` (default: the shipped one).
    long_order : {"walk", "dense", "model"}
        On an index where fewer than ``MIN_PASSAGE_SHARE`` of the chunks are whole documents
        (long documents cut into chunks): ``"walk"`` (the default) returns the ``walk``
        ranking as it is; ``"dense"`` fuses the long-document model's order with the dense
        ranking's by reciprocal rank (Cormack et al. 2009, k=60; preset ``fusion-long``);
        ``"model"`` uses the model's order alone (preset ``fusion-long-model``).
    long : str, optional
        Folder of the long-document model written by ``paretorag train-ranker --long``
        (default: the shipped one).
    """

    name = "chunk.learned_fusion"
    kind = "chunk"
    produces = "chunk"
    consumes = ("chunk",)
    structures = (BM25_STRUCTURE, "entity_graph")
    paper = "LambdaMART (Burges 2010) over dense, BM25 and entity-walk candidates, with a second hop"

    def __init__(
        self,
        *,
        dense: str = "dense",
        walk: str = "walk",
        k: int = 5,
        model: str | None = None,
        long_order: str = "walk",
        long: str | None = None,
    ) -> None:
        self.dense = dense
        self.walk = walk
        self.k = k
        self.model = model
        if long_order not in LONG_ORDERS:
            raise ConfigError(f"long_order must be one of {', '.join(LONG_ORDERS)}, got {long_order!r}")
        self.long_order = long_order
        self.long = long

    def run(self, index: IndexView, state: State) -> Scored:
        from ..ranking import load, load_long  # the models load on the first question
        from .fusion_long import long_features

        k = check_positive_int(self, "k", self.k)
        dense = state.get(self.dense)
        if not len(dense):
            return dense
        walk = state.get(self.walk)
        query_vector = state.vector(index)
        if CorpusText.of(index).passage_share < MIN_PASSAGE_SHARE:
            # chunks of long documents: the passage ranker does not apply
            if self.long_order not in LONG_ORDERS:  # set after construction (Method.set_params)
                raise ConfigError(
                    f"long_order must be one of {', '.join(LONG_ORDERS)}, got {self.long_order!r}"
                )
            if self.long_order == "walk":
                state.info["fusion_candidates"] = 0
                return top_k(np.asarray(walk.scores), k, "chunk", rows=np.asarray(walk.ids))
            long_ranker = load_long(self.long)
            with one_blas_thread():
                cands = gather(index, state.question, query_vector, dense, walk)
                final = long_ranker.stage.predict(long_features(index, cands, state.question, query_vector))
            state.info["fusion_candidates"] = int(cands.rows.size)
            state.info["fusion_ranker"] = "long documents"
            ranked = top_k(final, int(final.size), "chunk", rows=cands.rows)
            if self.long_order == "dense":  # fused by reciprocal rank (module docstring)
                ranked = rrf([ranked, dense])
            return ranked.top(k)
        ranker = load(self.model)
        with one_blas_thread():
            cands = gather(index, state.question, query_vector, dense, walk)
            first = ranker.first.predict(cands.first)
            final = ranker.second.predict(second_hop(cands, first))
        state.info["fusion_candidates"] = int(cands.rows.size)
        return top_k(final, k, "chunk", rows=cands.rows)


__all__ = [
    "BRIDGE",
    "CANDIDATES",
    "FIRST_HOP",
    "SECOND_HOP",
    "Candidates",
    "ChunkLearnedFusion",
    "CorpusText",
    "gather",
    "normalize",
    "second_hop",
]
