"""ToG, Think-on-Graph (papers/unified-framework.txt Table 3 row "ToG"; ToG §2.2).

ToG's beam search over the KG is a loop, so it is a short :class:`Method` calling the
registered operators: the question's entities are linked to the KG (node Link), then
for ``depth`` rounds: the frontier's relations (relation Onehop) are pruned by the LLM
to ``width`` (relation Agent); the frontier's neighbours (node Onehop) at the ends of
the kept relations are pruned by the LLM to ``width`` (node Agent) and become the next
frontier. The context is the kept relations as triples (the reasoning paths); the chunk
result is their provenance (chunk FromRel). ToG's own stopping check (the LLM judging
whether the paths suffice) is left out: the search runs ``depth`` rounds, or stops
when the frontier is empty. Needs a generative LLM.
"""

from __future__ import annotations

import numpy as np

from ..operators.base import Operator, load_graph
from ..operators.chunk import ChunkFromRel
from ..operators.common import edges_of
from ..operators.node import NodeAgent, NodeLink, NodeOneHop
from ..operators.question import QuestionTerms
from ..operators.relation import RelationAgent, RelationOneHop
from ..operators.subgraph import emit_paths
from ..params import check_positive_int
from ..query import IndexView, QueryOptions, Retrieval, State
from ..types import Scored
from .base import Method, register

GRAPH = "kg"


@register
class ToG(Method):
    """ToG: LLM-pruned beam search over the KG (Table 3 row "ToG"; ToG §2.2).

    Parameters
    ----------
    depth : int
        Search rounds (ToG's maximum depth D_max = 3).
    width : int
        Relations and entities kept per round (ToG's beam width N = 3).
    k : int
        Provenance chunks kept (4).
    """

    name = "tog"
    paper = "unified-framework Table 3 (ToG); ToG §2.2 (beam search with relation and entity pruning)"
    structures = ("vectors", GRAPH)
    query_llm = True

    def __init__(self, *, depth: int = 3, width: int = 3, k: int = 4) -> None:
        self.depth = depth
        self.width = width
        self.k = k

    def operators(self) -> list[Operator]:
        w = self.width
        return [
            QuestionTerms(),
            NodeLink(graph=GRAPH),
            RelationOneHop(graph=GRAPH, source="frontier"),
            RelationAgent(graph=GRAPH, k=w, source="relation"),
            NodeOneHop(graph=GRAPH, source="frontier"),
            NodeAgent(graph=GRAPH, k=w, source="candidates"),
            ChunkFromRel(graph=GRAPH, k=self.k, source="kept"),
        ]

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        depth = check_positive_int(self, "depth", self.depth)
        terms, link, rel_onehop, rel_agent, node_onehop, node_agent, provenance = self.operators()
        if options.k is not None:
            provenance.set_params(k=options.k)
        state = State(question, options)
        terms(index, state)
        state.put("frontier", link(index, state))
        kept: list[int] = []
        visited = set(state.get("frontier").ids.tolist())
        for _ in range(depth):
            if not len(state.get("frontier")):
                break
            rel_onehop(index, state)
            rel_agent(index, state)
            chosen = state.get("relation").ids
            kept.extend(r for r in chosen.tolist() if r not in kept)
            src, dst = _edge_ends(index)
            ends = np.unique(np.concatenate([src[chosen], dst[chosen]]))
            near = node_onehop(index, state)
            keep = np.isin(near.ids, ends) & ~np.isin(near.ids, list(visited))
            state.put("candidates", Scored(near.ids[keep], near.scores[keep], "entity"))
            state.put("frontier", node_agent(index, state))
            visited.update(state.get("frontier").ids.tolist())
        rows = np.asarray(kept, dtype=np.int64)
        state.put("kept", Scored(rows, (1.0 / (1.0 + np.arange(rows.size))).astype(np.float32), "relation"))
        graph = load_graph(index, GRAPH)
        src, dst = _edge_ends(index)
        emit_paths(index, state, provenance, graph, [[int(src[j]), int(dst[j])] for j in kept])
        provenance(index, state)
        state.mode, state.branch = "kg-beam", f"depth {depth}, width {self.width}, {len(kept)} relations"
        return state.retrieval()


def _edge_ends(index: IndexView) -> tuple[np.ndarray, np.ndarray]:
    graph = load_graph(index, GRAPH)
    e = edges_of(graph, NodeLink(graph=GRAPH), GRAPH)
    return e.src, e.dst


__all__ = ["ToG"]
