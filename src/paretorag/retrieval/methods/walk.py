"""``entity-walk``: dense retrieval, then a PPR walk over the passage-entity graph (no LLM).

Two steps (:mod:`paretorag.retrieval.operators.walk`):

1. ``dense``: the chunk VDB operator, the 20 best passages by cosine similarity;
2. ``walk``: personalized PageRank over passages and the spaCy entities they mention
   (E2GraphRAG's ``entity_graph``, IDF-weighted edges), restarting at the 5 best dense
   passages; passages ranked by their PPR mass (``chunk.entity_walk``).

The graph path of EA-GraphRAG (§3.4.2) seeds PPR from facts; offline, spaCy facts are
noisy, so this walk seeds it from the dense ranking and lets the rare names the
passages share find the bridge passages of multi-hop questions. Index cost: one spaCy
pass over the chunks (shared with ``e2graphrag``); query cost: one dense search and one
sparse PPR, no LLM call.
"""

from __future__ import annotations

from ..operators.dense import ChunkVDB
from ..operators.walk import ChunkEntityWalk
from ..query import State
from .base import register
from .pipeline import Pipeline, Steps

DEPTH = 20


@register
class EntityWalk(Pipeline):
    """Dense top passages, then a PPR walk over the passage-entity graph: ``dense``, ``walk``.

    ``get_method("entity-walk", walk__prior_top=10)`` restarts from more passages
    (``dense__k`` must stay above ``walk__prior_top``); ``walk__graph`` names another
    structure with passage occurrences (``fact_graph``).
    """

    name = "entity-walk"
    paper = "ea-graphrag §3.4.2 Eq. 6-7 (PPR with a dense passage prior), seeded by the dense ranking"
    mode = "graph"

    def default_steps(self) -> Steps:
        return [("dense", ChunkVDB(k=DEPTH)), ("walk", ChunkEntityWalk(k=5))]

    def _branch(self, state: State) -> str:
        return f"walk from the dense top-{min(len(state.get('dense')), 5)}"


__all__ = ["EntityWalk"]
