"""HippoRAG 2's heterogeneous graph: phrase nodes, passage nodes, facts (EA-GraphRAG §3.1).

EA-GraphRAG indexes the corpus "following [8]" (HippoRAG 2, §3 and its released code):

- **phrase nodes** ``N``: the subjects and objects of the facts extracted from each passage;
- **facts** ``F``: ``(subject, relation, object)`` triples, stored as edge records with
  their chunk and one vector each (the text ``"subject relation object"``, embedded with
  the index's embedder, cached by text hash): the relation edges of ``G``, weighted by the
  number of times the fact was extracted;
- **occurrence edges**: phrase node <-> the passage it was extracted from, weight 1;
- **synonymy edges**: between phrase nodes whose name vectors have cosine >= 0.8, among
  each node's 2047 nearest neighbours, at most 100 per node and only for names with more
  than two letters or digits (HippoRAG 2's defaults), weighted by the cosine.

Passage nodes ``C`` are the chunk columns of ``node_chunks`` (the occurrence weights);
the passage-ranking operator (:class:`paretorag.retrieval.operators.hipporag2.ChunkPPR`) assembles
the full graph ``[[A, O], [O^T, 0]]`` over ``N`` and ``C``. The adjacency ``A`` holds the
relation and synonymy edges (both undirected, as in HippoRAG 2); the edge records are the
facts only, so fact retrieval never returns a synonymy edge.

Facts come from the LLM when a generative one is configured (HippoRAG's NER then OpenIE
prompts, 2 calls per chunk: :func:`paretorag.graphs.kg_extract.hipporag_records`) and
from spaCy dependency triples otherwise (0 calls: :mod:`paretorag.providers.nlp_kg`,
the extraction the ``kg`` builder uses, cached per chunk in the index so an insert parses
only its new chunks).

Offline settings (measured in the README). The paper's graph is ``nodes="facts"``,
``titles=False``, ``occurrence="binary"``, what ``"auto"`` picks when an LLM extracts the
facts. spaCy's triples are sparser and noisier than an LLM's, so ``nodes`` can add the
passage's named entities (``"entities"``), all its noun phrases (``"mentions"``), or only
the phrases that name a document title (``"titles"``: every passage is also linked to its
own title's node, so a passage that mentions another document's title is two hops from
it, like a hyperlink); ``titles=True`` adds the title links to the other choices;
``occurrence="idf"`` weights an occurrence edge by the phrase's inverse passage frequency
``ln((1 + n) / (1 + df)) + 1``, so hub phrases spread less. ``"auto"`` picks
``nodes="titles"`` and ``occurrence="idf"`` for spaCy facts (measured best on the train
splits).
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..kernels.knn import knn_pairs
from ..params import check_fraction, check_positive_int
from ..providers.base import is_generative
from ..providers.nlp_kg import kg_name
from .base import BuildContext, Builder, StructureData, register_builder
from .graph import Edges, Graph, csr, graph_to_structure
from .kg import merge_records
from .kg_extract import hipporag_records, parsed_chunks, spacy_records
from .kg_prompts import Records

NODES = ("auto", "facts", "entities", "mentions", "titles")
OCCURRENCE = ("auto", "binary", "idf")
_ALNUM = re.compile(r"[^A-Za-z0-9]")
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


def title_name(title: str) -> str:
    """A document title as a phrase name: a trailing "(disambiguation)" dropped, then :func:`kg_name`.

    >>> title_name("Jaws (film)")
    'jaws'
    """
    return kg_name(_PAREN.sub("", title))


def synonym_edges(
    names: list[str], vectors: np.ndarray, *, k: int, threshold: float, max_per_node: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HippoRAG 2's synonymy edges: kNN pairs of phrase vectors above ``threshold``.

    Only names with more than two letters or digits take part, and each node keeps its
    ``max_per_node`` most similar partners (HippoRAG 2 stops after about 100).
    """
    ok = np.flatnonzero([len(_ALNUM.sub("", n)) > 2 for n in names])
    if ok.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    i, j, s = knn_pairs(vectors[ok], k=k, threshold=threshold)
    i, j = ok[i], ok[j]
    # keep a pair while both ends have room, best pairs first
    order = np.lexsort((j, i, -s))
    count = np.zeros(len(names), np.int64)
    keep = np.zeros(order.size, bool)
    for n, e in enumerate(order.tolist()):
        a, b = int(i[e]), int(j[e])
        if count[a] < max_per_node and count[b] < max_per_node:
            keep[n] = True
            count[a] += 1
            count[b] += 1
    sel = np.sort(order[keep])
    return i[sel], j[sel], s[sel].astype(np.float32)


