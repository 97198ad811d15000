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

The result is a :class:`~paretorag.graphs.graph.Graph` (kinds ``"entity"``; ``adjacency``: the
symmetric co-occurrence counts, no self-loops; ``node_chunks``: entities x chunks
occurrence counts), stored with :func:`~paretorag.graphs.graph.graph_to_structure`; the
transpose and the connected components are derived on load. Vertex ids are the names
in sorted order, so a build is deterministic.

Two settings beyond the paper narrow the vertices for corpora of many short documents,
where generic nouns ("film", "county") join almost every pair of entities within
``h`` hops and Graph Filter keeps every pair (measured in the README):
``common_nouns=False`` keeps named entities and proper nouns only, and ``max_df``
drops entities found in more than that fraction of the chunks (an IDF filter, as
scikit-learn's ``max_df``). ``common_nouns`` defaults to the paper's graph; ``max_df``
defaults to ``"auto"``: 0.02 on a corpus of at least 10 documents, where it raised
e2graphrag's R@5 on all four passage sets and nq_leval measured (README), and 1.0 (the
paper's graph, nothing dropped) on fewer, such as the paper's one novel per index,
whose main characters fill more than 2% of the chunks.

A third setting, also beyond the paper, is for long documents: ``nouns_max_df`` narrows
the common nouns alone. A term the extractor saw as a common noun (``NN``/``NNS``, not a
name nor inside a named entity) in most chunks that hold it, and found in more than that
fraction of the chunks, is dropped ("man", "thing", "sir" in a story; "method", "model"
in papers), while names stay whatever their frequency. ``"auto"``: 0.05 on a corpus of
long documents (fewer than half of its chunks are whole documents), where E2GraphRAG's
evidence recall on GraphRAG-Bench medical rose by 2.7 / 1.9 at 5 / 10
(docs/long-documents.md); 1.0 on passages. A name's later short form already meets its
full form: ``split_names`` puts "Andy Laney" on the vertices ``andy`` and ``laney``, where
a bare "Laney" lands. The "et al." of citations is no entity.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..params import check_positive_int
from ..providers.nlp import DEFAULT_LABELS, MODEL, EntityExtractor, SentenceMode
from ..storage.store import MIN_PASSAGE_SHARE
from .base import BuildContext, Builder, StructureData, cached_per_text, register_builder
from .graph import Graph, graph_to_structure

# ``max_df="auto"``: the IDF filter on corpora of many documents (measured in the README)
AUTO_MAX_DF = 0.02
AUTO_MIN_DOCUMENTS = 10
# ``nouns_max_df="auto"``: on long documents, the generic common nouns (chosen on medical@train)
AUTO_NOUNS_MAX_DF = 0.05


def frequent_terms(per_chunk: Sequence[Sequence[Sequence[str]]], max_df: float) -> set[str]:
    """Terms found in more than ``max_df`` of the chunks (their document frequency).

    Examples
    --------
    >>> sorted(frequent_terms([[["film", "boese"]], [["film"]], [["warsaw"]]], 0.5))
    ['film']
    """
    n = len(per_chunk)
    df: dict[str, int] = {}
    for sentences in per_chunk:
        for term in {t for sent in sentences for t in sent}:
            df[term] = df.get(term, 0) + 1
    return {t for t, c in df.items() if c > max_df * n}


def common_nouns_only(values: Sequence[Sequence[Any]]) -> set[str]:
    """Terms used as common nouns (``NN``/``NNS``: "man", "door", "patient") in most chunks
    that hold them: in more than half of those chunks, never as a name or inside a named entity.
    A paper's headings capitalize "Graph Retrieval" (tagged as proper nouns) while its text
    uses the words as nouns, so a single use as a name does not make a name. ``values`` are
    the per-chunk ``[sentences, nouns]`` of the extractor
    (:meth:`~paretorag.providers.nlp.Extraction.payload`).

    Examples
    --------
    >>> sorted(common_nouns_only([[[["man", "laney"]], ["man"]], [[["man", "laney"]], ["man"]]]))
    ['man']
    >>> sorted(common_nouns_only([[[["bond"]], []], [[["bond", "man"]], ["bond", "man"]], [[["bond"]], []]]))
    ['man']
    """
    as_noun: dict[str, int] = {}
    seen: dict[str, int] = {}
    for sentences, only_nouns in values:
        for t in set(only_nouns):
            as_noun[t] = as_noun.get(t, 0) + 1
        for t in {t for sent in sentences for t in sent}:
            seen[t] = seen.get(t, 0) + 1
    return {t for t, n in as_noun.items() if 2 * n > seen.get(t, n)}


def graph_from_mentions(per_chunk: Iterable[Sequence[Sequence[str]]], n_chunks: int) -> Graph:
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
    Graph
        Sorted entity names; ``adjacency``: symmetric int32 CSR, weight = number of
        sentences in which the two entities co-occur; ``node_chunks``: entities x chunks
        int32 occurrence counts.
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
    return Graph(
        names=names,
        kinds=["entity"] * n_ent,
        adjacency=sp.csr_matrix(adj, dtype=np.int32),
        node_chunks=sp.csr_matrix(occ, dtype=np.int32),
    )


def _fraction(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigError(
            f"EntityGraph.{name} must be a fraction of the chunks in (0, 1] or 'auto', got {value!r}; "
            "1.0 keeps every entity (the paper's graph)"
        )
    return float(value)


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
    common_nouns : bool
        Common nouns are entities, as in the paper (default). False: named entities and
        proper nouns only.
    max_df : float or "auto"
        Drop entities that occur in more than this fraction of the chunks (1.0, the
        paper's graph, drops none). Questions' mentions of them are then ignored.
        ``"auto"`` (default): ``AUTO_MAX_DF`` when the corpus has at least
        ``AUTO_MIN_DOCUMENTS`` documents, else 1.0.
    nouns_max_df : float or "auto"
        Drop common nouns (terms never used as a name or inside a named entity:
        "man", "thing", "door") that occur in more than this fraction of the chunks;
        named entities and proper nouns stay whatever their frequency, so a story's
        main characters keep their vertices. ``"auto"`` (default):
        ``AUTO_NOUNS_MAX_DF`` on a corpus of long documents (fewer than half of the
        chunks are whole documents), else 1.0 (passages, where a noun such as "film"
        is what links two passages about films).
    n_process : int, optional
        spaCy processes (default: the index's ``workers``, at most the CPU count).
    batch_size : int
        Chunks per batch sent to a process.
    """

    name = "entity_graph"
    version = 4  # 3: max_df "auto"; 4: nouns_max_df  # stored as the one graph value
    _extract_version = 4  # part of the per-chunk cache key: bump when extraction output changes
    runtime_params = ("n_process", "batch_size")
    requires = ()
    uses_llm = False

    def __init__(
        self,
        *,
        labels: Sequence[str] = DEFAULT_LABELS,
        split_names: bool = True,
        sentences: SentenceMode = "senter",
        common_nouns: bool = True,
        max_df: float | str = "auto",
        nouns_max_df: float | str = "auto",
        n_process: int | None = None,
        batch_size: int = 8,
    ) -> None:
        self.labels = labels
        self.split_names = split_names
        self.sentences = sentences
        self.common_nouns = common_nouns
        self.max_df = max_df
        self.nouns_max_df = nouns_max_df
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
            common_nouns=bool(self.common_nouns),
            n_process=n_process,
            batch_size=self.batch_size,
        )

    def _cache_salt(self, extractor: EntityExtractor) -> str:
        """What per-chunk extraction results depend on: the model and the extractor's settings
        (not ``max_df``, which filters after extraction)."""
        key: dict[str, Any] = {
            "model": MODEL,
            "v": self._extract_version,
            "labels": list(extractor.labels),
            "split_names": extractor.split_names,
            "sentences": extractor.sentences,
        }
        if not extractor.common_nouns:  # absent by default: caches from before the setting stay valid
            key["common_nouns"] = False
        return json.dumps(key, sort_keys=True, default=str)

    def resolved_max_df(self, n_documents: int) -> float:
        """``max_df`` as a number: ``"auto"`` is 0.02 from 10 documents on, else 1.0."""
        if self.max_df == "auto":
            return AUTO_MAX_DF if n_documents >= AUTO_MIN_DOCUMENTS else 1.0
        return _fraction("max_df", self.max_df)

    def resolved_nouns_max_df(self, whole_document_share: float) -> float:
        """``nouns_max_df`` as a number: ``"auto"`` is :data:`AUTO_NOUNS_MAX_DF` on a corpus of
        long documents (fewer than half of the chunks are whole documents), else 1.0."""
        if self.nouns_max_df == "auto":
            return AUTO_NOUNS_MAX_DF if whole_document_share < MIN_PASSAGE_SHARE else 1.0
        return _fraction("nouns_max_df", self.nouns_max_df)

    def build(self, ctx: BuildContext) -> StructureData:
        chunks = ctx.chunks
        max_df = self.resolved_max_df(len(set(chunks.doc_ids)))
        extractor = self.extractor(ctx.workers)
        t0 = time.perf_counter()
        # per-chunk results are cached by chunk text and extractor settings, so an insert
        # runs spaCy on its new chunks only and a delete on none (the graph is re-assembled)
        salt = self._cache_salt(extractor)
        cluster = getattr(ctx, "cluster", None)  # Ray tasks (paretorag.indexing.distributed) or here

        def extract(texts: list[str]) -> Iterable[tuple[Any, int]]:
            if cluster is not None:
                found: Iterable[tuple[Any, int]] = cluster.extract(extractor.worker_settings(), texts)
                return found
            return (([ex.sentences, ex.nouns], ex.n_tokens) for ex in extractor.extract(texts))

        run = cached_per_text(ctx, "entities", salt, list(chunks.texts), extract, "entity graph (spaCy)")
        per_chunk = [sents for sents, _ in run.values]
        n_tokens = run.n_tokens
        seconds_nlp = time.perf_counter() - t0
        dropped: set[str] = set()
        if max_df < 1:
            dropped = frequent_terms(per_chunk, max_df)
        nouns_max_df = self.resolved_nouns_max_df(chunks.whole_document_share())
        generic: set[str] = set()
        if nouns_max_df < 1:
            generic = common_nouns_only(run.values) & frequent_terms(per_chunk, nouns_max_df)
        if dropped or generic:
            gone = dropped | generic
            per_chunk = [[[t for t in sent if t not in gone] for sent in sents] for sents in per_chunk]
        graph = graph_from_mentions(per_chunk, len(chunks))
        stats: dict[str, Any] = {
            "entities": graph.n_nodes,
            "edges": int(graph.adjacency.nnz // 2),
            "mentions": int(graph.node_chunks.sum()),
            "spacy_tokens": n_tokens,
            "spacy_seconds": round(seconds_nlp, 4),
            "spacy_tokens_per_s": round(n_tokens / seconds_nlp, 1) if seconds_nlp > 0 else 0.0,
            "n_process": extractor.n_process,
            "chunks_extracted": run.computed,
            "chunks_from_cache": len(chunks) - run.computed,
            "dropped_frequent": len(dropped),
            "dropped_generic_nouns": len(generic - dropped),
            "max_df": max_df,
            "nouns_max_df": nouns_max_df,
        }
        meta = {
            "n_chunks": len(chunks),
            "model": MODEL,
            "labels": list(extractor.labels),
            "split_names": bool(extractor.split_names),
            "sentences": extractor.sentences,
            "common_nouns": extractor.common_nouns,
            "stats": stats,
        }
        return graph_to_structure(graph, meta=meta)


__all__ = ["EntityGraph", "frequent_terms", "graph_from_mentions"]
