"""GraphRAG's and LightRAG's methods and the unified framework's two new ones
(papers/unified-framework.txt Table 3, Table 9, §7.3 Exp. 4-5), each a
:class:`~paretorag.retrieval.methods.pipeline.Pipeline` of registered operators.

- ``graphrag-local`` (LGraphRAG), ``graphrag-global`` (GGraphRAG / RGraphRAG, map-reduce);
- ``lightrag-local``, ``lightrag-global``, ``lightrag-hybrid`` (L/G/HLightRAG; the
  question's keywords by LightRAG's prompt, spaCy terms with the extractive backend);
- ``vgraphrag`` (Exp. 5, Table 9: LGraphRAG's entities and relations, then communities
  and chunks by vector search) and ``cheaprag`` (§7.3 Exp. 4: communities and chunks by
  vector search, answered by map-reduce).

GraphRAG's methods read the ``communities`` structure: the TKG with its Leiden
communities and reports in one graph, so entity, relation and community rows agree.
Top-k settings are §7.1's k = 4. The context is the chunks first, then the entities'
and relations' descriptions and the community reports (``context.graph``,
``community.*``).
"""

from __future__ import annotations

from ..operators.chunk import ChunkFromRel, ChunkOccurrence
from ..operators.community import CommunityEntity, CommunityLayer, CommunityVDB
from ..operators.context import ContextGraph
from ..operators.dense import ChunkVDB
from ..operators.node import NodeRelNode, NodeVDB
from ..operators.question import QuestionKeywords
from ..operators.relation import RelationOneHop, RelationVDB
from ..operators.sparse import ChunkFuse
from .base import register
from .pipeline import Pipeline, Steps

C = "communities"  # the TKG with its communities


@register
class GraphRAGLocal(Pipeline):
    """GraphRAG local search (Table 3 row "LGraphRAG": node VDB, relation Onehop,
    chunk Occurrence, community Entity; GraphRAG's local search context)."""

    name = "graphrag-local"
    paper = "unified-framework Table 3 (LGraphRAG); GraphRAG local search"
    mode = "tkg-local"

    def default_steps(self) -> Steps:
        return [
            ("entities", NodeVDB(graph=C, k=4)),
            ("relations", RelationOneHop(graph=C)),
            ("chunks", ChunkOccurrence(graph=C, k=4)),
            ("communities", CommunityEntity(graph=C, k=4, level=2)),
            ("context", ContextGraph(graph=C, entities=4, relations=4)),
        ]


@register
class GraphRAGGlobal(Pipeline):
    """GraphRAG global search (Table 3 row "RGraphRAG": community Layer; answered by map-reduce).

    Every community report of levels 0-2 (GraphRAG's default level 2), best rated first,
    at most 512 (``global_max_consider_community``); each batch of reports answers the
    question with scored points, and the best points are reduced into the answer
    (:func:`paretorag.answering.answer.map_reduce`). Its context has no chunks: recall over chunks
    does not apply.
    """

    name = "graphrag-global"
    paper = "unified-framework Table 3 (RGraphRAG / GGraphRAG), §6.3 map-reduce; GraphRAG §2.6"
    mode = "communities"
    generation = "map-reduce"

    def default_steps(self) -> Steps:
        return [("communities", CommunityLayer(graph=C, level=2, k=512))]


@register
class LightRAGLocal(Pipeline):
    """LightRAG local (Table 3 row "LLightRAG": node VDB, relation Onehop, chunk Occurrence).

    The entities nearest the question's low-level keywords, their relations, and the
    chunks holding both ends of most of them (LightRAG §3.2).
    """

    name = "lightrag-local"
    paper = "unified-framework Table 3 (LLightRAG); LightRAG §3.2 (low-level retrieval)"
    mode = "rkg-local"

    def default_steps(self) -> Steps:
        return [
            ("keywords", QuestionKeywords()),
            ("entities", NodeVDB(graph="rkg", k=4, query="terms")),
            ("relations", RelationOneHop(graph="rkg")),
            ("chunks", ChunkOccurrence(graph="rkg", k=4)),
            ("context", ContextGraph(graph="rkg", entities=4, relations=4)),
        ]


