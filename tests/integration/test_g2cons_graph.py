"""G2ConS concept graph (papers/g2cons.txt §3.2): keywords, Eq. 1 vectors, edges, storage."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse as sp

from paretorag.graphs.base import StructureData
from paretorag.graphs.concepts import (
    ConceptGraph,
    chunk_documents,
    concept_edges,
    extract_concepts,
    load_sentences,
)
from paretorag.graphs.graph import graph_from_structure
from paretorag.progress import NullProgress
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.store import ChunkTable
from paretorag.textutil import split_sentences
from paretorag.types import Chunk


def table(texts: list[str], titles: list[str] | None = None) -> ChunkTable:
    titles = titles or [""] * len(texts)
    return ChunkTable.from_chunks(
        [
            Chunk(f"d{i}#0", f"d{i}", 0, 0, len(t), t, len(t.split()), title)
            for i, (t, title) in enumerate(zip(texts, titles, strict=True))
        ]
    )


class CountingEmbedder:
    """HashEmbedder recording every call."""

    def __init__(self, dim: int = 32) -> None:
        self.inner = HashEmbedder(dim)
        self.name, self.dim, self.tokenizer = self.inner.name, dim, self.inner.tokenizer
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


@dataclass
class Ctx:
    """The part of the Indexer's BuildContext the concept graph uses."""

    chunks: ChunkTable
    embedder: CountingEmbedder = field(default_factory=CountingEmbedder)
    progress: NullProgress = field(default_factory=NullProgress)
    workers: int = 1


CORPUS = [
    "Alice Carter founded Acme Robotics in 1990. The company builds welding robots.",
    "Acme Robotics hired Bob Stone. Bob Stone designed welding robots for Acme Robotics.",
    "Welding robots from Acme Robotics won a prize. Alice Carter accepted the prize.",
    "The river Ouse floods every spring. Farmers near the Ouse plant late.",
]


def test_keywords_filter_stopwords_and_numbers() -> None:
    names, inc = extract_concepts(CORPUS, top_n=50, max_df=1.0, incidence="contains")
    assert "acme" in names and "ouse" in names
    assert not {"the", "in", "1990", "every"} & set(names)
    assert inc.shape == (4, len(names))
    # "contains": a concept is linked to every chunk containing the word (§1)
    assert inc[:, names.index("acme")].toarray().ravel().tolist() == [1, 1, 1, 0]


def test_top_n_limits_keywords_per_chunk_in_source_mode() -> None:
    names, inc = extract_concepts(CORPUS, top_n=2, max_df=1.0, incidence="source")
    assert (np.diff(inc.indptr) <= 2).all()
    assert len(names) <= 8


def test_dice_weights_and_both_thresholds() -> None:
    # units (chunks) x concepts a, b, c, d
    inc = sp.csr_matrix(
        np.array(
            [
                [1, 1, 1, 1],
                [1, 1, 1, 1],
                [1, 1, 0, 1],
                [1, 1, 0, 0],
                [1, 0, 0, 0],
                [0, 0, 0, 0],
            ],
            dtype=np.float32,
        )
    )
    sb, sd = np.sqrt(1 - 0.9**2), np.sqrt(1 - 0.66**2)
    vecs = np.array([[1, 0], [0.9, sb], [1, 0], [0.66, -sd]], dtype=np.float32)
    adj = concept_edges(inc, vecs, theta_sem=0.65, theta_co=3).toarray()
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 2 * 4 / (5 + 4)  # Co=4, |T_a|=5, |T_b|=4
    expected[0, 3] = expected[3, 0] = 2 * 3 / (5 + 3)  # Co=3 (at theta_co), cos 0.66
    # (a, c): cos 1 but Co=2 < 3; (b, d): Co=3 but cos 0.27 < 0.65; (c, d): Co=2
    np.testing.assert_allclose(adj, expected, rtol=1e-6)
    # no similarity filter (Table 4, B): every pair with Co >= 3 is an edge
    loose = concept_edges(inc, None, theta_sem=0.65, theta_co=3).toarray()
    assert loose[1, 3] == pytest.approx(2 * 3 / (4 + 3))
    assert loose[0, 2] == 0
    # raising theta_sem above 0.66 drops (a, d); small blocks give the same graph
    strict = concept_edges(inc, vecs, theta_sem=0.67, theta_co=3, block=1, pair_block=1).toarray()
    assert strict[0, 3] == 0 and strict[0, 1] > 0


