"""E2GraphRAG's entity graph and its bidirectional indexes (E2GraphRAG §3.1, Figure 1).

Entities (named entities and nouns, :mod:`paretorag.providers.nlp`) are extracted
from every chunk with spaCy, not an LLM. Two entities that co-occur in a sentence are
joined by an undirected edge whose weight counts the sentences in which they
co-occur; the per-chunk subgraphs ``G_ci`` are merged into one graph ``G`` with
identical entities unified and weights summed (§3.1), which is the same as counting
over all sentences of the corpus. Two indexes bridge the graph and the tree:

- entity -> chunk ``I_e->c``: for each entity, the chunks it occurs in, with the
  number of occurrences per chunk (Occurrence Ranking needs the counts, §3.2);
- chunk -> entity ``I_c->e``: its transpose (Entity-Aware Ranking, §3.2).

Stored as CSR arrays (``adj_*``: the symmetric adjacency, no self-loops; ``occ_*``:
entities x chunks counts) plus the entity names as one UTF-8 array; the transpose
and the connected components are derived at load time (:class:`EntityGraphArrays`).
Vertex ids are the names in sorted order, so a build is deterministic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..errors import ConfigError
from ..operators.base import check_positive_int
from ..providers.nlp import DEFAULT_LABELS, MODEL, EntityExtractor, SentenceMode
from .base import BuildContext, Builder, StructureData, register_builder
from .tree import pack_texts, unpack_texts


@dataclass(frozen=True)
class EntityGraphArrays:
    """A loaded entity graph: names, adjacency and both indexes (all scipy CSR).

    Attributes
    ----------
    names : list of str
        Vertex names (normalized entity terms), sorted; row ``i`` of every matrix.
    ids : dict
        Name -> vertex id.
    adjacency : scipy.sparse.csr_matrix
        Symmetric, weight = sentence co-occurrence count.
    entity_chunks : scipy.sparse.csr_matrix
        Entities x chunks, occurrence counts (``I_e->c``).
    chunk_entities : scipy.sparse.csr_matrix
        Chunks x entities, its transpose (``I_c->e``).
    component : numpy.ndarray
        Connected-component label per vertex (distinct labels: no path).
    """

    names: list[str]
    ids: dict[str, int]
    adjacency: sp.csr_matrix
    entity_chunks: sp.csr_matrix
    chunk_entities: sp.csr_matrix
    component: np.ndarray

    @property
    def n_entities(self) -> int:
        return len(self.names)

    @classmethod
    def from_structure(cls, data: StructureData) -> EntityGraphArrays:
        a = data.arrays
        names = unpack_texts(a["names_utf8"], a["names_offsets"])
        n_ent, n_chunks = len(names), int(data.meta["n_chunks"])
        adj = sp.csr_matrix((a["adj_weights"], a["adj_indices"], a["adj_indptr"]), shape=(n_ent, n_ent))
        occ = sp.csr_matrix((a["occ_counts"], a["occ_indices"], a["occ_indptr"]), shape=(n_ent, n_chunks))
        _, labels = connected_components(adj, directed=False)
        return cls(
            names=names,
            ids={name: i for i, name in enumerate(names)},
            adjacency=adj,
            entity_chunks=occ,
            chunk_entities=occ.T.tocsr(),
            component=labels.astype(np.int32),
        )


def graph_from_mentions(per_chunk: Iterable[Sequence[Sequence[str]]], n_chunks: int) -> dict[str, np.ndarray]:
    """The graph and entity -> chunk index from entity terms per sentence per chunk (§3.1).

    Parameters
    ----------
    per_chunk : iterable
        For each chunk row in order, its sentences, each a list of entity terms
        (repeated terms are repeated mentions).
    n_chunks : int
        Number of chunk rows.

    Returns
    -------
    dict of numpy.ndarray
        ``names_utf8``/``names_offsets`` (sorted names), ``adj_indptr``/``adj_indices``/
        ``adj_weights`` (symmetric CSR, weight = number of sentences in which the two
        entities co-occur) and ``occ_indptr``/``occ_indices``/``occ_counts``
        (entities x chunks CSR of occurrence counts).
    """
    vocab: dict[str, int] = {}
    ment_ent: list[int] = []
    ment_row: list[int] = []
    pair_a: list[np.ndarray] = []
    pair_b: list[np.ndarray] = []
    rows_seen = 0
    for row, sentences in enumerate(per_chunk):
        rows_seen = row + 1
        for sent in sentences:
            ids = [vocab.setdefault(t, len(vocab)) for t in sent]
            ment_ent.extend(ids)
            ment_row.extend([row] * len(ids))
            uniq = np.unique(np.asarray(ids, dtype=np.int64))
            if uniq.size > 1:
                iu, ju = np.triu_indices(uniq.size, 1)
                pair_a.append(uniq[iu])
                pair_b.append(uniq[ju])
    if rows_seen > n_chunks:
        raise ConfigError(f"got entity mentions for {rows_seen} chunks but n_chunks={n_chunks}")
    names = sorted(vocab)
    # first-seen ids -> sorted ids
    remap = np.empty(len(vocab), dtype=np.int64)
    for new, name in enumerate(names):
        remap[vocab[name]] = new
    n_ent = len(names)
    ents = remap[np.asarray(ment_ent, dtype=np.int64)] if ment_ent else np.zeros(0, np.int64)
    occ = sp.coo_matrix(
        (np.ones(ents.size, dtype=np.int32), (ents, np.asarray(ment_row, dtype=np.int64))),
        shape=(n_ent, n_chunks),
    ).tocsr()
    occ.sum_duplicates()
    a = remap[np.concatenate(pair_a)] if pair_a else np.zeros(0, np.int64)
    b = remap[np.concatenate(pair_b)] if pair_b else np.zeros(0, np.int64)
    adj = sp.coo_matrix(
        (np.ones(2 * a.size, dtype=np.int32), (np.concatenate([a, b]), np.concatenate([b, a]))),
        shape=(n_ent, n_ent),
    ).tocsr()
    adj.sum_duplicates()
    blob, offsets = pack_texts(names)
    return {
        "names_utf8": blob,
        "names_offsets": offsets,
        "adj_indptr": adj.indptr.astype(np.int64),
        "adj_indices": adj.indices.astype(np.int32),
        "adj_weights": adj.data.astype(np.int32),
        "occ_indptr": occ.indptr.astype(np.int64),
        "occ_indices": occ.indices.astype(np.int32),
        "occ_counts": occ.data.astype(np.int32),
    }


@register_builder
class EntityGraph(Builder):
    """Sentence co-occurrence entity graph + entity<->chunk indexes (E2GraphRAG §3.1).

    No LLM call: spaCy ``en_core_web_sm`` through ``nlp.pipe`` (App. D.1).

    Parameters
    ----------
    labels : sequence of str
        Named-entity labels kept as entities (default ``PERSON``, ``ORG``, ``GPE``).
    split_names : bool
        Split multi-word person names into their parts.
    sentences : {"senter", "sentencizer"}
        Sentence splitter used for co-occurrence.
    n_process : int, optional
        spaCy processes (default: the index's ``workers``, at most the CPU count).
    batch_size : int
        Chunks per batch sent to a process.
    """

    name = "entity_graph"
    runtime_params = ("n_process", "batch_size")
    requires = ()
    uses_llm = False

    def __init__(
        self,
        *,
        labels: Sequence[str] = DEFAULT_LABELS,
        split_names: bool = True,
        sentences: SentenceMode = "senter",
        n_process: int | None = None,
        batch_size: int = 8,
    ) -> None:
        self.labels = labels
        self.split_names = split_names
        self.sentences = sentences
        self.n_process = n_process
        self.batch_size = batch_size

    def extractor(self, workers: int = 1) -> EntityExtractor:
        """The extractor these settings describe (the method uses it on questions)."""
        n_process = self.n_process
        if n_process is None:
            n_process = max(1, min(int(workers or 1), os.cpu_count() or 1))
        check_positive_int(self, "n_process", n_process)
        check_positive_int(self, "batch_size", self.batch_size)
        return EntityExtractor(
            labels=tuple(self.labels),
            split_names=self.split_names,
            sentences=self.sentences,
            n_process=n_process,
            batch_size=self.batch_size,
        )

    def build(self, ctx: BuildContext) -> StructureData:
        chunks = ctx.chunks
        extractor = self.extractor(ctx.workers)
        t0 = time.perf_counter()
        n_tokens = 0
        per_chunk: list[list[list[str]]] = []
        with ctx.progress.task("entity graph (spaCy)", total=len(chunks)) as bar:
            for ex in extractor.extract(chunks.texts):
                per_chunk.append(ex.sentences)
                n_tokens += ex.n_tokens
                bar.advance()
        seconds_nlp = time.perf_counter() - t0
        arrays = graph_from_mentions(per_chunk, len(chunks))
        stats: dict[str, Any] = {
            "entities": int(arrays["names_offsets"].size - 1),
            "edges": int(arrays["adj_indices"].size // 2),
            "mentions": int(arrays["occ_counts"].sum()),
            "spacy_tokens": n_tokens,
            "spacy_seconds": round(seconds_nlp, 4),
            "spacy_tokens_per_s": round(n_tokens / seconds_nlp, 1) if seconds_nlp > 0 else 0.0,
            "n_process": extractor.n_process,
        }
        meta = {
            "n_chunks": len(chunks),
            "model": MODEL,
            "labels": list(extractor.labels),
            "split_names": bool(extractor.split_names),
            "sentences": extractor.sentences,
            "stats": stats,
        }
        return StructureData(arrays, meta)


__all__ = ["EntityGraph", "EntityGraphArrays", "graph_from_mentions"]