@register
class LightRAGGlobal(Pipeline):
    """LightRAG global (Table 3 row "GLightRAG": relation VDB, node FromRel, chunk FromRel).

    The relations nearest the question's high-level keywords, their entities, and the
    chunks they were extracted from (LightRAG §3.2).
    """

    name = "lightrag-global"
    paper = "unified-framework Table 3 (GLightRAG); LightRAG §3.2 (high-level retrieval)"
    mode = "rkg-global"

    def default_steps(self) -> Steps:
        return [
            ("keywords", QuestionKeywords()),
            ("relations", RelationVDB(graph="rkg", k=4, query="keywords")),
            ("entities", NodeRelNode(graph="rkg")),
            ("chunks", ChunkFromRel(graph="rkg", k=4)),
            ("context", ContextGraph(graph="rkg", entities=4, relations=4)),
        ]


@register
class LightRAGHybrid(Pipeline):
    """LightRAG hybrid (Table 3 row "HLightRAG": node VDB + FromRel, relation Onehop + VDB,
    chunk Occurrence + FromRel): the local and global paths, chunks fused by rank."""

    name = "lightrag-hybrid"
    paper = "unified-framework Table 3 (HLightRAG); LightRAG §3.2 (hybrid)"
    mode = "rkg-hybrid"

    def default_steps(self) -> Steps:
        g = "rkg"
        return [
            ("keywords", QuestionKeywords()),
            ("local_entities", NodeVDB(graph=g, k=4, query="terms")),
            ("local_relations", RelationOneHop(graph=g, source="local_entities")),
            ("local_chunks", ChunkOccurrence(graph=g, k=4, source="local_relations")),
            ("global_relations", RelationVDB(graph=g, k=4, query="keywords")),
            ("global_entities", NodeRelNode(graph=g, source="global_relations")),
            ("global_chunks", ChunkFromRel(graph=g, k=4, source="global_relations")),
            (
                "local_context",
                ContextGraph(
                    graph=g,
                    entities=4,
                    relations=4,
                    entity_source="local_entities",
                    relation_source="local_relations",
                ),
            ),
            (
                "global_context",
                ContextGraph(
                    graph=g,
                    entities=4,
                    relations=4,
                    entity_source="global_entities",
                    relation_source="global_relations",
                ),
            ),
            ("chunks", ChunkFuse(sources=("local_chunks", "global_chunks"), k=4)),
        ]


@register
class VGraphRAG(Pipeline):
    """VGraphRAG (Table 9, §7.2 Exp. 5): LGraphRAG's entities and relations, then the
    communities and chunks nearest the question (community VDB, chunk VDB; App. B.1)."""

    name = "vgraphrag"
    paper = "unified-framework §7.2 Exp. 5, Table 9-10 (VGraphRAG), App. B.1 (community and chunk VDB)"
    mode = "tkg-vector"

    def default_steps(self) -> Steps:
        return [
            ("entities", NodeVDB(graph=C, k=4)),
            ("relations", RelationOneHop(graph=C)),
            ("context", ContextGraph(graph=C, entities=4, relations=4)),
            ("communities", CommunityVDB(graph=C, k=4)),
            ("chunks", ChunkVDB(k=4)),
        ]


@register
class CheapRAG(Pipeline):
    """CheapRAG (§7.3 Exp. 4): the communities and chunks nearest the question (community
    VDB, chunk VDB), answered by map-reduce: a few useful communities instead of every one."""

    name = "cheaprag"
    paper = "unified-framework §7.3 Exp. 4 (CheapRAG), App. B.1"
    mode = "communities-vector"
    generation = "map-reduce"

    def default_steps(self) -> Steps:
        return [("communities", CommunityVDB(graph=C, k=4)), ("chunks", ChunkVDB(k=4))]


__all__ = [
    "CheapRAG",
    "GraphRAGGlobal",
    "GraphRAGLocal",
    "LightRAGGlobal",
    "LightRAGHybrid",
    "LightRAGLocal",
    "VGraphRAG",
]
