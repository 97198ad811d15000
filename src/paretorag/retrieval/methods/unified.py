"""The unified framework's methods on trees, passage graphs and knowledge graphs
(papers/unified-framework.txt §6.2, Table 3): RAPTOR, KGP, HippoRAG, G-retriever,
DALK and FastGraphRAG, each a :class:`~paretorag.retrieval.methods.pipeline.Pipeline` of the
registered operators in its row of Table 3 (ToG's beam search is in
:mod:`paretorag.retrieval.methods.tog`; GraphRAG's and LightRAG's in :mod:`paretorag.retrieval.methods.graphrag`).

Top-k settings are the paper's (k = 4 for chunks and entities, §7.1) unless the
method's own code says otherwise (noted per method). A query's ``k`` sets the last
chunk step's ``k``. Methods whose context is the graph alone (G-retriever, DALK; §7.2
observation 2, lessons L7-L8) put only paths in the context; their chunk result is the
provenance of those paths (the chunks the relations were extracted from), which is what
evaluation recall reads.
"""

from __future__ import annotations

from ..operators.chunk import ChunkAggregator, ChunkFromNode, ChunkFromRel
from ..operators.context import ContextGraph
from ..operators.node import NodeAgent, NodeLink, NodeOneHop, NodePPR, NodeTFIDF, NodeVDB
from ..operators.question import QuestionTerms
from ..operators.relation import RelationAggregator, RelationVDB
from ..operators.sparse import ChunkFuse
from ..operators.subgraph import SubgraphAgentPath, SubgraphKHopPath, SubgraphSteiner
from .base import register, register_preset
from .pipeline import Pipeline, Steps


@register
class Raptor(Pipeline):
    """RAPTOR, collapsed tree (Table 3 row "RAPTOR": node VDB; RAPTOR §3).

    The top-k nodes of every tree layer by similarity to the question (summaries and
    leaves alike), then their chunks, the summaries' texts kept in the context.
    ``search__k`` = 4 nodes (§7.1's k).
    """

    name = "raptor"
    paper = "unified-framework Table 3 (RAPTOR: node VDB over the tree); RAPTOR §3 (collapsed tree)"
    mode = "tree"

    def default_steps(self) -> Steps:
        return [
            ("search", NodeVDB(graph="raptor_tree", k=4)),
            ("chunks", ChunkFromNode(graph="raptor_tree", k=4, summaries=True)),
        ]


@register
class KGP(Pipeline):
    """KGP: TF-IDF seed passages, then the neighbours an LLM chooses (Table 3 row "KGP").

    The question's TF-IDF selects seed passages on the passage graph; their neighbours
    are listed to the LLM, which chooses the passages to visit next (KGP §3.2, the
    LLM-guided traversal, one step); seeds and chosen passages are fused. Needs a
    generative LLM.
    """

    name = "kgp"
    paper = "unified-framework Table 3 (KGP: node TF-IDF); KGP §3.2 (LLM-guided graph traversal)"
    mode = "passage-graph"

    def default_steps(self) -> Steps:
        g = "passage_graph"
        return [
            ("seeds", NodeTFIDF(graph=g, k=4)),
            ("neighbours", NodeOneHop(graph=g, k=30, source="seeds")),
            ("visit", NodeAgent(graph=g, k=4, max_candidates=30, source="neighbours")),
            ("seed_chunks", ChunkFromNode(graph=g, k=4, summaries=False, source="seeds")),
            ("visit_chunks", ChunkFromNode(graph=g, k=4, summaries=False, source="visit")),
            ("fuse", ChunkFuse(sources=("seed_chunks", "visit_chunks"), k=4)),
        ]


@register
class HippoRAG(Pipeline):
    """HippoRAG (Table 3 row "HippoRAG": node Link + PPR, relation and chunk Aggregator).

    The question's entities (spaCy; HippoRAG's query NER) are linked to their nearest
    KG nodes, each seed weighted by its node specificity ``1 / |P_i|`` (HippoRAG §3.2,
    ``spread__specificity``), personalized PageRank spreads from them over the KG with
    synonym edges (damping 0.5), every relation scores the sum of its entities' PPR
    scores and every chunk the sum of its relations' (HippoRAG §3.2). Without
    specificity, question nouns linked to hubs ("film", "director") drive the walk:
    the preset ``hipporag-no-specificity`` keeps that ablation (README, Evaluation).
    """

    name = "hipporag"
    paper = "unified-framework Table 3 (HippoRAG); HippoRAG §3.2 (retrieval)"
    mode = "kg"

    def default_steps(self) -> Steps:
        return [
            ("terms", QuestionTerms()),
            ("link", NodeLink(graph="kg")),
            ("spread", NodePPR(graph="kg", k=None, damping=0.5, source="link", specificity=True)),
            ("relations", RelationAggregator(graph="kg")),
            ("chunks", ChunkAggregator(graph="kg", k=4)),
        ]


