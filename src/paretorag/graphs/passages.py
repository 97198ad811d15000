"""KGP's passage graph and its TF-IDF index (unified framework §4 "Passage Graph", §5 node index).

Nodes are the chunks (passages), in chunk-table order: ``node_chunks`` is the identity
and a node's name is its chunk id. Two kinds of edges, as KGP builds them (KGP §3.1,
"entity linking" and "TF-IDF KNN" graphs), merged into one weighted adjacency:

- shared entities: chunks sharing at least ``min_shared_entities`` named entities (spaCy
  NER, :mod:`paretorag.providers.nlp_kg`, in place of KGP's TAGME linker) are linked,
  weight = the number of shared entities;
- TF-IDF: each chunk is linked to its ``tfidf_k`` most similar chunks by TF-IDF cosine
  (at least ``tfidf_threshold``), weight = the cosine. An edge found both ways gets the
  sum.

The fitted TF-IDF index is stored beside the graph (the TF-IDF node operator of §6.1
scores a question against it without pickle): ``tfidf_indptr`` / ``tfidf_indices`` /
``tfidf_data`` (chunk x term CSR, L2-normalized rows), ``tfidf_idf`` and the vocabulary
``tfidf_vocab_utf8`` / ``tfidf_vocab_offsets`` (term of column ``j``), with the
vectorizer settings in ``meta["tfidf"]``; :func:`tfidf_query` vectorizes a question.
No LLM call.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..kernels.knn import knn_pairs
from ..params import check_fraction, check_nonneg_int, check_positive_int
from ..storage.structures import StructureData, pack_texts, unpack_texts
from .base import BuildContext, Builder, register_builder
from .graph import Edges, Graph, csr, graph_to_structure
from .kg_extract import parsed_chunks

TFIDF_SETTINGS: dict[str, Any] = {
    "lowercase": True,
    "token_pattern": r"(?u)\b\w\w+\b",
    "stop_words": "english",
    "smooth_idf": True,
    "sublinear_tf": False,
    "norm": "l2",
}
"""scikit-learn ``TfidfVectorizer`` settings used to fit the index (stored in ``meta["tfidf"]``)."""


def _vectorizer(settings: dict[str, Any], vocabulary: list[str] | None = None) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(vocabulary=vocabulary, dtype=np.float32, **settings)


def tfidf_query(data: StructureData, question: str) -> sp.csr_matrix:
    """The question as a 1 x terms TF-IDF row over a passage graph's stored index (L2-normalized).

    Scores against the passages are ``tfidf_matrix(data) @ row.T``.
    """
    a = data.arrays
    vocab = unpack_texts(a["tfidf_vocab_utf8"], a["tfidf_vocab_offsets"])
    settings = data.meta["tfidf"]
    counts = _vectorizer(settings, vocab).build_analyzer()(question)
    ids = {t: j for j, t in enumerate(vocab)}
    cols = [ids[t] for t in counts if t in ids]
    row = sp.csr_matrix(
        (np.ones(len(cols), np.float32), (np.zeros(len(cols), np.int64), cols)), shape=(1, len(vocab))
    )
    row.sum_duplicates()
    if settings.get("sublinear_tf"):
        row.data = 1.0 + np.log(row.data)
    row = row.multiply(a["tfidf_idf"][None, :]).tocsr()
    norm = float(np.sqrt(row.multiply(row).sum()))
    return row / norm if norm > 0 else row


def tfidf_matrix(data: StructureData) -> sp.csr_matrix:
    """The stored chunk x term TF-IDF matrix."""
    a = data.arrays
    shape = (int(data.meta["graph"]["n_chunks"]), int(a["tfidf_idf"].size))
    return sp.csr_matrix((a["tfidf_data"], a["tfidf_indices"], a["tfidf_indptr"]), shape=shape)


@register_builder
class PassageGraph(Builder):
    """Passages linked by shared entities and TF-IDF similarity (KGP §3.1; unified framework §4).

    Parameters
    ----------
    min_shared_entities : int
        Shared named entities needed for an entity edge (§4: "larger than a threshold");
        0 turns entity edges off.
    tfidf_k : int
        TF-IDF nearest neighbours linked per passage (KGP's KNN graph); 0 turns them off.
    tfidf_threshold : float
        Least TF-IDF cosine for a TF-IDF edge.
    n_process, batch_size
        spaCy processes and texts per batch.
    """

    name = "passage_graph"
    runtime_params = ("n_process", "batch_size")
    uses_llm = False

    def __init__(
        self,
        *,
        min_shared_entities: int = 1,
        tfidf_k: int = 5,
        tfidf_threshold: float = 0.1,
        n_process: int | None = None,
        batch_size: int = 16,
    ) -> None:
        self.min_shared_entities = min_shared_entities
        self.tfidf_k = tfidf_k
        self.tfidf_threshold = tfidf_threshold
        self.n_process = n_process
        self.batch_size = batch_size

    def build(self, ctx: BuildContext) -> StructureData:
        check_nonneg_int(self, "min_shared_entities", self.min_shared_entities)
        check_nonneg_int(self, "tfidf_k", self.tfidf_k)
        check_fraction(self, "tfidf_threshold", self.tfidf_threshold)
        check_positive_int(self, "batch_size", self.batch_size)
        chunks = ctx.chunks
        n = len(chunks)
        if n == 0:
            raise ConfigError("the passage graph needs at least one chunk; add documents first")
        texts = list(chunks.texts)
        adj = sp.csr_matrix((n, n), dtype=np.float32)
        n_entity_edges = n_tfidf_edges = 0
        if self.min_shared_entities:
            procs = self.n_process or max(1, min(int(ctx.workers or 1), os.cpu_count() or 1))
            exs, _ = parsed_chunks(
                ctx,
                check_positive_int(self, "n_process", procs),
                self.batch_size,
                "passage graph: entities (spaCy)",
            )
            vocab: dict[str, int] = {}
            rows, cols = [], []
            for r, ex in enumerate(exs):
                for name in {e[0] for e in ex.entities}:
                    rows.append(r)
                    cols.append(vocab.setdefault(name, len(vocab)))
            inc = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, len(vocab)))
            shared = (inc @ inc.T).tocsr()
            shared.setdiag(0)
            shared.data[shared.data < self.min_shared_entities] = 0
            shared.eliminate_zeros()
            n_entity_edges = shared.nnz // 2
            adj = adj + shared
        vec = _vectorizer(TFIDF_SETTINGS)
        try:
            x = csr(vec.fit_transform(texts)).astype(np.float32)
            terms = list(vec.get_feature_names_out())
            idf = np.asarray(vec.idf_, dtype=np.float32)
        except ValueError:  # no term at all (only stop words / symbols): an empty index
            x, terms, idf = sp.csr_matrix((n, 0), dtype=np.float32), [], np.zeros(0, np.float32)
        if self.tfidf_k and x.shape[1]:
            i, j, s = knn_pairs(x, k=self.tfidf_k, threshold=self.tfidf_threshold)
            n_tfidf_edges = int(i.size)
            adj = adj + sp.csr_matrix(
                (np.concatenate([s, s]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n)
            )
        adj = csr(adj)
        upper = sp.triu(adj, k=1).tocoo()
        m = upper.nnz
        inc_rows = np.repeat(np.arange(m), 2)
        edge_chunks = csr(
            sp.csr_matrix(
                (np.ones(2 * m, np.float32), (inc_rows, np.stack([upper.row, upper.col], 1).ravel())),
                shape=(m, n),
            )
        )
        edges = Edges(
            upper.row.astype(np.int64), upper.col.astype(np.int64), upper.data.astype(np.float32), edge_chunks
        )
        graph = Graph(
            list(chunks.ids), ["passage"] * n, adj, csr(sp.identity(n, dtype=np.float32, format="csr")), edges
        )
        blob, offsets = pack_texts(terms)
        arrays = {
            "tfidf_indptr": x.indptr.astype(np.int64),
            "tfidf_indices": x.indices.astype(np.int32),
            "tfidf_data": x.data.astype(np.float32),
            "tfidf_idf": idf,
            "tfidf_vocab_utf8": blob,
            "tfidf_vocab_offsets": offsets,
        }
        summary = {
            "entity_edges": int(n_entity_edges),
            "tfidf_edges": n_tfidf_edges,
            "terms": len(terms),
            "llm_calls": 0,
        }
        meta = {"settings": self.get_params(deep=False), "tfidf": TFIDF_SETTINGS, "summary": summary}
        return graph_to_structure(graph, meta=meta, arrays=arrays)


__all__ = ["TFIDF_SETTINGS", "PassageGraph", "tfidf_matrix", "tfidf_query"]
