"""ToG, Think-on-Graph (papers/unified-framework.txt Table 3 row "ToG"; ToG §2.2).

A composition of registered operators: the question's entities are linked to the KG
(``node.link``), the LLM-pruned beam search (``subgraph.beam``: relation Onehop and
Agent, node Onehop and Agent, for ``depth`` rounds of ``width``) keeps the relations
whose triples are the reasoning paths of the context, and their provenance
(``chunk.fromrel``) is the chunk result. Needs a generative LLM.
"""

from __future__ import annotations

from typing import ClassVar

from ..operators.beam import BeamSearch
from ..operators.chunk import ChunkFromRel
from ..operators.node import NodeLink
from ..operators.question import QuestionTerms
from .base import register
from .pipeline import Pipeline, Steps

GRAPH = "kg"


@register
class ToG(Pipeline):
    """ToG: LLM-pruned beam search over the KG (Table 3 row "ToG"; ToG §2.2).

    Settings (aliases of the steps'): ``depth`` (ToG's maximum depth D_max = 3) and
    ``width`` (beam width N = 3) of ``beam``; ``k`` (4), the provenance chunks kept.
    """

    name = "tog"
    paper = "unified-framework Table 3 (ToG); ToG §2.2 (beam search with relation and entity pruning)"
    aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        "depth": ("beam__depth",),
        "width": ("beam__width",),
        "k": ("provenance__k",),
    }
    context_chunks = False

    def default_steps(self) -> Steps:
        return [
            ("terms", QuestionTerms()),
            ("frontier", NodeLink(graph=GRAPH)),
            ("beam", BeamSearch(graph=GRAPH, source="frontier")),
            ("provenance", ChunkFromRel(graph=GRAPH, k=4, source="beam")),
        ]


__all__ = ["ToG"]