@register_builder
class FactGraph(Builder):
    """HippoRAG 2's phrase/passage graph with facts and synonymy edges (EA-GraphRAG §3.1).

    See the module docstring. No LLM call without a generative LLM.

    Parameters
    ----------
    nodes : {"auto", "facts", "entities", "mentions", "titles"}
        Phrase nodes linked to a passage: the facts' subjects and objects (HippoRAG 2),
        plus its named entities, plus all its noun phrases, or plus the phrases that name
        a document title and its own title. ``"auto"``: ``"facts"`` with an LLM,
        ``"titles"`` with spaCy.
    titles : bool
        Link each passage to a phrase node named after its document title.
    occurrence : {"auto", "binary", "idf"}
        Occurrence edge weight: 1 (HippoRAG 2) or the phrase's inverse passage frequency.
        ``"auto"``: ``"binary"`` with an LLM, ``"idf"`` with spaCy.
    synonyms : bool
        Add synonymy edges (HippoRAG 2: yes).
    synonym_threshold : float
        Cosine for a synonymy edge (HippoRAG 2: 0.8).
    synonym_k : int
        Nearest neighbours examined per phrase (HippoRAG 2: 2047).
    synonym_max : int
        Synonymy edges kept per phrase (HippoRAG 2: 100).
    max_tokens : int
        Generation limit per OpenIE call.
    max_concurrency, n_process, batch_size
        LLM calls in flight; spaCy processes and texts per batch.
    """

    name = "fact_graph"
    version = 1
    uses_llm = True
    runtime_params = ("max_concurrency", "n_process", "batch_size")

    def __init__(
        self,
        *,
        nodes: str = "auto",
        titles: bool = False,
        occurrence: str = "auto",
        synonyms: bool = True,
        synonym_threshold: float = 0.8,
        synonym_k: int = 2047,
        synonym_max: int = 100,
        max_tokens: int = 1024,
        max_concurrency: int | None = None,
        n_process: int | None = None,
        batch_size: int = 16,
    ) -> None:
        self.nodes = nodes
        self.titles = titles
        self.occurrence = occurrence
        self.synonyms = synonyms
        self.synonym_threshold = synonym_threshold
        self.synonym_k = synonym_k
        self.synonym_max = synonym_max
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency
        self.n_process = n_process
        self.batch_size = batch_size

    def _validate(self) -> None:
        if self.nodes not in NODES:
            raise ConfigError(f"FactGraph.nodes must be one of {NODES}, got {self.nodes!r}")
        if self.occurrence not in OCCURRENCE:
            raise ConfigError(f"FactGraph.occurrence must be one of {OCCURRENCE}, got {self.occurrence!r}")
        check_fraction(self, "synonym_threshold", self.synonym_threshold)
        check_positive_int(self, "synonym_k", self.synonym_k)
        check_positive_int(self, "synonym_max", self.synonym_max)
        check_positive_int(self, "max_tokens", self.max_tokens)
        check_positive_int(self, "batch_size", self.batch_size)
        if self.max_concurrency is not None:
            check_positive_int(self, "max_concurrency", self.max_concurrency)

    def _records(self, ctx: BuildContext) -> tuple[list[Records], dict[str, Any]]:
        llm = ctx.llm(f"index.{self.name}")
        texts = list(ctx.chunks.texts)
        if is_generative(llm):
            recs, st = hipporag_records(
                llm,
                texts,
                max_tokens=self.max_tokens,
                progress=ctx.progress,
                max_concurrency=self.max_concurrency,
            )
            info = {"backend": "llm", "llm_calls": st.calls, "retries": st.retries, "unparsed": st.unparsed}
            return recs, info
        n_process = self.n_process or max(1, min(int(ctx.workers or 1), os.cpu_count() or 1))
        check_positive_int(self, "n_process", n_process)
        exs, parsed = parsed_chunks(ctx, n_process, self.batch_size, "fact graph (spaCy)")
        info = {"backend": "spacy", "llm_calls": 0, "chunks_parsed": parsed}
        return [spacy_records(e) for e in exs], info

    def _phrases(self, rec: Records, title: str, title_names: set[str], nodes: str) -> Records:
        """The chunk's records with the phrase nodes ``nodes`` and ``titles`` ask for."""
        if nodes == "facts":
            ents = []
        elif nodes == "entities":
            ents = [e for e in rec.entities if e[1] != "NOUN"]
        elif nodes == "titles":
            ents = [e for e in rec.entities if kg_name(e[0]) in title_names]
        else:
            ents = list(rec.entities)
        if (self.titles or nodes == "titles") and title_name(title):
            ents.append((title_name(title), "TITLE", ""))
        return Records(entities=ents, relations=[(s, o, r, "", "") for s, o, r, _, _ in rec.relations])

    def build(self, ctx: BuildContext) -> StructureData:
        self._validate()
        t0 = time.perf_counter()
        per_chunk, info = self._records(ctx)
        seconds_extract = time.perf_counter() - t0
        n_chunks = len(ctx.chunks)
        titles = list(ctx.chunks.titles)
        title_names = {title_name(t) for t in titles} - {""}
        offline = info["backend"] == "spacy"
        nodes = self.nodes if self.nodes != "auto" else ("titles" if offline else "facts")
        occurrence = self.occurrence if self.occurrence != "auto" else ("idf" if offline else "binary")
        m = merge_records(
            [self._phrases(r, t, title_names, nodes) for r, t in zip(per_chunk, titles, strict=True)],
            n_chunks,
            "kg",
        )
        names: list[str] = m["names"]
        n = len(names)
        occ = sp.csr_matrix(m["node_chunks"], dtype=np.float32)
        occ.data[:] = 1.0
        if occurrence == "idf" and n:
            df = np.diff(occ.indptr).astype(np.float64)
            idf = np.log((1.0 + n_chunks) / (1.0 + df)) + 1.0
            occ = csr(sp.diags(idf.astype(np.float32)) @ occ)
        dim = int(ctx.embedder.dim)
        t1 = time.perf_counter()
        node_vectors = (
            np.asarray(ctx.embedder.embed(names), np.float32) if names else np.zeros((0, dim), np.float32)
        )
        src, dst, weight = m["src"], m["dst"], m["weight"]
        edges = Edges(src, dst, weight, m["edge_chunks"], list(m["relation"]))
        fact_text = [edges.text(j, names) for j in range(len(edges))]
        edge_vectors = (
            np.asarray(ctx.embedder.embed(fact_text), np.float32)
            if fact_text
            else np.zeros((0, dim), np.float32)
        )
        seconds_embed = time.perf_counter() - t1
        si = sj = np.zeros(0, np.int64)
        ss = np.zeros(0, np.float32)
        if self.synonyms and n > 1:
            si, sj, ss = synonym_edges(
                names,
                node_vectors,
                k=self.synonym_k,
                threshold=self.synonym_threshold,
                max_per_node=self.synonym_max,
            )
        a = np.concatenate([src, si])
        b = np.concatenate([dst, sj])
        w = np.concatenate([weight, ss]).astype(np.float32)
        adj = csr(sp.coo_matrix((np.r_[w, w], (np.r_[a, b], np.r_[b, a])), shape=(n, n)))
        graph = Graph(names, m["kinds"], adj, csr(occ), edges, [], node_vectors, edge_vectors)
        summary = {
            **graph.summary(),
            "facts": len(edges),
            "synonym_edges": int(si.size),
            "occurrence_edges": int(occ.nnz),
            "nodes_from": nodes,
            "occurrence": occurrence,
            **info,
        }
        meta = {
            "settings": self.get_params(deep=False),
            "stats": {
                "chunks": n_chunks,
                "seconds_extract": round(seconds_extract, 3),
                "seconds_embed": round(seconds_embed, 3),
            },
            "summary": summary,
        }
        return graph_to_structure(graph, meta=meta)


__all__ = ["FactGraph", "synonym_edges"]
