"""``hipporag2``: EA-GraphRAG's graph path, as HippoRAG 2 retrieves (EA-GraphRAG §3.4.2, Algorithm 1 lines 4-9).

Steps over the ``fact_graph`` structure (:mod:`paretorag.graphs.fact_graph`):

1. ``facts``: the top-5 facts by similarity to the question (``relation.facts``);
2. ``seeds``: entity weights = fact score / the entity's passage count, top-5 seeds
   (``node.facts``);
3. ``mentions`` (``hipporag2`` only): the graph nodes the question names, as more seeds
   (``node.mentions``);
4. ``ppr``: personalized PageRank (damping 0.5) from the seeds and the dense passage prior,
   passages ranked by their PPR score; dense retrieval when no fact matches
   (``chunk.ppr``).

The restart differs by variant. ``hipporag2-paper`` is HippoRAG 2's: the fact seeds plus
every passage's min-max normalized dense score times 0.05. ``hipporag2`` (the default,
tuned for the LLM-free spaCy facts on the train splits, see ``OFFLINE_PPR``) also seeds the
graph nodes the question names (``node.mentions``, weight 3) and weighs the dense prior 3.
``hipporag2-rerank`` is ``hipporag2-paper`` plus HippoRAG 2's LLM fact filter
(``relation.recognition``) after ``facts``: one call per question with a generative LLM;
with the extractive backend the filter passes the facts through (no call). Without one, the facts come
from spaCy and retrieval makes no LLM call. ``graph_path`` returns the passage ranking
alone, for methods that route or fuse it (EA-GraphRAG §3.4.3).
"""

from __future__ import annotations

from typing import Any

from ...types import Scored
from ..operators.hipporag2 import ChunkPPR, NodeFacts, NodeMentions, RelationFacts, RelationRecognition
from ..query import IndexView, QueryOptions, State
from .base import register
from .pipeline import Pipeline, Steps

# Measured on musique_train / hotpotqa_train with spaCy facts (README): HippoRAG 2's restart
# (fact seeds + 0.05 x every passage's dense score) lets the noisy spaCy-fact seeds lead and
# loses 7-12 points R@5 to dense retrieval. Offline, the question's own phrases that name a
# graph node are added as seeds (weight 3 / passage count) and the dense prior weighs 3.
OFFLINE_MENTIONS: dict[str, Any] = {"weight": 3.0}
OFFLINE_PPR: dict[str, Any] = {"k": 5, "passage_node_weight": 3.0}
PAPER = "ea-graphrag §3.1, §3.4.2, Algorithm 1 lines 4-9; HippoRAG 2 (Gutiérrez et al. 2025)"


@register
class HippoRAG2(Pipeline):
    """EA-GraphRAG's graph path (HippoRAG 2): fact retrieval, seed entities, PPR with a dense prior.

    Settings are the steps' (``facts__k``, ``seeds__k``, ``mentions__weight``,
    ``ppr__damping``, ``ppr__passage_node_weight``...), as in scikit-learn's ``Pipeline``.
    """

    name = "hipporag2"
    paper = PAPER
    mode = "graph"

    def default_steps(self) -> Steps:
        return [
            ("facts", RelationFacts(k=5)),
            ("seeds", NodeFacts(k=5)),
            ("mentions", NodeMentions(**OFFLINE_MENTIONS)),
            ("ppr", ChunkPPR(**OFFLINE_PPR)),
        ]

    def _branch(self, state: State) -> str:
        if not len(state.get("entity")):
            return "dense fallback (no fact matched)"
        return f"PPR from {len(state.get('entity'))} seed entities"


@register
class HippoRAG2Paper(HippoRAG2):
    """HippoRAG 2 with its own PPR restart: seeds plus 0.05 x every passage's dense score."""

    name = "hipporag2-paper"

    def default_steps(self) -> Steps:
        return [("facts", RelationFacts(k=5)), ("seeds", NodeFacts(k=5)), ("ppr", ChunkPPR(k=5))]


@register
class HippoRAG2Rerank(HippoRAG2):
    """HippoRAG 2 with its LLM fact filter (recognition memory), run when the LLM is generative."""

    name = "hipporag2-rerank"

    def default_steps(self) -> Steps:
        return [
            ("facts", RelationFacts(k=5)),
            ("rerank", RelationRecognition(k=5)),
            ("seeds", NodeFacts(k=5)),
            ("ppr", ChunkPPR(k=5)),  # the paper's restart: with an LLM the fact seeds are reliable
        ]


def graph_path(index: IndexView, question: str, k: int = 5, method: HippoRAG2 | None = None) -> Scored:
    """The graph path's passage ranking (chunk rows, best first) for ``question``."""
    m = method if method is not None else HippoRAG2()
    return m.run(index, State(question, QueryOptions(k=k))).get("chunk")


__all__ = ["HippoRAG2", "HippoRAG2Rerank", "graph_path"]
