"""LinearRAG's retrieval: entity activation by semantic bridging, then PPR over the Tri-Graph (``chunk.linear_ppr``).

LinearRAG (Zhuang et al., ICLR 2026, §3.2; official code ``src/LinearRAG.py``,
``retrieve`` and the functions it calls) answers a question in four stages, all
without an LLM, over the ``linear_graph`` structure (:mod:`paretorag.graphs.linear`):

1. **Seeds** (``get_seed_entities``): spaCy NER over the question (entities
   lower-cased); each question entity's seed is the graph entity whose vector is most
   similar to it (cosine), with that similarity as its score. A question without
   entities (or a graph without any) is answered by the dense ranking alone.
2. **Semantic bridging** (``calculate_entity_scores``, :func:`semantic_bridge`): for
   rounds ``1 .. max_iterations - 1``, every entity activated in the previous round
   whose score is at least ``iteration_threshold`` picks, among its sentences not used
   yet, the ``top_k_sentence`` most similar to the question; every entity in such a
   sentence gets ``entity score * sentence similarity`` added to its weight (if that
   is at least the threshold) and becomes active for the next round, at tier
   ``round + 1``. This is how a question's entity reaches the bridge entity of a
   multi-hop question through the sentence that names both.
3. **Passage weights** (``calculate_passage_scores``, :func:`passage_weights`): the
   dense similarity of every passage, min-max normalized, times ``passage_ratio``, plus
   ``log(1 + bonus)`` with ``bonus = sum over activated entities of
   score * log(1 + occurrences of the entity in the lower-cased passage) / tier``; all
   times ``passage_node_weight``.
4. **PPR** (``run_ppr``): personalized PageRank (damping ``damping``) over the
   undirected weighted graph of entities and passages, restarting at the entity
   weights and the passage weights (negative or NaN weights set to 0); passages are
   ranked by their PageRank mass.

Defaults are the official ``src/config.py``'s (``max_iterations=3``,
``iteration_threshold=0.5``, ``top_k_sentence=1``, ``passage_ratio=1.5``,
``passage_node_weight=0.05``, ``damping=0.5``). The official ``scripts/run.sh`` tunes
some per dataset (2WikiMultihopQA and HotpotQA: ``iteration_threshold=0.4``,
``passage_ratio=0.05``; MuSiQue: ``max_iterations=5``, ``iteration_threshold=0.1``,
``top_k_sentence=4``, ``passage_ratio=2.0``); the defaults here are the config's.

The occurrence counts of stage 3 are exact substring counts, as the official
``str.count`` over every passage: an entity's lower-cased text is searched once in the
lower-cased corpus joined into one string (a C-level scan, memoized per entity text
per index), and only the passages it occurs in are touched. Restricting the count to
the passages where NER tagged the entity would be cheaper but not the same: "France"
also occurs inside "Kingdom of France", which NER tags as one entity.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...graphs.linear import TriGraph
from ...kernels.pagerank import pagerank, transition
from ...kernels.rank import top_k
from ...params import check_nonneg_number
from ...types import Scored
from .base import Operator, check_fraction, check_positive_int, register_operator

if TYPE_CHECKING:
    from ..query import IndexView, State

# entity row -> (score, tier) of the activated entities (official ``actived_entities``)
Activated = dict[int, tuple[float, int]]
_SEPARATOR = "\x00"  # joins the passages; no entity text holds it
_MEMO_MAX = 100_000  # entity texts whose occurrences are kept per index


def seed_entities(entity_vectors: np.ndarray, question_vectors: np.ndarray) -> list[tuple[int, float]]:
    """For each question entity vector, the most similar graph entity and its cosine (``get_seed_entities``)."""
    if entity_vectors.shape[0] == 0 or question_vectors.shape[0] == 0:
        return []
    sims = np.asarray(entity_vectors, dtype=np.float32) @ np.asarray(question_vectors, dtype=np.float32).T
    best = np.argmax(sims, axis=0)
    return [(int(b), float(sims[b, j])) for j, b in enumerate(best)]


def semantic_bridge(
    seeds: Sequence[tuple[int, float]],
    sentence_similarity: Callable[[np.ndarray], np.ndarray],
    entity_sentences: sp.csr_matrix,
    sentence_entities: sp.csr_matrix,
    *,
    max_iterations: int = 3,
    threshold: float = 0.5,
    top_k_sentence: int = 1,
) -> tuple[np.ndarray, Activated]:
    """Entity weights and the activated entities after semantic bridging (``calculate_entity_scores``).

    Parameters
    ----------
    seeds : sequence of (entity row, score)
        The seed entities; a repeated row keeps the later score, as the official dict does.
    sentence_similarity : callable
        Sentence rows -> their similarity to the question.
    entity_sentences, sentence_entities : csr_matrix
        Entities x sentences and its transpose.
    max_iterations, threshold, top_k_sentence
        As :class:`ChunkLinearPPR`.

    Returns
    -------
    weights : ndarray, shape (n_entities,)
        Seed scores plus every bridged ``score * similarity``.
    activated : dict
        Entity row -> (last score, tier), in activation order; the passage bonus reads it.
    """
    n_entities = entity_sentences.shape[0]
    weights = np.zeros(n_entities, dtype=np.float64)
    activated: Activated = {}
    for row, score in seeds:
        activated[row] = (float(score), 1)
        weights[row] = float(score)
    used = np.zeros(sentence_entities.shape[0], dtype=bool)
    current = dict(activated)
    iteration = 1
    while current and iteration < max_iterations:
        new: Activated = {}
        for ent, (score, _tier) in current.items():
            if score < threshold:
                continue
            sents = entity_sentences.indices[entity_sentences.indptr[ent] : entity_sentences.indptr[ent + 1]]
            sents = sents[~used[sents]]
            if not sents.size:
                continue
            sims = np.asarray(sentence_similarity(sents), dtype=np.float64)
            order = np.lexsort((sents, -sims))[:top_k_sentence]  # best first, ties by row
            for j in order:
                s = int(sents[j])
                used[s] = True
                nxt_score = score * float(sims[j])
                if nxt_score < threshold:
                    continue
                for nxt in sentence_entities.indices[
                    sentence_entities.indptr[s] : sentence_entities.indptr[s + 1]
                ]:
                    weights[nxt] += nxt_score
                    new[int(nxt)] = (nxt_score, iteration + 1)
        activated.update(new)
        current = new
        iteration += 1
    return weights, activated


class Occurrences:
    """Exact non-overlapping counts of a lower-cased text in each lower-cased passage.

    The same numbers as ``passage.lower().count(text)`` for every passage, found by one
    scan of the joined corpus; memoized per text (thread-safe).
    """

    def __init__(self, passages: Sequence[str]) -> None:
        lowered = [p.lower() for p in passages]
        self._joined = _SEPARATOR.join(lowered)
        starts = np.zeros(len(lowered), dtype=np.int64)
        if lowered:
            starts[1:] = np.cumsum([len(p) + 1 for p in lowered[:-1]])
        self._starts = starts
        self._memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def __call__(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(passage rows, counts) of ``text`` (already lower-cased), rows ascending."""
        with self._lock:
            hit = self._memo.get(text)
        if hit is not None:
            return hit
        rows, counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
        if text and _SEPARATOR not in text and text in self._joined:
            at = np.fromiter((m.start() for m in re.finditer(re.escape(text), self._joined)), dtype=np.int64)
            rows, counts = np.unique(np.searchsorted(self._starts, at, side="right") - 1, return_counts=True)
        with self._lock:
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            self._memo[text] = (rows, counts)
        return rows, counts


