"""GraphRAG's communities and their reports (GraphRAG §2.3-2.4; unified framework §5 community index).

Hierarchical Leiden as GraphRAG's ``hierarchical_leiden`` (graspologic,
``max_cluster_size=10``): Leiden (igraph + leidenalg, modularity, edge weights, GraphRAG's
seed ``0xDEADBEEF``) partitions the graph into the level-0 communities; every community
with more than ``max_cluster_size`` nodes is partitioned again on its own subgraph into
level-1 communities, and so on while a community can still be split. Level 0 is the
coarsest; ``parent`` links a community to the one it was split from. Single-node
communities (isolated entities) get no community.

A report per community:

- with a generative LLM: GraphRAG's community report prompt over the community's
  entities and relationships (CSV tables, cut at ``max_input_tokens``), answered as JSON
  with a title, a summary, findings and a rating 0-10; parsed tolerantly, retried once,
  and replaced by the extractive report if still unusable (counted in
  ``stats["fallback_reports"]``);
- without an LLM: an extractive report: the community's entity names, most central
  first (weighted degree inside the community), then the descriptions of its heaviest
  relations; rating = ``10 * log(1 + internal edge weight) / log(1 + the largest one)``,
  a size-and-degree score in [0, 10].

The source graph is the ``tkg`` structure (fixed: ``requires`` is a class attribute).
Output: that TKG graph with ``communities`` filled (levels, parents, members, reports,
ratings, report vectors), so one structure holds both.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import MissingDependencyError
from ..params import check_positive_int
from ..providers.base import is_generative
from ..storage.structures import StructureData
from .base import BuildContext, Builder, register_builder
from .graph import Communities, Graph, csr, graph_from_structure, graph_to_structure
from .kg_extract import ExtractStats, complete_parsed
from .kg_prompts import JSON_RETRY, parse_json, request

LEIDEN_SEED = 0xDEADBEEF

REPORT_PROMPT = """You are an AI assistant that helps a human analyst to perform general information discovery. Information discovery is the process of identifying and assessing relevant information associated with certain entities (e.g., organizations and individuals) within a network.

# Goal
Write a comprehensive report of a community, given a list of entities that belong to the community as well as their relationships. The report will be used to inform decision-makers about information associated with the community and their potential impact.

# Report Structure
The report should include the following sections:
- TITLE: community's name that represents its key entities - title should be short but specific.
- SUMMARY: An executive summary of the community's overall structure, how its entities are related to each other, and significant information associated with its entities.
- IMPACT SEVERITY RATING: a float score between 0-10 that represents the severity of IMPACT posed by entities within the community.
- RATING EXPLANATION: Give a single sentence explanation of the IMPACT severity rating.
- DETAILED FINDINGS: A list of 5-10 key insights about the community.

Return output as a well-formed JSON-formatted string with the following format:
{{"title": <report_title>, "summary": <executive_summary>, "rating": <impact_severity_rating>, "rating_explanation": <rating_explanation>, "findings": [{{"summary": <insight_1_summary>, "explanation": <insight_1_explanation>}}]}}

# Real Data
Use the following text for your answer. Do not make anything up in your answer.

Text:
{input_text}

