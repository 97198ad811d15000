"""ToG's beam search over a knowledge graph (ToG §2.2; unified framework Table 3 row "ToG").

One registered operator, ``subgraph.beam``: for ``depth`` rounds, the frontier's
relations (``relation.onehop``) are pruned by the LLM to ``width`` (``relation.agent``);
the frontier's neighbours (``node.onehop``) at the ends of the kept relations, not yet
visited, are pruned by the LLM to ``width`` (``node.agent``) and become the next
frontier. The search stops after ``depth`` rounds or when the frontier is empty; ToG's
own stopping check (the LLM judging whether the paths suffice) is left out. The kept
relations are the result (in the order kept) and the reasoning paths of the context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...types import Scored
from .base import Operator, check_positive_int, load_graph, register_operator
from .common import edges_of, ranked
from .node import NodeAgent, NodeLink, NodeOneHop
from .relation import RelationAgent, RelationOneHop
from .subgraph import emit_paths

if TYPE_CHECKING:
    from ..query import IndexView, State


@register_operator
class BeamSearch(Operator):
    """LLM-pruned beam search from the seed entities (ToG §2.2); produces the kept relations.

    Parameters
    ----------
    graph : str
        The knowledge graph searched (``kg``).
    depth : int
        Search rounds (ToG's maximum depth D_max = 3).
    width : int
        Relations and entities kept per round (ToG's beam width N = 3).
    source : str
        The result holding the seed entities (``node.link``'s).
    """

    name = "subgraph.beam"
    kind = "subgraph"
    produces = "relation"
    consumes = ("entity",)
    uses_llm = True
    generative_only = True
    paper = "ToG §2.2 (beam search with relation and entity pruning); unified framework Table 3 (ToG)"

    def __init__(self, *, graph: str = "kg", depth: int = 3, width: int = 3, source: str = "entity") -> None:
        self.graph = graph
        self.depth = depth
        self.width = width
        self.source = source

    def parts(self) -> list[Operator]:
        g, w = self.graph, self.width
        return [
            RelationOneHop(graph=g, source="frontier"),
            RelationAgent(graph=g, k=w, source="relation"),
            NodeOneHop(graph=g, source="frontier"),
            NodeAgent(graph=g, k=w, source="candidates"),
        ]

    def run(self, index: IndexView, state: State) -> Scored:
        depth = check_positive_int(self, "depth", self.depth)
        width = check_positive_int(self, "width", self.width)
        g = self.graph
        rel_onehop, rel_agent, node_onehop, node_agent = self.parts()
        graph = load_graph(index, g)
        e = edges_of(graph, NodeLink(graph=g), g)
        state.put("frontier", state.get(self.source))
        kept: list[int] = []
        visited = set(state.get("frontier").ids.tolist())
        for _ in range(depth):
            if not len(state.get("frontier")):
                break
            rel_onehop(index, state)
            chosen = rel_agent(index, state).ids
            kept.extend(r for r in chosen.tolist() if r not in kept)
            ends = np.unique(np.concatenate([e.src[chosen], e.dst[chosen]]))
            near = node_onehop(index, state)
            keep = np.isin(near.ids, ends) & ~np.isin(near.ids, list(visited))
            state.put("candidates", Scored(near.ids[keep], near.scores[keep], "entity"))
            visited.update(node_agent(index, state).ids.tolist())
            state.put("frontier", state.get("entity"))
        emit_paths(index, state, self, graph, [[int(e.src[j]), int(e.dst[j])] for j in kept])
        state.mode, state.branch = "kg-beam", f"depth {depth}, width {width}, {len(kept)} relations"
        return ranked(kept, "relation")


__all__ = ["BeamSearch"]
