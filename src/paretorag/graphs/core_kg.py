"""G2ConS's core knowledge graphs: a KG built on the core chunks only (G2ConS §3.2, §3.2.1).

G2ConS ranks chunks by the PageRank of their concepts and keeps the top kappa as core
chunks (the ``concept_graph`` structure's ``core_rows``); its second retrieval path is a
knowledge graph built by an LLM on those chunks only ("core-KG"), so that the costly
extraction runs on kappa * n chunks instead of n. These builders are ``kg``, ``tkg``,
``rkg`` and ``communities`` restricted that way, under the names ``core_kg``,
``core_tkg``, ``core_rkg`` and ``core_communities``: the other chunks contribute no
entity or relation (and cost no LLM call), while chunk columns keep the index's rows.
With the extractive backend they are built from spaCy like the full ones.
"""

from __future__ import annotations

from typing import Any

from ..storage.structures import StructureData
from .base import BuildContext, register_builder
from .communities import CommunityReports
from .kg import KnowledgeGraph, RichKG, TextualKG
from .kg_extract import ExtractStats
from .kg_prompts import Records

CORE = {"kg": "core_kg", "tkg": "core_tkg", "rkg": "core_rkg", "communities": "core_communities"}
"""Each knowledge-graph structure and its core-chunk variant."""


class _CoreChunks:
    """The build context with only the core chunks visible to extraction."""

    def __init__(self, ctx: BuildContext, rows: list[int]) -> None:
        self._ctx = ctx
        self.rows = rows
        self.chunks = _Texts(ctx, rows)  # extraction reads the chunks' texts only

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class _Texts:
    def __init__(self, ctx: BuildContext, rows: list[int]) -> None:
        self.texts = [ctx.chunks.texts[r] for r in rows]

    def __len__(self) -> int:
        return len(self.texts)


def core_rows(ctx: BuildContext) -> list[int]:
    """The core chunk rows of the index's concept graph (best first), in row order."""
    return sorted(int(r) for r in ctx.structure("concept_graph").arrays["core_rows"].tolist())


class _CoreKG:
    """Mixin: extract from the core chunks only; the other chunks get no records."""

    def _records(self, ctx: BuildContext, stats: ExtractStats) -> tuple[list[Records], str]:
        rows = core_rows(ctx)
        recs, backend = super()._records(_CoreChunks(ctx, rows), stats)  # type: ignore[misc]
        out = [Records() for _ in range(len(ctx.chunks))]
        for row, rec in zip(rows, recs, strict=True):
            out[row] = rec
        return out, backend

    def build(self, ctx: BuildContext) -> StructureData:
        data: StructureData = super().build(ctx)  # type: ignore[misc]
        data.meta["core_chunks"] = len(core_rows(ctx))
        return data


@register_builder
class CoreKnowledgeGraph(_CoreKG, KnowledgeGraph):
    """HippoRAG's KG on G2ConS's core chunks only (G2ConS §3.2.1 core-KG; settings as ``kg``)."""

    name = "core_kg"
    requires = ("concept_graph",)


@register_builder
class CoreTextualKG(_CoreKG, TextualKG):
    """GraphRAG's TKG on G2ConS's core chunks only (G2ConS §3.2.1 core-KG; settings as ``tkg``)."""

    name = "core_tkg"
    requires = ("concept_graph",)


@register_builder
class CoreRichKG(_CoreKG, RichKG):
    """LightRAG's RKG on G2ConS's core chunks only (G2ConS §3.2.1 core-KG; settings as ``rkg``)."""

    name = "core_rkg"
    requires = ("concept_graph",)


@register_builder
class CoreCommunityReports(CommunityReports):
    """GraphRAG's communities of the core TKG (G2ConS §3.2.1: MS-GraphRAG on the core chunks)."""

    name = "core_communities"
    requires = ("core_tkg",)


__all__ = ["CORE", "CoreCommunityReports", "CoreKnowledgeGraph", "CoreRichKG", "CoreTextualKG", "core_rows"]
