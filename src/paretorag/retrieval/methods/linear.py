"""``linearrag``: LinearRAG's relation-free Tri-Graph retrieval (no LLM to index or to query).

LinearRAG (Zhuang et al., "LinearRAG: Linear Graph Retrieval Augmented Generation on
Large-scale Corpora", ICLR 2026; official code github.com/DEEP-PolyU/LinearRAG) builds
its graph from spaCy named entities, sentences and passages instead of LLM-extracted
relations (§3.1, the ``linear_graph`` structure, :mod:`paretorag.graphs.linear`), and
retrieves in one step (:mod:`paretorag.retrieval.operators.linear`): the question's entities are
matched to graph entities, activate further entities through the sentences most
similar to the question ("semantic bridging", §3.2), and a personalized PageRank from
those entities and the dense passage scores ranks the passages.

Index cost: one spaCy NER pass over the passages and one embedding per distinct entity
and per sentence that holds an entity (most of the time). Query cost: one question
embedding, NER of the question, one embedding per question entity, a dense score for
every passage, and one sparse PPR over entities and passages.
"""

from __future__ import annotations

from ..operators.linear import ChunkLinearPPR
from ..query import State
from .base import register
from .pipeline import Pipeline, Steps


@register
class LinearRAG(Pipeline):
    """LinearRAG: entity activation by semantic bridging, then PPR over the Tri-Graph: ``rank``.

    ``get_method("linearrag", rank__iteration_threshold=0.4)`` changes a setting of the
    query (:class:`~paretorag.retrieval.operators.linear.ChunkLinearPPR`); the graph's settings are
    the builder's (``--set linear_graph.adjacent=false``).
    """

    name = "linearrag"
    paper = "LinearRAG (Zhuang et al., ICLR 2026) §3: Tri-Graph of entities, sentences, passages; semantic bridging; PPR"
    mode = "graph"

    def default_steps(self) -> Steps:
        return [("rank", ChunkLinearPPR(k=5))]

    def _branch(self, state: State) -> str:
        info = state.info.get("linearrag", {})
        if not info.get("activated"):
            return "dense: no question entity"
        return f"PPR from {info['seeds']} seed entities, {info['activated']} activated"


__all__ = ["LinearRAG"]
