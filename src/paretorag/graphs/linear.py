"""LinearRAG's Tri-Graph: entities, sentences and passages, built without an LLM (LinearRAG §3.1).

LinearRAG (Zhuang et al., "LinearRAG: Linear Graph Retrieval Augmented Generation on
Large-scale Corpora", ICLR 2026; official code github.com/DEEP-PolyU/LinearRAG,
``src/LinearRAG.py``) indexes a corpus with named-entity recognition and embeddings
only. Every passage goes through spaCy NER (every label but ``ORDINAL`` and
``CARDINAL``, the entity text as written, :mod:`paretorag.providers.nlp_ner`), which
gives three kinds of vertices:

- **entities**: every distinct entity text (case kept, as the official code keys them);
- **sentences**: every distinct sentence text that holds an entity, linked to the
  entities in it (entity <-> sentence incidence; a sentence found in two passages is
  one sentence with the union of their entities). Sentences are not vertices of the
  PageRank graph: they carry the question's "semantic bridging" from entity to entity
  at query time (§3.2, :mod:`paretorag.retrieval.operators.linear`);
- **passages**, linked to their entities with weight
  ``count(entity in passage) / sum of the counts of the passage's entities``
  (case-sensitive substring counts in the passage text, as ``add_entity_to_passage_edges``),
  and, with ``adjacent``, passage ``i`` to passage ``i + 1`` in corpus order with weight 1.0
  (``add_adjacent_passage_edges``).

``adjacent`` scores from the order of the corpus: benchmark corpora list each
question's passages next to each other, so the edge to the next passage finds the
other gold passages of a question by position, not by content. ``paretorag eval
--shuffle-corpus SEED`` indexes the corpus in a random order and shows what the
method is worth without that; ``--set linear_graph.adjacent=false`` drops the edges.

Every entity text and every sentence is embedded with the index's embedder (cached by
text hash, so a rebuild after an insert embeds only new texts; the sentences are most
of the index time). The passage text is the one the chunk vectors embed
(``"title\\ntext"`` for a passage, :meth:`~paretorag.storage.store.ChunkTable.embedded_texts`),
as the official code runs NER over the passages it embeds.

Stored as a :class:`~paretorag.graphs.graph.Graph` (:func:`~paretorag.graphs.graph.graph_to_structure`):
``names`` the entity texts in sorted order, ``node_chunks`` the entities x passages
counts (int32), ``node_vectors`` the entity vectors (float32), ``adjacency`` empty (no
entity-entity edges); plus ``sentence_utf8``/``sentence_offsets`` (texts),
``sentence_vectors`` (float32), ``sentence_entity_indptr``/``sentence_entity_indices``
(sentences x entities CSR) and ``adjacent_src``/``adjacent_dst``/``adjacent_weight``
(the passage-passage edges). No pickle: ``.npz`` and JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, IndexFormatError
from ..params import check_positive_int
from ..providers.nlp import MODEL
from ..providers.nlp_ner import SKIP_LABELS, SentenceEntities, extract_sentence_entities
from ..storage.structures import StructureData, pack_texts, unpack_texts
from .base import BuildContext, Builder, cached_per_text, register_builder
from .graph import Graph, graph_from_structure, graph_to_structure

STRUCTURE = "linear_graph"


@dataclass(frozen=True)
class TriGraphParts:
    """What :func:`assemble` makes of the NER output (before any embedding)."""

    entities: list[str]  # sorted
    counts: sp.csr_matrix  # entities x passages, int32
    sentences: list[str]  # first-seen order
    sentence_entities: sp.csr_matrix  # sentences x entities, 0/1 int8
    adjacent: tuple[np.ndarray, np.ndarray]  # passage-passage edges (src, dst)


def assemble(per_passage: Sequence[SentenceEntities], texts: Sequence[str], adjacent: bool) -> TriGraphParts:
    """Entities, passage counts, sentence incidence and adjacency from per-passage NER.

    ``per_passage[i]`` lists passage ``i``'s sentences with their entity texts
    (:func:`~paretorag.providers.nlp_ner.sentence_entities`); ``texts[i]`` is the text
    the entities were found in. An entity's count in a passage is ``texts[i].count(entity)``.
    """
    if len(per_passage) != len(texts):
        raise ConfigError(f"got NER results for {len(per_passage)} passages and {len(texts)} texts")
    names = sorted({e for sents in per_passage for _, ents in sents for e in ents})
    row = {e: i for i, e in enumerate(names)}
    c_ent: list[int] = []
    c_pas: list[int] = []
    c_val: list[int] = []
    sent_row: dict[str, int] = {}
    sent_ents: list[set[int]] = []
    for p, sents in enumerate(per_passage):
        mine: dict[str, None] = {}
        for sentence, ents in sents:
            s = sent_row.setdefault(sentence, len(sent_row))
            if s == len(sent_ents):
                sent_ents.append(set())
            for e in ents:
                sent_ents[s].add(row[e])
                mine.setdefault(e, None)
        for e in mine:
            c_ent.append(row[e])
            c_pas.append(p)
            c_val.append(texts[p].count(e))
    counts = sp.csr_matrix(
        (
            np.asarray(c_val, dtype=np.int32),
            (np.asarray(c_ent, dtype=np.int64), np.asarray(c_pas, dtype=np.int64)),
        ),
        shape=(len(names), len(texts)),
    )
    counts.sort_indices()
    indptr = np.zeros(len(sent_ents) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(s) for s in sent_ents])
    indices = np.asarray([e for s in sent_ents for e in sorted(s)], dtype=np.int32)
    incidence = sp.csr_matrix(
        (np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(len(sent_ents), len(names))
    )
    n = len(texts)
    pairs = (np.arange(n - 1, dtype=np.int64), np.arange(1, n, dtype=np.int64))
    if not adjacent or n < 2:
        pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return TriGraphParts(names, counts, list(sent_row), incidence, pairs)


@dataclass(frozen=True)
class TriGraph:
    """A loaded ``linear_graph``: what the LinearRAG operator reads (derived matrices cached)."""

    graph: Graph  # entities; node_chunks: entities x passages counts; node_vectors: entity vectors
    sentence_vectors: np.ndarray  # float32, sentences x dim
    sentence_entities: sp.csr_matrix  # sentences x entities
    adjacent_src: np.ndarray
    adjacent_dst: np.ndarray
    adjacent_weight: np.ndarray
    skip_labels: tuple[str, ...]

    @classmethod
    def from_structure(cls, data: StructureData) -> TriGraph:
        a = data.arrays
        if "sentence_vectors" not in a or "adjacent_src" not in a:
            raise IndexFormatError(
                f"this structure is not a {STRUCTURE!r}; rebuild it with `paretorag index ... --methods linearrag`"
            )
        graph = graph_from_structure(data)
        if graph.node_vectors is None:
            raise IndexFormatError(
                f"this {STRUCTURE!r} has no entity vectors; rebuild it with `paretorag index ... --methods linearrag`"
            )
        n_s = int(a["sentence_vectors"].shape[0])
        incidence = sp.csr_matrix(
            (
                np.ones(a["sentence_entity_indices"].size, dtype=np.int8),
                a["sentence_entity_indices"],
                a["sentence_entity_indptr"],
            ),
            shape=(n_s, graph.n_nodes),
        )
        return cls(
            graph=graph,
            sentence_vectors=np.asarray(a["sentence_vectors"], dtype=np.float32),
            sentence_entities=incidence,
            adjacent_src=np.asarray(a["adjacent_src"], dtype=np.int64),
            adjacent_dst=np.asarray(a["adjacent_dst"], dtype=np.int64),
            adjacent_weight=np.asarray(a["adjacent_weight"], dtype=np.float64),
            skip_labels=tuple(data.meta.get("skip_labels", SKIP_LABELS)),
        )

    @property
    def n_entities(self) -> int:
        return self.graph.n_nodes

    @property
    def entity_vectors(self) -> np.ndarray:
        """The entity vectors (float32, one row per entity; checked on load)."""
        return np.asarray(self.graph.node_vectors, dtype=np.float32)

    @property
    def n_passages(self) -> int:
        return int(self.graph.node_chunks.shape[1])

    @cached_property
    def entity_sentences(self) -> sp.csr_matrix:
        """Entities x sentences (the transpose of the sentence incidence)."""
        return sp.csr_matrix(self.sentence_entities.T)

    def passage_entity_weights(self) -> sp.csr_matrix:
        """Passages x entities: ``count / sum of the passage's counts`` (official ``add_entity_to_passage_edges``)."""
        counts = sp.csr_matrix(self.graph.node_chunks.T, dtype=np.float64)
        total = np.asarray(counts.sum(axis=1)).ravel()
        inv = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
        w = sp.csr_matrix(sp.diags(inv) @ counts)
        w.eliminate_zeros()
        return w

    def adjacency(self) -> sp.csr_matrix:
        """The undirected weighted graph of the walk: entities first, then passages."""
        n_e, n_p = self.n_entities, self.n_passages
        w = self.passage_entity_weights()
        chain = sp.coo_matrix(
            (self.adjacent_weight, (self.adjacent_src, self.adjacent_dst)), shape=(n_p, n_p)
        ).tocsr()
        chain = chain + chain.T
        ent_block = sp.csr_matrix((n_e, n_e))
        return sp.csr_matrix(sp.bmat([[ent_block, w.T], [w, chain]], format="csr"))


