"""``zeroshot`` and ``vanilla`` (unified framework §7, the two baselines).

- ``zeroshot``: the LLM answers from its own knowledge, no retrieval (no steps).
- ``vanilla``: one step, the chunk VDB operator: dense top-k chunks by cosine
  similarity to the question; default k = 5 (EA-GraphRAG's setting for passage
  retrieval).
"""

from __future__ import annotations

from ..operators.dense import ChunkVDB
from ..query import State
from .base import register
from .pipeline import Pipeline, Steps


@register
class ZeroShot(Pipeline):
    """Answer without retrieval (unified framework, ZeroShot baseline)."""

    name = "zeroshot"
    paper = "unified-framework §7 (ZeroShot)"
    mode = "none"

    def _branch(self, state: State) -> str:
        return "no retrieval"


@register
class Vanilla(Pipeline):
    """Dense top-k retrieval (unified framework, VanillaRAG): ``search`` = chunk VDB, k = 5."""

    name = "vanilla"
    paper = "unified-framework §7 (VanillaRAG)"
    mode = "dense"

    def default_steps(self) -> Steps:
        return [("search", ChunkVDB(k=5))]

    def _branch(self, state: State) -> str:
        return f"dense top-{len(state.get('chunk'))}"
