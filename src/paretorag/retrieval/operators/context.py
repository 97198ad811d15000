"""Graph elements as context (unified framework §6.3: the retrieved entities and relations
are put in the prompt with the chunks and reports).

``context.graph`` appends the descriptions of the state's entity and relation results
to ``state.items`` (GraphRAG local search's "Entities" and "Relationships" tables,
LightRAG's context, VGraphRAG's four elements, Table 9), within the query's token
budget. It returns the positions of the items it added in ``state.items`` (kind
``"context"``, scored 1, 1/2, ... in the order added), stored under ``"context"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...types import ContextItem, Scored
from .base import Operator, check_nonneg_int, load_graph, register_operator
from .common import add_items, node_text, text_item

if TYPE_CHECKING:
    from ..query import IndexView, State

KIND = "context"


@register_operator
class ContextGraph(Operator):
    """The descriptions of the retrieved entities and relations as context items (§6.3; Table 9).

    Entities as "name: description" (name alone in a KG), relations as "source
    relation target: description", best first, at most ``entities`` and ``relations``
    of each (0 leaves that kind out).

    Parameters
    ----------
    graph : str
        Structure the entity and relation rows belong to ("tkg").
    entities, relations : int
        How many of each are added (4, the unified framework's top-k).
    entity_source, relation_source : str
        Results read ("entity", "relation": what the last node / relation step produced).
    """

    name = "context.graph"
    kind = "context"
    produces = "context"
    consumes = ("entity", "relation")
    paper = "unified-framework §6.3 (retrieved elements in the prompt), Table 9 (Entity, Relationship)"

    def __init__(
        self,
        *,
        graph: str = "tkg",
        entities: int = 4,
        relations: int = 4,
        entity_source: str = "entity",
        relation_source: str = "relation",
    ) -> None:
        self.graph = graph
        self.entities = entities
        self.relations = relations
        self.entity_source = entity_source
        self.relation_source = relation_source

    def run(self, index: IndexView, state: State) -> Scored:
        n_ent = check_nonneg_int(self, "entities", self.entities)
        n_rel = check_nonneg_int(self, "relations", self.relations)
        graph = load_graph(index, self.graph)
        items: list[ContextItem] = []
        ent = state.results.get(self.entity_source)
        if n_ent and ent is not None and len(ent) and ent.kind == "entity":
            for row, score in zip(*_top(ent, n_ent, graph.n_nodes), strict=True):
                items.append(text_item(index, f"entity:{row}", "Entity", node_text(graph, row), score))
        rel = state.results.get(self.relation_source)
        if n_rel and rel is not None and len(rel) and rel.kind != "entity" and graph.edges is not None:
            e = graph.edges
            for row, score in zip(*_top(rel, n_rel, len(e)), strict=True):
                items.append(
                    text_item(index, f"relation:{row}", "Relationship", e.text(row, graph.names), score)
                )
        start = len(state.items or [])
        added = add_items(state, items)
        pos = np.arange(start, start + len(added), dtype=np.int64)
        return Scored(pos, (1.0 / (1.0 + np.arange(pos.size))).astype(np.float32), KIND)


def _top(s: Scored, k: int, n: int) -> tuple[list[int], list[float]]:
    t = s.top(k)
    keep = (t.ids >= 0) & (t.ids < n)
    return t.ids[keep].tolist(), t.scores[keep].tolist()