@register_builder
class LinearGraph(Builder):
    """LinearRAG's Tri-Graph: spaCy NER, entity/sentence vectors, passage edges (LinearRAG §3.1).

    No LLM call. See the module docstring for what is stored.

    Parameters
    ----------
    adjacent : bool
        Link each passage to the next one in corpus order with weight 1.0, as the official
        code does (default True). This scores from the benchmark's corpus order; check
        with ``paretorag eval --shuffle-corpus SEED``.
    skip_labels : sequence of str
        spaCy entity labels that are not entities (``ORDINAL``, ``CARDINAL``: the official
        ``src/ner.py``). The question's entities skip the same labels.
    batch_size : int
        Passages per spaCy batch.
    """

    name = STRUCTURE
    version = 1
    _extract_version = 1  # part of the per-passage NER cache key: bump when the NER output changes
    runtime_params = ("batch_size",)
    requires = ()
    uses_llm = False

    def __init__(
        self, *, adjacent: bool = True, skip_labels: Sequence[str] = SKIP_LABELS, batch_size: int = 16
    ) -> None:
        self.adjacent = adjacent
        self.skip_labels = skip_labels
        self.batch_size = batch_size

    def _checked(self) -> tuple[bool, tuple[str, ...], int]:
        if not isinstance(self.adjacent, bool):
            raise ConfigError(
                f"LinearGraph.adjacent must be true or false, got {self.adjacent!r} "
                "(e.g. --set linear_graph.adjacent=false)"
            )
        if isinstance(self.skip_labels, str) or not all(isinstance(x, str) for x in self.skip_labels):
            raise ConfigError(
                f"LinearGraph.skip_labels must be a list of spaCy entity labels such as "
                f"['ORDINAL', 'CARDINAL'], got {self.skip_labels!r}"
            )
        return self.adjacent, tuple(self.skip_labels), check_positive_int(self, "batch_size", self.batch_size)

    def build(self, ctx: BuildContext) -> StructureData:
        adjacent, skip, batch_size = self._checked()
        texts = ctx.chunks.embedded_texts(ctx.embed_titles)
        t0 = time.perf_counter()
        # per-passage NER is cached by text and settings: an insert runs spaCy on new passages only
        salt = json.dumps({"model": MODEL, "v": self._extract_version, "skip": list(skip)}, sort_keys=True)
        run = cached_per_text(
            ctx,
            "linear_ner",
            salt,
            list(texts),
            lambda todo: (
                ([[s, e] for s, e in sents], n)
                for sents, n in extract_sentence_entities(todo, batch_size=batch_size, skip=skip)
            ),
            "linear graph (spaCy NER)",
        )
        seconds_nlp = time.perf_counter() - t0
        per_passage: list[SentenceEntities] = [
            [(str(s), [str(e) for e in ents]) for s, ents in sentences] for sentences in run.values
        ]
        parts = assemble(per_passage, texts, adjacent)
        t1 = time.perf_counter()
        dim = int(ctx.embedder.dim)
        ent_vec = ctx.embedder.embed(parts.entities) if parts.entities else np.zeros((0, dim), np.float32)
        sent_vec = ctx.embedder.embed(parts.sentences) if parts.sentences else np.zeros((0, dim), np.float32)
        seconds_embed = time.perf_counter() - t1
        stats: dict[str, Any] = {
            "entities": len(parts.entities),
            "sentences": len(parts.sentences),
            "adjacent_edges": int(parts.adjacent[0].size),
            "spacy_tokens": run.n_tokens,
            "spacy_seconds": round(seconds_nlp, 4),
            "embed_seconds": round(seconds_embed, 4),
            "chunks_extracted": run.computed,
            "chunks_from_cache": len(texts) - run.computed,
            "passage_entity_edges": int(parts.counts.nnz),
        }
        return trigraph_structure(
            parts,
            ent_vec,
            sent_vec,
            adjacent=adjacent,
            skip_labels=skip,
            titles=bool(ctx.embed_titles),
            stats=stats,
        )