def entity_bonus(
    activated: Activated, names: Sequence[str], occurrences: Occurrences, n_passages: int
) -> np.ndarray:
    """Per passage: ``sum of score * log(1 + occurrences) / tier`` over the activated entities."""
    bonus = np.zeros(n_passages, dtype=np.float64)
    for ent, (score, tier) in activated.items():
        rows, counts = occurrences(names[ent].lower())
        if rows.size:
            bonus[rows] += score * np.log1p(counts) / max(tier, 1)
    return bonus


def min_max(x: np.ndarray) -> np.ndarray:
    """``(x - min) / (max - min)``; all zeros when every value is the same."""
    x = np.asarray(x, dtype=np.float64)
    if not x.size:
        return x
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def passage_weights(dense: np.ndarray, bonus: np.ndarray, *, ratio: float, node_weight: float) -> np.ndarray:
    """``node_weight * (ratio * minmax(dense) + log(1 + bonus))`` (``calculate_passage_scores``)."""
    with np.errstate(invalid="ignore", divide="ignore"):  # a negative bonus below -1 is dropped later
        out: np.ndarray = node_weight * (ratio * min_max(dense) + np.log1p(bonus))
        return out


def reset_vector(weights: np.ndarray) -> np.ndarray:
    """Negative and NaN restart weights set to 0 (``run_ppr``)."""
    w = np.asarray(weights, dtype=np.float64)
    return np.where(np.isnan(w) | (w < 0), 0.0, w)


