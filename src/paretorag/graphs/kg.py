"""Knowledge graphs KG, TKG and RKG (unified framework §4, Table 2; node and relationship indexes, §5).

- ``kg`` (HippoRAG §3.1): entities and ``(subject, relation, object)`` triples per chunk,
  plus synonym edges between entities whose name vectors are close (HippoRAG §3.1:
  cosine >= 0.8), stored as edge records with relation ``"synonym"``.
- ``tkg`` (GraphRAG §2.2, LightRAG, FastGraphRAG): typed entities with descriptions and
  relations with descriptions.
- ``rkg`` (LightRAG §3.1): a TKG whose relations also carry keywords.

The backend follows the index's LLM: a generative one runs each paper's prompts
(:mod:`paretorag.graphs.kg_extract`); the default ``extractive`` backend (not generative)
builds the same graph types from spaCy with 0 LLM calls.

Merging (GraphRAG / LightRAG "entity resolution"): entities are unified by normalized
name (:func:`paretorag.providers.nlp_kg.kg_name`); an entity's type is its most frequent
type; descriptions are the distinct descriptions joined by new lines, and summarized by
the LLM (GraphRAG's summarize-descriptions prompt) only when they exceed
``summary_max_tokens`` (without an LLM: cut to the first descriptions that fit). KG edge
records are distinct triples (directed ``subject -> object``); TKG / RKG edge records are
entity pairs (unordered, as GraphRAG merges them), keywords merged. An edge weight is the
number of times the triple / pair was extracted; the adjacency is symmetric.

Vectors (§5): KG nodes by entity name, TKG / RKG nodes by ``name description``
(LightRAG); edges by ``"src relation dst: description"``; one embedder call each.
Nodes are sorted by name, so a build is deterministic.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..errors import SettingError
from ..kernels.knn import knn_pairs
from ..params import check_fraction, check_nonneg_int, check_positive_int
from ..providers.base import is_generative, user_prompt
from ..providers.nlp_kg import kg_name
from ..providers.wrappers import complete_many
from .base import BuildContext, Builder, StructureData, register_builder
from .graph import Edges, Graph, csr, graph_to_structure
from .kg_extract import ExtractStats, graphrag_records, hipporag_records, parsed_chunks, spacy_records
from .kg_prompts import GRAPHRAG_TYPES, LIGHTRAG_TYPES, SUMMARIZE_DESCRIPTIONS, Records


def merge_records(per_chunk: Sequence[Records], n_chunks: int, kind: str) -> dict[str, Any]:
    """Entities and relations of all chunks merged by normalized name (see the module docstring).

    Returns ``names``, ``kinds``, ``node_desc`` (lists of distinct descriptions),
    ``node_chunks`` (CSR counts) and the edge lists ``src``, ``dst``, ``weight``,
    ``edge_chunks``, ``relation``, ``edge_desc``, ``keywords``.
    """
    types: dict[str, Counter[str]] = {}
    descs: dict[str, dict[str, None]] = {}
    mentions: list[tuple[str, int]] = []
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    fallback = "entity" if kind == "kg" else "UNKNOWN"
    for row, rec in enumerate(per_chunk):
        for raw, typ, desc in rec.entities:
            name = kg_name(raw)
            if name:
                types.setdefault(name, Counter())[typ or fallback] += 1
                if desc:
                    descs.setdefault(name, {})[desc.strip()] = None
                mentions.append((name, row))
        for raw_s, raw_o, rel, desc, kw in rec.relations:
            s, o = kg_name(raw_s), kg_name(raw_o)
            if not s or not o or s == o:
                continue
            r = " ".join(rel.lower().split())
            key = (s, r, o) if kind == "kg" else (min(s, o), "", max(s, o))
            e = edges.setdefault(key, {"w": 0, "rows": [], "rel": {}, "desc": {}, "kw": {}})
            e["w"] += 1
            e["rows"].append(row)
            if r:
                e["rel"][r] = None
            if desc:
                e["desc"][desc.strip()] = None
            for k in kw.split(","):
                if k.strip():
                    e["kw"][k.strip().lower()] = None
            for name in (s, o):
                types.setdefault(name, Counter())
                mentions.append((name, row))
    names = sorted(types)
    ids = {n: i for i, n in enumerate(names)}
    kinds = [types[n].most_common(1)[0][0] if types[n] else fallback for n in names]
    m_rows = np.fromiter((ids[n] for n, _ in mentions), dtype=np.int64, count=len(mentions))
    m_cols = np.fromiter((r for _, r in mentions), dtype=np.int64, count=len(mentions))
    node_chunks = csr(
        sp.coo_matrix((np.ones(m_rows.size, np.float32), (m_rows, m_cols)), shape=(len(names), n_chunks))
    )
    keys = sorted(edges)
    e_rows = [i for i, k in enumerate(keys) for _ in edges[k]["rows"]]
    e_cols = [r for k in keys for r in edges[k]["rows"]]
    edge_chunks = csr(
        sp.coo_matrix((np.ones(len(e_rows), np.float32), (e_rows, e_cols)), shape=(len(keys), n_chunks))
    )
    return {
        "names": names,
        "kinds": kinds,
        "node_desc": [list(descs.get(n, {})) for n in names],
        "node_chunks": node_chunks,
        "src": np.asarray([ids[k[0]] for k in keys], dtype=np.int64),
        "dst": np.asarray([ids[k[2]] for k in keys], dtype=np.int64),
        "weight": np.asarray([edges[k]["w"] for k in keys], dtype=np.float32),
        "edge_chunks": edge_chunks,
        "relation": ["; ".join(edges[k]["rel"]) for k in keys],
        "edge_desc": [list(edges[k]["desc"]) for k in keys],
        "keywords": [", ".join(edges[k]["kw"]) for k in keys],
    }


class _KnowledgeGraph(Builder):
    """Shared build of ``kg`` / ``tkg`` / ``rkg``; subclasses set ``kind``."""

    kind: ClassVar[str] = "kg"
    uses_llm = True
    runtime_params = ("max_concurrency", "n_process", "batch_size")

    max_tokens: int
    max_concurrency: int | None
    n_process: int | None
    batch_size: int
    # kg only
    synonyms: bool
    synonym_threshold: float
    synonym_k: int
    # tkg / rkg only
    entity_types: Sequence[str]
    max_gleaning: int
    summary_max_tokens: int

    def _records(self, ctx: BuildContext, stats: ExtractStats) -> tuple[list[Records], str]:
        texts = list(ctx.chunks.texts)
        llm = ctx.llm(f"index.{self.name}")
        if is_generative(llm):
            if self.kind == "kg":
                recs, st = hipporag_records(
                    llm,
                    texts,
                    max_tokens=self.max_tokens,
                    progress=ctx.progress,
                    max_concurrency=self.max_concurrency,
                )
            else:
                recs, st = graphrag_records(
                    llm,
                    self.kind,
                    texts,
                    entity_types=tuple(self.entity_types),
                    max_gleaning=self.max_gleaning,
                    max_tokens=self.max_tokens,
                    progress=ctx.progress,
                    max_concurrency=self.max_concurrency,
                )
            stats.calls, stats.retries, stats.unparsed = st.calls, st.retries, st.unparsed
            return recs, "llm"
        n_process = self.n_process or max(1, min(int(ctx.workers or 1), os.cpu_count() or 1))
        check_positive_int(self, "n_process", n_process)
        exs, _ = parsed_chunks(
            ctx,
            n_process,
            check_positive_int(self, "batch_size", self.batch_size),
            f"{self.name.upper()} (spaCy)",
        )
        return [spacy_records(e) for e in exs], "spacy"

    def _descriptions(
        self, ctx: BuildContext, names: list[str], lists: list[list[str]], stats: ExtractStats
    ) -> list[str]:
        """Merged descriptions; the LLM summarizes those over ``summary_max_tokens`` (GraphRAG)."""
        limit = self.summary_max_tokens
        joined = ["\n".join(d) for d in lists]
        counts = ctx.tokenizer.count(joined) if joined else []
        long = [i for i, c in enumerate(counts) if c > limit and len(lists[i]) > 1]
        if not long:
            return joined
        llm = ctx.llm(f"index.{self.name}")
        if is_generative(llm):
            reqs = [
                user_prompt(
                    SUMMARIZE_DESCRIPTIONS.format(name=names[i], descriptions="\n".join(lists[i])),
                    max_tokens=limit,
                )
                for i in long
            ]
            for i, out in zip(long, complete_many(llm, reqs, self.max_concurrency), strict=True):
                joined[i] = out.text.strip() or joined[i]
            stats.calls += len(reqs)
        else:
            for i in long:
                sizes = np.cumsum(ctx.tokenizer.count(lists[i]))
                joined[i] = "\n".join(lists[i][: max(1, int((sizes <= limit).sum()))])
        return joined

    def build(self, ctx: BuildContext) -> StructureData:
        check_positive_int(self, "max_tokens", self.max_tokens)
        if self.max_concurrency is not None:
            check_positive_int(self, "max_concurrency", self.max_concurrency)
        self._validate()
        stats = ExtractStats()
        per_chunk, backend = self._records(ctx, stats)
        m = merge_records(per_chunk, len(ctx.chunks), self.kind)
        names = m["names"]
        rich = self.kind != "kg"
        node_desc = self._descriptions(ctx, names, m["node_desc"], stats) if rich else []
        edge_desc = self._descriptions(ctx, names, m["edge_desc"], stats) if rich else []
        src, dst, weight, chunks = m["src"], m["dst"], m["weight"], m["edge_chunks"]
        relation, keywords = list(m["relation"]), list(m["keywords"]) if self.kind == "rkg" else []
        dim = int(ctx.embedder.dim)
        node_text = [f"{n} {d}".strip() for n, d in zip(names, node_desc, strict=True)] if rich else names
        node_vectors = (
            np.asarray(ctx.embedder.embed(node_text), np.float32) if names else np.zeros((0, dim), np.float32)
        )
        n_syn = 0
        if self.kind == "kg" and self.synonyms and len(names) > 1:
            si, sj, ss = knn_pairs(node_vectors, k=self.synonym_k, threshold=self.synonym_threshold)
            n_syn = int(si.size)
            src, dst, weight = (
                np.concatenate([src, si]),
                np.concatenate([dst, sj]),
                np.concatenate([weight, ss]),
            )
            chunks = csr(sp.vstack([chunks, sp.csr_matrix((n_syn, len(ctx.chunks)), dtype=np.float32)]))
            relation += ["synonym"] * n_syn
        n = len(names)
        adj = sp.coo_matrix(
            (np.concatenate([weight, weight]), (np.concatenate([src, dst]), np.concatenate([dst, src]))),
            shape=(n, n),
        )
        edges = Edges(src, dst, weight, chunks, relation, edge_desc + [""] * n_syn if rich else [], keywords)
        text = [edges.text(j, names) for j in range(len(edges))]
        edge_vectors = (
            np.asarray(ctx.embedder.embed(text), np.float32) if text else np.zeros((0, dim), np.float32)
        )
        graph = Graph(
            names, m["kinds"], csr(adj), m["node_chunks"], edges, node_desc, node_vectors, edge_vectors
        )
        summary = {**graph.summary(), "backend": backend, "llm_calls": stats.calls}
        if n_syn:
            summary["synonym_edges"] = n_syn
        info = {"retries": stats.retries, "unparsed": stats.unparsed, "chunks": len(ctx.chunks)}
        meta = {
            "settings": self.get_params(deep=False),
            "backend": backend,
            "stats": info,
            "summary": summary,
        }
        return graph_to_structure(graph, meta=meta)

    def _validate(self) -> None:
        pass


@register_builder
class KnowledgeGraph(_KnowledgeGraph):
    """HippoRAG's knowledge graph (HippoRAG §3.1; unified framework §4 "KG").

    Parameters
    ----------
    synonyms : bool
        Add synonym edges between entities with close name vectors (HippoRAG: yes).
    synonym_threshold : float
        Cosine similarity for a synonym edge (HippoRAG's 0.8).
    synonym_k : int
        Neighbours examined per entity (HippoRAG's kNN retrieves 100).
    max_tokens : int
        Generation limit per extraction call.
    max_concurrency, n_process, batch_size
        Calls in flight; spaCy processes and texts per batch (LLM-free backend).
    """

    name = "kg"
    kind = "kg"

    def __init__(
        self,
        *,
        synonyms: bool = True,
        synonym_threshold: float = 0.8,
        synonym_k: int = 100,
        max_tokens: int = 1024,
        max_concurrency: int | None = None,
        n_process: int | None = None,
        batch_size: int = 16,
    ) -> None:
        self.synonyms = synonyms
        self.synonym_threshold = synonym_threshold
        self.synonym_k = synonym_k
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency
        self.n_process = n_process
        self.batch_size = batch_size

    def _validate(self) -> None:
        check_fraction(self, "synonym_threshold", self.synonym_threshold)
        check_positive_int(self, "synonym_k", self.synonym_k)


@register_builder
class TextualKG(_KnowledgeGraph):
    """GraphRAG's textual knowledge graph (GraphRAG §2.2; unified framework §4 "TKG").

    Parameters
    ----------
    entity_types : sequence of str
        Types the extraction prompt asks for (GraphRAG: organization, person, geo, event).
    max_gleaning : int
        Continuation rounds after the first extraction (LightRAG / nano-graphrag: 1).
    summary_max_tokens : int
        Merged descriptions longer than this are summarized by the LLM (500, as LightRAG).
    max_tokens : int
        Generation limit per extraction call.
    max_concurrency, n_process, batch_size
        Calls in flight; spaCy processes and texts per batch (LLM-free backend).
    """

    name = "tkg"
    kind = "tkg"

    def __init__(
        self,
        *,
        entity_types: Sequence[str] = GRAPHRAG_TYPES,
        max_gleaning: int = 1,
        summary_max_tokens: int = 500,
        max_tokens: int = 1024,
        max_concurrency: int | None = None,
        n_process: int | None = None,
        batch_size: int = 16,
    ) -> None:
        self.entity_types = entity_types
        self.max_gleaning = max_gleaning
        self.summary_max_tokens = summary_max_tokens
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency
        self.n_process = n_process
        self.batch_size = batch_size

    def _validate(self) -> None:
        types = self.entity_types
        if isinstance(types, str) or not types or not all(isinstance(t, str) and t for t in types):
            raise SettingError(
                type(self).__name__,
                "entity_types",
                types,
                "be a list of type names such as ['person', 'geo']",
            )
        check_nonneg_int(self, "max_gleaning", self.max_gleaning)
        check_positive_int(self, "summary_max_tokens", self.summary_max_tokens)


@register_builder
class RichKG(TextualKG):
    """LightRAG's rich knowledge graph: a TKG whose relations carry keywords (LightRAG §3.1; §4 "RKG").

    Same settings as :class:`TextualKG`; entity types default to LightRAG's
    (organization, person, geo, event, category).
    """

    name = "rkg"
    kind = "rkg"

    def __init__(
        self,
        *,
        entity_types: Sequence[str] = LIGHTRAG_TYPES,
        max_gleaning: int = 1,
        summary_max_tokens: int = 500,
        max_tokens: int = 1024,
        max_concurrency: int | None = None,
        n_process: int | None = None,
        batch_size: int = 16,
    ) -> None:
        super().__init__(
            entity_types=entity_types,
            max_gleaning=max_gleaning,
            summary_max_tokens=summary_max_tokens,
            max_tokens=max_tokens,
            max_concurrency=max_concurrency,
            n_process=n_process,
            batch_size=batch_size,
        )


__all__ = ["KnowledgeGraph", "RichKG", "TextualKG", "merge_records"]
