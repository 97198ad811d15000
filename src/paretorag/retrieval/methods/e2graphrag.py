"""``e2graphrag``: adaptive local/global retrieval over a summary tree and an entity graph.

E2GraphRAG (papers/e2graphrag.txt) indexes a corpus into a summary tree (§3.1,
:mod:`paretorag.graphs.tree`) and a spaCy entity co-occurrence graph with
entity<->chunk indexes (§3.1, :mod:`paretorag.graphs.entities`), and retrieves with
Algorithm 1 (App. A, §3.2), composed of the registered operators of
:mod:`paretorag.retrieval.operators.e2graphrag`:

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

The method is the composition entities -> select -> format. Table 3's ablations
are settings (``dense_only``, ``graph_filter``, ``entity_aware``, ``dense``,
``occurrence``), registered as presets so that ``paretorag eval --methods
e2graphrag,e2graphrag-dense-only,...`` reproduces the table on one index. No LLM call
at query time besides the answer.
"""

from __future__ import annotations

from typing import ClassVar

from ..operators.e2graphrag import AdaptiveSelect, QuestionEntities
from ..operators.e2graphrag_evidence import EvidenceFormat
from .base import register, register_preset
from .pipeline import Pipeline, Steps

_SELECT = (
    "k",
    "h",
    "g",
    "labels",
    "dense_only",
    "graph_filter",
    "entity_aware",
    "dense",
    "occurrence",
    "fallback",
)


@register
class E2GraphRAG(Pipeline):
    """E2GraphRAG retrieval, Algorithm 1 (E2GraphRAG §3.2, App. A; ablations: Table 3).

    Steps: ``entities`` (``e2graphrag.entities``), ``select`` (``e2graphrag.select``:
    local or global, Algorithm 1), ``format`` (``e2graphrag.evidence``). The method's
    settings are the steps' (:class:`~paretorag.retrieval.operators.e2graphrag.AdaptiveSelect`):
    ``k`` (25; a query's ``k`` sets it), ``h`` (4), ``g``, ``labels``, ``dense_only``,
    ``graph_filter``, ``entity_aware``, ``dense``, ``occurrence``, ``fallback``
    (``"chunk.vdb"``; ``None`` is the paper's Algorithm 1), and ``question_first_line``
    (App. B: read the question's first line only).
    """

    name = "e2graphrag"
    paper = "E2GraphRAG §3.2, Algorithm 1 (App. A)"
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        **{key: (f"select__{key}",) for key in _SELECT},
        "question_first_line": ("entities__first_line",),
    }
    query_k = ("select__k",)
    timed = True
    context_chunks = False

    def default_steps(self) -> Steps:
        return [
            ("entities", QuestionEntities(first_line=True)),
            ("select", AdaptiveSelect()),
            ("format", EvidenceFormat()),
        ]


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