def test_concept_vectors_are_mean_of_sentence_embeddings() -> None:
    ctx = Ctx(table(CORPUS))
    data = ConceptGraph(top_n=50, max_df=1.0, include_title=False).build(ctx)
    graph = graph_from_structure(data)
    names = graph.names
    emb = HashEmbedder(32)
    sentences = [s for text in CORPUS for s in split_sentences(text)]
    for word in ("acme", "prize", "ouse", "welding"):
        containing = sorted({s for s in sentences if word in s.lower().replace(".", " ").split()})
        expected = emb.embed(containing).mean(axis=0)
        expected /= np.linalg.norm(expected)  # stored normalized, as the node index reads them
        np.testing.assert_allclose(graph.node_vectors[names.index(word)], expected, atol=1e-6)
    # every distinct sentence holding a concept is embedded once, in one call
    assert len(ctx.embedder.calls) == 1
    embedded = ctx.embedder.calls[0]
    assert len(embedded) == len(set(embedded)) == data.meta["n_embedded_sentences"]


def test_structure_arrays_are_safe_and_round_trip() -> None:
    data = ConceptGraph(top_n=50, max_df=1.0, theta_sem=0.0, theta_co=2).build(Ctx(table(CORPUS)))
    buf = io.BytesIO()
    np.savez(buf, **data.arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as npz:
        loaded = StructureData({k: npz[k] for k in npz.files}, data.meta)
    for arr in loaded.arrays.values():
        assert arr.dtype.kind in "iufU"
    graph = graph_from_structure(loaded)
    n = data.meta["n_concepts"]
    assert graph.adjacency.shape == (n, n) and graph.node_chunks.shape == (n, 4)
    assert (graph.adjacency != graph.adjacency.T).nnz == 0
    assert data.meta["n_edges"] == graph.adjacency.nnz // 2 > 0
    np.testing.assert_allclose(np.linalg.norm(graph.node_vectors, axis=1), 1.0, rtol=1e-5)
    sents, chunk_of = load_sentences(loaded)
    assert sents.shape[0] == chunk_of.size == data.meta["n_sentences"]
    # core chunks: top ceil(0.8 * 4) = 4 chunks... with kappa 0.5, 2 chunks, best first
    assert data.arrays["core_rows"].size == 4
    half = ConceptGraph(top_n=50, max_df=1.0, kappa=0.5).build(Ctx(table(CORPUS)))
    core = half.arrays["core_rows"]
    assert core.size == 2 and half.meta["core"]["array"] == "core_rows"
    assert (np.diff(half.arrays["chunk_score"][core]) <= 0).all()
    assert 3 not in core  # the river chunk is unrelated to the rest


def test_sentence_cooccurrence_is_sparser_than_chunk_cooccurrence() -> None:
    data = ConceptGraph(top_n=50, max_df=1.0).build(Ctx(table(CORPUS)))
    graph = graph_from_structure(data)
    sents, _ = load_sentences(data)
    chunk_level = concept_edges(graph.node_chunks.T.tocsr(), None, theta_co=1)
    sentence_level = concept_edges(sents, None, theta_co=1)
    assert 0 < sentence_level.nnz < chunk_level.nnz


def test_titles_become_sentences_and_empty_corpus_builds() -> None:
    docs = chunk_documents(table(["He was born in Paris."], ["Victor Hugo"]))
    assert docs == [["Victor Hugo", "He was born in Paris."]]
    data = ConceptGraph().build(Ctx(table(["", "1990 2001"])))
    assert data.meta["n_concepts"] == 0 and data.arrays["core_rows"].size == 2
    assert graph_from_structure(data).adjacency.shape == (0, 0)
