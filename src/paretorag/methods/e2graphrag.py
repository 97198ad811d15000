"""``e2graphrag``: adaptive local/global retrieval over a summary tree and an entity graph.

E2GraphRAG (papers/e2graphrag.txt) indexes a corpus into a summary tree (§3.1,
:mod:`paretorag.graphs.tree`) and a spaCy entity co-occurrence graph with
entity<->chunk indexes (§3.1, :mod:`paretorag.graphs.entities`), and retrieves with
Algorithm 1 (App. A, §3.2), composed of the registered operators of
:mod:`paretorag.operators.e2graphrag`:

1. ``e2graphrag.entities``: the question's entities, as graph vertices;
2. none -> **global**: ``e2graphrag.collapsed_tree`` (dense top-k over the tree);
3. ``e2graphrag.local``: Graph Filter (Equation 1), Index Mapping (Equation 2), the
   shrinking loop and Entity-Aware Ranking -> **local**; no pair or no shared chunk
   -> **global**: ``e2graphrag.global`` (dense top-2k, Occurrence Ranking, keep k);
4. ``e2graphrag.evidence``: "entity1-entity2-...: chunks" (end of §3.2).

Not in the paper: a local result of fewer than ``k`` chunks is filled up to ``k`` from
the ``fallback`` chunk ranking (``e2graphrag.fill``; default ``chunk.vdb``, the dense
ranking; any registered operator producing ``"chunk"`` with a ``k`` setting, such as a
sparse or fused ranking, can take its place). ``fallback=None`` is the paper's Algorithm 1.

The control flow branches, so the method keeps a ``retrieve``. Table 3's ablations
are settings (``dense_only``, ``graph_filter``, ``entity_aware``, ``dense``,
``occurrence``), registered as presets so that ``paretorag eval --methods
e2graphrag,e2graphrag-dense-only,...`` reproduces the table on one index. No LLM call
at query time besides the answer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..errors import ConfigError
from ..operators.base import Operator, get_operator, operator_class
from ..operators.e2graphrag import (
    CollapsedTree,
    FillFromRanking,
    GlobalOccurrence,
    LocalMapping,
    QuestionEntities,
    load_state,
)
from ..operators.e2graphrag_evidence import EvidenceFormat
from ..params import check_nonneg_int, check_positive_int
from ..query import IndexView, QueryOptions, Retrieval, State
from ..types import Scored
from .base import Method, register, register_preset


@register
class E2GraphRAG(Method):
    """E2GraphRAG retrieval, Algorithm 1 (E2GraphRAG §3.2, App. A; ablations: Table 3).

    Parameters
    ----------
    k : int
        Maximum chunks retrieved (paper: 25); ``QueryOptions.k`` overrides it.
    h : int
        Initial hop threshold of the Graph Filter (paper: 4).
    g : int, optional
        Expected tree group size; checked against the built tree (``None``: as built).
    labels : sequence of str, optional
        Expected entity labels; checked against the built graph (``None``: as built).
        Questions are always parsed with the graph's own extractor settings.
    question_first_line : bool
        Extract entities from the question's first line only (App. B).
    dense_only : bool
        Table 3 "Dense Retrieval Only": collapsed-tree dense top-k for every question.
    graph_filter, entity_aware : bool
        False: Table 3 "w/o Graph Filter" / "w/o Entity-Aware Ranking" (``e2graphrag.local``).
    dense, occurrence : bool
        False: Table 3 "w/o Dense Retrieval" / "w/o Occurrence Ranking" (``e2graphrag.global``;
        without dense retrieval a question without entities retrieves nothing).
    fallback : str, optional
        A registered operator producing a ``"chunk"`` ranking (with a ``k`` setting) that
        fills a local result of fewer than ``k`` chunks up to ``k`` (``e2graphrag.fill``):
        ``chunk.vdb``, the dense ranking, by default (measured in the README); ``None``
        leaves it short, as the paper does (preset ``e2graphrag-no-fallback``).
    """

    name = "e2graphrag"
    structures = ("vectors", "tree", "entity_graph")
    paper = "E2GraphRAG §3.2, Algorithm 1 (App. A)"

    def __init__(
        self,
        *,
        k: int = 25,
        h: int = 4,
        g: int | None = None,
        labels: Sequence[str] | None = None,
        question_first_line: bool = True,
        dense_only: bool = False,
        graph_filter: bool = True,
        entity_aware: bool = True,
        dense: bool = True,
        occurrence: bool = True,
        fallback: str | None = "chunk.vdb",
    ) -> None:
        self.k = k
        self.h = h
        self.g = g
        self.labels = labels
        self.question_first_line = question_first_line
        self.dense_only = dense_only
        self.graph_filter = graph_filter
        self.entity_aware = entity_aware
        self.dense = dense
        self.occurrence = occurrence
        self.fallback = fallback

    def _fallback(self, k: int) -> Operator | None:
        if self.fallback is None:
            return None
        if not isinstance(self.fallback, str) or operator_class(self.fallback).produces != "chunk":
            raise ConfigError(
                f"e2graphrag fallback={self.fallback!r} must name a registered operator that produces "
                "a 'chunk' ranking, such as 'chunk.vdb'; `paretorag operators` lists them"
            )
        return get_operator(self.fallback, k=k)

    @property
    def requires(self) -> tuple[str, ...]:
        fill = self._fallback(1)
        extra = fill.requires if fill is not None else ()
        return tuple(dict.fromkeys((*self.structures, *extra)))

    def _check(self, index: IndexView) -> None:
        state = load_state(index)
        if self.g is not None and state.tree_g and self.g != state.tree_g:
            raise ConfigError(
                f"e2graphrag g={self.g} but this index's tree was built with g={state.tree_g}; "
                "drop the g setting or rebuild the tree with that group size in a new index"
            )
        if self.labels is not None and tuple(self.labels) != state.extractor.labels:
            raise ConfigError(
                f"e2graphrag labels={tuple(self.labels)} but the entity graph was built with "
                f"{state.extractor.labels}; drop the labels setting or rebuild the graph in a new index"
            )

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        k = check_positive_int(self, "k", options.k if options.k is not None else self.k)
        h = check_nonneg_int(self, "h", self.h)
        self._check(index)
        state = State(question, options)
        t0 = time.perf_counter()
        sources = QuestionEntities(first_line=self.question_first_line)(index, state)
        t1 = time.perf_counter()
        if self.dense_only:
            state.mode, state.branch = "global", "dense_only"
            CollapsedTree(k=k)(index, state)
        elif len(sources) == 0:
            state.mode, state.branch = "global", "no_entity"
            if self.dense:
                CollapsedTree(k=k)(index, state)
            else:
                state.put("node", Scored.empty("node"))
        else:
            LocalMapping(k=k, h=h, graph_filter=self.graph_filter, entity_aware=self.entity_aware)(
                index, state
            )
            if state.mode == "global":
                GlobalOccurrence(k=k, dense=self.dense, occurrence=self.occurrence)(index, state)
            else:
                fill = self._fallback(k)
                if fill is not None and len(state.get("node")) < k:
                    fill(index, state)
                    FillFromRanking(k=k)(index, state)
                    state.branch += f"+{self.fallback}"
        t2 = time.perf_counter()
        EvidenceFormat()(index, state)
        t3 = time.perf_counter()
        state.info["timings_ms"] = {
            "entities": round((t1 - t0) * 1e3, 3),
            "select": round((t2 - t1) * 1e3, 3),
            "format": round((t3 - t2) * 1e3, 3),
        }
        return state.retrieval()


for _name, _doc, _preset in (
    ("e2graphrag-dense-only", "Dense Retrieval Only", {"dense_only": True}),
    ("e2graphrag-no-graph-filter", "w/o Graph Filter", {"graph_filter": False}),
    ("e2graphrag-no-entity-aware", "w/o Entity-Aware Ranking", {"entity_aware": False}),
    (
        "e2graphrag-no-graph-filter-no-entity-aware",
        "w/o Graph Filter & Entity-Aware Ranking",
        {"graph_filter": False, "entity_aware": False},
    ),
    ("e2graphrag-no-dense", "w/o Dense Retrieval", {"dense": False}),
    ("e2graphrag-no-occurrence", "w/o Occurrence Ranking", {"occurrence": False}),
    (
        "e2graphrag-no-dense-no-occurrence",
        "w/o Dense Retrieval & Occurrence Ranking",
        {"dense": False, "occurrence": False},
    ),
):
    register_preset(_name, E2GraphRAG, f"{_doc} (E2GraphRAG Table 3 ablation)", **_preset)

register_preset(
    "e2graphrag-no-fallback",
    E2GraphRAG,
    "E2GraphRAG as in the paper: a short local result is not filled up to k from the dense ranking",
    fallback=None,
)

__all__ = ["E2GraphRAG"]