register_preset(
    "hipporag-no-specificity",
    HippoRAG,
    "HippoRAG without node specificity: seeds restart by link similarity alone (ablation of HippoRAG §3.2)",
    spread__specificity=False,
)


@register
class GRetriever(Pipeline):
    """G-retriever (Table 3 row "G-retriever": node VDB, relation VDB, subgraph Steiner).

    The top-k entities and relations by similarity, then a Steiner tree joining them;
    the context is the tree's triples. The chunk result is their provenance.
    """

    name = "g-retriever"
    paper = "unified-framework Table 3 (G-retriever); G-Retriever §4 (subgraph retrieval)"
    mode = "kg-subgraph"
    context_chunks = False

    def default_steps(self) -> Steps:
        return [
            ("nodes", NodeVDB(graph="kg", k=4)),
            ("relations", RelationVDB(graph="kg", k=4)),
            ("tree", SubgraphSteiner(graph="kg", source="nodes", relations="relations")),
            ("provenance", ChunkFromRel(graph="kg", k=4, source="tree")),
        ]


@register
class DALK(Pipeline):
    """DALK (Table 3 row "DALK": node Link + Onehop + Agent, subgraph KhopPath + AgentPath).

    The question's entities are linked to the KG; paths of at most 2 hops joining them
    are found and the LLM keeps the useful ones (path-based evidence); the linked
    entities' neighbours are listed and the LLM keeps the useful ones (neighbour-based
    evidence). The context is the paths and the chosen entities; the chunk result is
    their provenance (the paths' relations and the chosen entities' chunks, fused).
    Needs a generative LLM.
    """

    name = "dalk"
    paper = "unified-framework Table 3 (DALK); DALK §3.2 (coarse-to-fine sampling)"
    mode = "kg-paths"
    context_chunks = False

    def default_steps(self) -> Steps:
        return [
            ("terms", QuestionTerms()),
            ("link", NodeLink(graph="kg")),
            ("paths", SubgraphKHopPath(graph="kg", max_hops=2, mode="all", source="link")),
            ("filter", SubgraphAgentPath(graph="kg", n_paths=4)),
            ("neighbours", NodeOneHop(graph="kg", k=30, source="link")),
            ("choose", NodeAgent(graph="kg", k=4, source="neighbours")),
            ("context", ContextGraph(graph="kg", entities=4, relations=0)),
            ("path_chunks", ChunkFromRel(graph="kg", k=4, source="filter")),
            ("entity_chunks", ChunkFromNode(graph="kg", k=4, summaries=False, source="choose")),
            ("provenance", ChunkFuse(sources=("path_chunks", "entity_chunks"), k=4)),
        ]


@register
class FastGraphRAG(Pipeline):
    """FastGraphRAG (Table 3 row "FastGraphRAG": node Link + VDB + PPR, relation and chunk Aggregator).

    PPR over the TKG is seeded from both the entities linked to the question's terms and
    the top entities by vector similarity to the question; relations and chunks are
    scored by aggregation as in HippoRAG; the top entities and relations go in the
    context with the chunks.
    """

    name = "fastgraphrag"
    paper = "unified-framework Table 3 (FastGraphRAG); circlemind fast-graphrag (PPR over a TKG)"
    mode = "tkg"

    def default_steps(self) -> Steps:
        return [
            ("terms", QuestionTerms()),
            ("link", NodeLink(graph="tkg")),
            ("search", NodeVDB(graph="tkg", k=4)),
            ("spread", NodePPR(graph="tkg", k=None, damping=0.5, source=("link", "search"))),
            ("relations", RelationAggregator(graph="tkg")),
            ("context", ContextGraph(graph="tkg", entities=4, relations=4)),
            ("chunks", ChunkAggregator(graph="tkg", k=4)),
        ]


__all__ = ["DALK", "KGP", "FastGraphRAG", "GRetriever", "HippoRAG", "Raptor"]