def trigraph_structure(
    parts: TriGraphParts,
    entity_vectors: np.ndarray,
    sentence_vectors: np.ndarray,
    *,
    adjacent: bool | None = None,
    skip_labels: Sequence[str] = SKIP_LABELS,
    titles: bool = True,
    stats: dict[str, Any] | None = None,
) -> StructureData:
    """The ``linear_graph`` structure of assembled NER output and its vectors (see the module).

    ``titles`` says which passage texts the entities were found in
    (``ChunkTable.embedded_texts(titles)``); the query counts occurrences in the same texts.
    """
    n_e = len(parts.entities)
    graph = Graph(
        names=parts.entities,
        kinds=["entity"] * n_e,
        adjacency=sp.csr_matrix((n_e, n_e), dtype=np.int32),
        node_chunks=parts.counts,
        node_vectors=np.asarray(entity_vectors, dtype=np.float32),
    )
    if np.asarray(sentence_vectors).shape[0] != len(parts.sentences):
        raise ConfigError(
            f"got {len(sentence_vectors)} sentence vectors for {len(parts.sentences)} sentences"
        )
    src, dst = parts.adjacent
    arrays: dict[str, np.ndarray] = {
        "sentence_vectors": np.asarray(sentence_vectors, dtype=np.float32),
        "sentence_entity_indptr": parts.sentence_entities.indptr.astype(np.int64),
        "sentence_entity_indices": parts.sentence_entities.indices.astype(np.int32),
        "adjacent_src": src,
        "adjacent_dst": dst,
        "adjacent_weight": np.ones(src.size, dtype=np.float32),
    }
    arrays["sentence_utf8"], arrays["sentence_offsets"] = pack_texts(parts.sentences)
    meta = {
        "n_chunks": int(parts.counts.shape[1]),
        "model": MODEL,
        "skip_labels": list(skip_labels),
        "adjacent": bool(src.size) if adjacent is None else bool(adjacent),  # the builder's setting
        "titles": titles,  # the passage texts are ChunkTable.embedded_texts(titles)
        "stats": stats or {},
        "summary": {"sentences": len(parts.sentences), "adjacent_edges": int(src.size)},
    }
    return graph_to_structure(graph, meta=meta, arrays=arrays)


def sentence_texts(data: StructureData) -> list[str]:
    """The sentence texts of a ``linear_graph`` (row order of its sentence arrays)."""
    return unpack_texts(data.arrays["sentence_utf8"], data.arrays["sentence_offsets"])


__all__ = [
    "STRUCTURE",
    "LinearGraph",
    "TriGraph",
    "TriGraphParts",
    "assemble",
    "sentence_texts",
    "trigraph_structure",
]