@register_operator
class ChunkLinearPPR(Operator):
    """Passages ranked by LinearRAG's PPR from entities activated by semantic bridging (LinearRAG §3.2).

    Parameters
    ----------
    graph : str
        The Tri-Graph structure (``linear_graph``).
    k : int
        Passages returned (5, the official ``retrieval_top_k``).
    max_iterations : int
        Bridging runs rounds ``1 .. max_iterations - 1`` (3, official ``src/config.py``).
    iteration_threshold : float
        An entity spreads, and a bridged score counts, only at this score or above (0.5, config).
    top_k_sentence : int
        Sentences each active entity follows per round (1, config).
    passage_ratio : float
        Weight of the min-max normalized dense score in a passage's restart weight (1.5, config).
    passage_node_weight : float
        Scale of the passage restart weights against the entity weights (0.05, config).
    damping : float
        Probability of following an edge in the PPR (0.5, config).
    """

    name = "chunk.linear_ppr"
    kind = "chunk"
    produces = "chunk"
    structures = ("vectors",)
    paper = "linearrag §3.2 (semantic bridging over the Tri-Graph, then PPR); official src/LinearRAG.py"

    def __init__(
        self,
        *,
        graph: str = "linear_graph",
        k: int = 5,
        max_iterations: int = 3,
        iteration_threshold: float = 0.5,
        top_k_sentence: int = 1,
        passage_ratio: float = 1.5,
        passage_node_weight: float = 0.05,
        damping: float = 0.5,
    ) -> None:
        self.graph = graph
        self.k = k
        self.max_iterations = max_iterations
        self.iteration_threshold = iteration_threshold
        self.top_k_sentence = top_k_sentence
        self.passage_ratio = passage_ratio
        self.passage_node_weight = passage_node_weight
        self.damping = damping

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        max_iterations = check_positive_int(self, "max_iterations", self.max_iterations)
        threshold = check_nonneg_number(self, "iteration_threshold", self.iteration_threshold, "default 0.5")
        top_sent = check_positive_int(self, "top_k_sentence", self.top_k_sentence)
        ratio = check_nonneg_number(self, "passage_ratio", self.passage_ratio, "default 1.5")
        node_weight = check_nonneg_number(
            self, "passage_node_weight", self.passage_node_weight, "default 0.05"
        )
        damping = check_fraction(self, "damping", self.damping, closed=False)
        tri: TriGraph = index.cached(
            f"trigraph:{self.graph}", lambda: TriGraph.from_structure(index.structure(self.graph))
        )
        n_passages = len(index.chunks)
        q = state.vector(index)
        info = state.info.setdefault("linearrag", {"seeds": 0, "activated": 0})
        ents = index.nlp.entities(state.question, skip=tri.skip_labels) if tri.n_entities else []
        if not ents or n_passages == 0:
            return index.dense_search(q, k)
        seeds = seed_entities(tri.entity_vectors, index.embed(ents))
        sent_vectors = tri.sentence_vectors
        q32 = np.asarray(q, dtype=np.float32).reshape(-1)
        weights, activated = semantic_bridge(
            seeds,
            lambda rows: sent_vectors[rows] @ q32,
            tri.entity_sentences,
            tri.sentence_entities,
            max_iterations=max_iterations,
            threshold=threshold,
            top_k_sentence=top_sent,
        )
        everything = index.dense_search(q, n_passages)
        dense = np.zeros(n_passages, dtype=np.float64)
        dense[everything.ids] = everything.scores
        titles = bool(index.structure(self.graph).meta.get("titles", True))
        occ: Occurrences = index.cached(
            f"occurrences:{self.graph}", lambda: Occurrences(index.chunks.embedded_texts(titles))
        )
        bonus = entity_bonus(activated, tri.graph.names, occ, n_passages)
        restart = reset_vector(
            np.concatenate([weights, passage_weights(dense, bonus, ratio=ratio, node_weight=node_weight)])
        )
        info.update(seeds=len({row for row, _ in seeds}), activated=len(activated))
        if restart.sum() <= 0:
            return index.dense_search(q, k)
        t = index.cached(f"transition:linear:{self.graph}", lambda: transition(tri.adjacency()))
        mass = pagerank(None, damping=damping, personalization=restart, transition_t=t)
        return top_k(mass[tri.n_entities :], k, "chunk")


__all__ = [
    "Activated",
    "ChunkLinearPPR",
    "Occurrences",
    "entity_bonus",
    "min_max",
    "passage_weights",
    "reset_vector",
    "seed_entities",
    "semantic_bridge",
]