Output:"""


def leiden_levels(
    adj: sp.csr_matrix, *, max_cluster_size: int, seed: int = LEIDEN_SEED
) -> list[tuple[int, int, np.ndarray]]:
    """Hierarchical Leiden communities as ``(level, parent, node rows)``, parents before children."""
    try:
        import igraph as ig
        import leidenalg
    except ImportError as exc:
        raise MissingDependencyError(
            "GraphRAG communities need igraph and leidenalg: pip install igraph leidenalg"
        ) from exc

    def split(rows: np.ndarray) -> list[np.ndarray]:
        sub = sp.triu(adj[rows][:, rows], k=1).tocoo()
        g = ig.Graph(n=rows.size, edges=np.stack([sub.row, sub.col], 1).tolist(), directed=False)
        part = leidenalg.find_partition(
            g, leidenalg.ModularityVertexPartition, weights=sub.data.tolist(), seed=seed
        )
        labels = np.asarray(part.membership)
        return [rows[labels == c] for c in range(int(labels.max()) + 1 if labels.size else 0)]

    out: list[tuple[int, int, np.ndarray]] = []
    todo: list[tuple[int, int, np.ndarray]] = [(0, -1, np.arange(adj.shape[0]))]
    while todo:
        level, parent, rows = todo.pop(0)
        parts = [p for p in split(rows) if p.size > 1]
        if level > 0 and len(parts) <= 1:
            continue  # cannot be split further: the parent stays a leaf
        for p in sorted(parts, key=lambda r: int(r[0])):
            out.append((level, parent, p))
            if p.size > max_cluster_size:
                todo.append((level + 1, len(out) - 1, p))
    return out


def _inside(graph: Graph, rows: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Edge records inside a community (heaviest first) and the members' weighted degree inside it."""
    inside = np.zeros(graph.n_nodes, bool)
    inside[rows] = True
    e = graph.edges
    if e is None:
        return [], np.zeros(rows.size)
    idx = np.flatnonzero(inside[e.src] & inside[e.dst])
    idx = idx[np.argsort(-e.weight[idx], kind="stable")]
    sub = graph.adjacency[rows][:, rows]
    return idx.tolist(), np.asarray(sub.sum(axis=1)).ravel()


def extractive_report(graph: Graph, rows: np.ndarray, max_relations: int = 10) -> tuple[str, float]:
    """The LLM-free report of a community (module docstring) and its internal edge weight."""
    edges, degree = _inside(graph, rows)
    order = rows[np.argsort(-degree, kind="stable")]
    names = [graph.names[int(i)] for i in order]
    lines = [f"# {', '.join(names[:3])}", f"Entities: {', '.join(names)}."]
    e = graph.edges
    if e is not None:
        lines += [f"- {e.text(j, graph.names)}" for j in edges[:max_relations]]
    return "\n".join(lines), float(degree.sum() / 2)


def _tables(graph: Graph, rows: np.ndarray) -> str:
    edges, degree = _inside(graph, rows)
    order = rows[np.argsort(-degree, kind="stable")]
    desc = graph.descriptions
    ent = ["id,entity,description"] + [
        f"{k},{graph.names[int(i)]},{(desc[int(i)] if desc else '').replace(chr(10), ' ')}"
        for k, i in enumerate(order)
    ]
    e = graph.edges
    rel = ["id,source,target,description"]
    if e is not None:
        rel += [
            f"{k},{graph.names[int(e.src[j])]},{graph.names[int(e.dst[j])]},{(e.description[j] if e.description else '').replace(chr(10), ' ')}"
            for k, j in enumerate(edges)
        ]
    return "-----Entities-----\n" + "\n".join(ent) + "\n\n-----Relationships-----\n" + "\n".join(rel)


def parse_report(text: str) -> tuple[str, float] | None:
    """GraphRAG's JSON report as ``(markdown text, rating)``; ``None`` if it has no title or summary."""
    data = parse_json(text)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("title"), str)
        or not isinstance(data.get("summary"), str)
    ):
        return None
    try:
        rating = min(10.0, max(0.0, float(data.get("rating", 0.0))))
    except (TypeError, ValueError):
        rating = 0.0
    parts = [f"# {data['title']}", data["summary"]]
    for f in data.get("findings") or []:
        if isinstance(f, dict):
            parts.append(f"## {f.get('summary', '')}\n{f.get('explanation', '')}".strip())
    return "\n\n".join(p for p in parts if p), rating


@register_builder
class CommunityReports(Builder):
    """Hierarchical Leiden communities of the TKG and their reports (GraphRAG §2.3-2.4; §5).

    Parameters
    ----------
    max_cluster_size : int
        Communities larger than this are split again (GraphRAG: 10).
    max_input_tokens : int
        Context of one report prompt, entity and relationship rows cut to fit (GraphRAG: 8000).
    max_tokens : int
        Generation limit per report (GraphRAG: 2000).
    max_concurrency : int, optional
        Report calls in flight.
    """

    name = "communities"
    requires = ("tkg",)
    uses_llm = True
    runtime_params = ("max_concurrency",)

    def __init__(
        self,
        *,
        max_cluster_size: int = 10,
        max_input_tokens: int = 8000,
        max_tokens: int = 2000,
        max_concurrency: int | None = None,
    ) -> None:
        self.max_cluster_size = max_cluster_size
        self.max_input_tokens = max_input_tokens
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency

    def _cut(self, ctx: BuildContext, text: str) -> str:
        lines = text.split("\n")
        sizes = np.cumsum(ctx.tokenizer.count(lines))
        return "\n".join(lines[: max(1, int((sizes <= self.max_input_tokens).sum()))])

    def build(self, ctx: BuildContext) -> StructureData:
        for name in ("max_cluster_size", "max_input_tokens", "max_tokens"):
            check_positive_int(self, name, getattr(self, name))
        if self.max_concurrency is not None:
            check_positive_int(self, "max_concurrency", self.max_concurrency)
        source = ctx.structure(self.requires[0])  # "tkg" (G2ConS's core variant: "core_tkg")
        graph = graph_from_structure(source)
        with ctx.progress.task("communities (Leiden)", total=None):
            comms = leiden_levels(graph.adjacency, max_cluster_size=self.max_cluster_size)
        llm = ctx.llm(f"index.{self.name}")
        base = [extractive_report(graph, rows) for _, _, rows in comms]
        reports = [r for r, _ in base]
        top = max((w for _, w in base), default=0.0)
        rating = [10 * math.log1p(w) / math.log1p(top) if top > 0 else 0.0 for _, w in base]
        stats = ExtractStats()
        fallback = 0
        if is_generative(llm) and comms:
            reqs = [
                request(
                    [], REPORT_PROMPT.format(input_text=self._cut(ctx, _tables(graph, rows))), self.max_tokens
                )
                for _, _, rows in comms
            ]
            with ctx.progress.task("community reports (LLM)", total=len(reqs)) as bar:
                parsed, _ = complete_parsed(llm, reqs, parse_report, JSON_RETRY, stats, self.max_concurrency)
                bar.advance(len(reqs))
            for i, p in enumerate(parsed):
                if p is None:
                    fallback += 1
                else:
                    reports[i], rating[i] = p
        n_c = len(comms)
        rows_ = (
            np.concatenate([np.full(r.size, i) for i, (_, _, r) in enumerate(comms)])
            if comms
            else np.zeros(0, int)
        )
        cols = np.concatenate([r for _, _, r in comms]) if comms else np.zeros(0, int)
        members = csr(
            sp.coo_matrix((np.ones(rows_.size, np.float32), (rows_, cols)), shape=(n_c, graph.n_nodes))
        )
        dim = int(ctx.embedder.dim)
        vectors = (
            np.asarray(ctx.embedder.embed(reports), np.float32) if reports else np.zeros((0, dim), np.float32)
        )
        communities = Communities(
            level=np.asarray([c[0] for c in comms], np.int64),
            parent=np.asarray([c[1] for c in comms], np.int64),
            members=members,
            reports=reports,
            rating=np.asarray(rating, np.float32),
            vectors=vectors,
        )
        out = Graph(
            graph.names, graph.kinds, graph.adjacency, graph.node_chunks, graph.edges, graph.descriptions,
            graph.node_vectors, graph.edge_vectors, communities, graph.directed,
        )  # fmt: skip
        levels = int(communities.level.max()) + 1 if n_c else 0
        summary: dict[str, Any] = {"communities": n_c, "levels": levels, "llm_calls": stats.calls}
        info = {
            "retries": stats.retries,
            "fallback_reports": fallback,
            "source": source.meta.get("summary", {}),
        }
        meta = {
            "settings": self.get_params(deep=False),
            "stats": info,
            "summary": summary,
            "source_meta": source.meta.get("settings", {}),
        }
        return graph_to_structure(out, meta=meta)


__all__ = ["REPORT_PROMPT", "CommunityReports", "extractive_report", "leiden_levels", "parse_report"]
