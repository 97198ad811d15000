"""Indexing cost: one forward pass per chunk, no repeated work, approximate vector search.

- the concept graph's sentence vectors pooled from the chunk's own pass (G2ConS Eq. 1,
  ``sentence_vectors="pooled"``) cost no model call of their own;
- each text is embedded at most once per index and each chunk parsed by spaCy once for
  every builder that reads the parse (counting wrappers around the models);
- the model calls per stage appear in ``paretorag inspect --json``;
- ``--ann hnsw|ivf`` stores an approximate faiss index whose recall against exact search
  is high on clustered vectors.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import ConfigError
from paretorag.graphs.concepts import ConceptGraph, chunk_documents, sentence_char_spans
from paretorag.indexing.embed_cache import CachedEmbedder
from paretorag.providers import nlp_kg
from paretorag.providers.embedders import HashEmbedder, TokenEmbeddings, pool_spans
from paretorag.storage.store import Store
from paretorag.storage.vectors import VectorIndex, build_faiss, resolve_ann

from ..builders_util import CORPUS, Ctx, table


class CountingEmbedder(HashEmbedder):
    """The hash embedder, recording every text each model entry point sees."""

    def __init__(self) -> None:
        super().__init__(32)
        self.embedded: list[str] = []
        self.passed: list[str] = []
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.embedded.extend(texts)
        return super().embed(texts)

    def token_embeddings(self, texts: list[str]) -> list[TokenEmbeddings]:
        with self._lock:
            self.passed.extend(texts)
        return super().token_embeddings(texts)


def _docs(tmp_path: Path, n: int = 3) -> Path:
    src = tmp_path / "docs"
    src.mkdir()
    for i, text in enumerate(CORPUS * n):
        (src / f"doc{i}.txt").write_text(f"{text} Note {i} on Harvard University and Steven Spielberg.")
    return src


# -- one forward pass per chunk ------------------------------------------------------


def test_hash_token_embeddings_pool_to_the_embedding_of_the_span() -> None:
    emb = HashEmbedder(32)
    text = "Barack Obama was born in Hawaii. He studied law at Harvard."
    (te,) = emb.token_embeddings([text])
    np.testing.assert_allclose(te.vector, emb.embed([text])[0], atol=1e-6)
    assert [text[a:b] for a, b in te.offsets[:3]] == ["Barack", "Obama", "was"]
    spans = [(0, 32), (33, len(text)), (32, 33)]
    pooled = pool_spans(te, spans)
    np.testing.assert_allclose(pooled[0], emb.embed([text[:32]])[0], atol=1e-6)
    np.testing.assert_allclose(pooled[1], emb.embed([text[33:]])[0], atol=1e-6)
    assert not pooled[2].any()  # a span holding no token: a zero row


def test_sentence_spans_locate_every_sentence_in_the_embedded_text() -> None:
    chunks = table(CORPUS)
    texts = chunks.embedded_texts(True)
    docs = chunk_documents(chunks, include_title=True)
    spans = sentence_char_spans(chunks, texts, include_title=True)
    for text, sents, row in zip(texts, docs, spans, strict=True):
        assert [text[a:b] for a, b in row] == sents  # titles are in "title\ntext"
    untitled = sentence_char_spans(chunks, chunks.embedded_texts(False), include_title=True)
    assert all(row[0] is None for row in untitled)  # the title is not in the pass: no span
    assert all(s is not None for row in untitled for s in row[1:])


def test_pooled_equals_separate_for_a_bag_of_words_embedder() -> None:
    # the hash embedder has no context, so pooling the chunk's tokens over a sentence
    # gives exactly the sentence's own embedding: both modes build the same graph
    kw = {"top_n": 50, "max_df": 1.0, "theta_sem": 0.0, "theta_co": 1}
    sep = ConceptGraph(**kw, sentence_vectors="separate").build(Ctx(table(CORPUS)))
    pool = ConceptGraph(**kw, sentence_vectors="pooled").build(Ctx(table(CORPUS)))
    assert pool.meta["sentence_vectors"] == "pooled" and sep.meta["sentence_vectors"] == "separate"
    assert pool.meta["n_embedded_sentences"] == 0 < sep.meta["n_embedded_sentences"]
    np.testing.assert_allclose(pool.arrays["node_vectors"], sep.arrays["node_vectors"], atol=1e-5)
    assert (pool.arrays["adj_indices"] == sep.arrays["adj_indices"]).all()


def test_pooled_is_the_default() -> None:
    assert ConceptGraph().sentence_vectors == "pooled"


def test_unknown_sentence_vectors_setting_is_named() -> None:
    with pytest.raises(ConfigError, match="sentence_vectors"):
        ConceptGraph(sentence_vectors="both").build(Ctx(table(CORPUS)))  # type: ignore[arg-type]


def test_pooled_index_passes_each_chunk_once_and_embeds_no_sentence(tmp_path: Path) -> None:
    src = _docs(tmp_path)
    emb = CountingEmbedder()
    settings = {"concept_graph": {"sentence_vectors": "pooled", "top_n": 50, "max_df": 1.0}}
    with RAG.open(tmp_path / "ix", methods=["g2cons-concept"], embedder=emb, builders=settings) as rag:
        rag.index([src])
        n_chunks = rag.stats()["counts"]["chunks"]
        calls = rag.stats()["model_calls"]
        embedded = list(emb.embedded)
        answer = rag.query("Where was Barack Obama born?", method="g2cons-concept")
    assert len(emb.passed) == len(set(emb.passed)) == n_chunks  # one pass per chunk
    assert embedded == []  # no sentence (and no chunk) embedded on its own
    assert calls["vectors"]["embed_texts"] == n_chunks and calls["vectors"]["pooled_spans"] > n_chunks
    assert "embed_texts" not in calls["build.concept_graph"]
    assert answer.contexts


def test_separate_index_embeds_sentences_in_the_builder(tmp_path: Path) -> None:
    src = _docs(tmp_path)
    emb = CountingEmbedder()
    settings = {"concept_graph": {"sentence_vectors": "separate", "top_n": 50, "max_df": 1.0}}
    with RAG.open(tmp_path / "ix", methods=["g2cons-concept"], embedder=emb, builders=settings) as rag:
        rag.index([src])
        calls = rag.stats()["model_calls"]
    assert emb.passed == []
    assert len(emb.embedded) == len(set(emb.embedded))
    assert calls["build.concept_graph"]["embed_texts"] > 0


# -- no repeated work -----------------------------------------------------------------


def test_parallel_builders_embed_shared_texts_once(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    (tmp_path / "ix").mkdir()
    store = Store(tmp_path / "ix")
    cached = CachedEmbedder(inner, store)
    texts = [f"sentence number {i} about owls" for i in range(300)]
    barrier = threading.Barrier(3)

    def build(part: list[str]) -> None:
        barrier.wait()
        cached.embed(part)

    threads = [threading.Thread(target=build, args=(texts[i : i + 200],)) for i in (0, 50, 100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert len(inner.embedded) == len(set(inner.embedded)) == 300


@pytest.mark.slow
def test_builders_sharing_texts_and_parses_compute_them_once(tmp_path: Path, monkeypatch) -> None:
    # kg (HippoRAG) and fact_graph (HippoRAG 2) both read the spaCy dependency parse of
    # every chunk and embed entity names; each chunk is parsed once, each text embedded once
    parsed: list[str] = []
    real = nlp_kg.run_kg_pipe

    def counting_pipe(nlp, texts, batch_size):  # type: ignore[no-untyped-def]
        parsed.extend(texts)
        return real(nlp, texts, batch_size)

    monkeypatch.setattr(nlp_kg, "run_kg_pipe", counting_pipe)
    monkeypatch.setattr(nlp_kg, "_MEMO", {})  # nothing parsed by other tests in this process
    src = _docs(tmp_path)
    emb = CountingEmbedder()
    methods = ["hipporag", "hipporag2"]
    with RAG.open(tmp_path / "ix", methods=methods, embedder=emb, workers=1) as rag:
        rag.index([src])
        stats = rag.stats()
    n_chunks = stats["counts"]["chunks"]
    assert {"kg", "fact_graph"} <= set(stats["structures"])
    assert len(parsed) == len(set(parsed)) == n_chunks
    assert sum(c.get("spacy_docs", 0) for c in stats["model_calls"].values()) == n_chunks
    assert len(emb.embedded) == len(set(emb.embedded))
    # a re-run in a new process would find the parses in the index's cache
    monkeypatch.setattr(nlp_kg, "_MEMO", {})
    with RAG.open(
        tmp_path / "ix", methods=methods, embedder=emb, builders={"kg": {"synonyms": False}}
    ) as rag:
        rag.index([src])
    assert len(parsed) == n_chunks


def test_inspect_json_reports_model_calls_per_stage(tmp_path: Path) -> None:
    src = _docs(tmp_path)
    ix = str(tmp_path / "ix")
    runner = CliRunner()
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash", "-m", "g2cons-concept"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["inspect", "--index", ix, "--json"])
    calls = json.loads(r.output)["model_calls"]
    assert calls["vectors"]["embed_texts"] == 12 and calls["vectors"]["embed_batches"] == 1
    assert calls["vectors"]["pooled_spans"] > 12  # the concept graph's sentences, same pass
    assert calls["build.concept_graph"] == {"embed_cached": 12}
    r = runner.invoke(app, ["inspect", "--index", ix], env={"COLUMNS": "200"})
    assert "texts embedded" in r.output and "spans pooled" in r.output  # counts that are not 0


# -- approximate vector search --------------------------------------------------------


def _clustered(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((64, d))
    x = centers[rng.integers(0, 64, n)] + 0.5 * rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_resolve_ann() -> None:
    assert resolve_ann("auto", 999_999) == "exact"
    assert resolve_ann("auto", 1_000_000) == "hnsw"
    assert resolve_ann("ivf", 10) == "ivf"
    with pytest.raises(ConfigError, match="ann must be one of"):
        resolve_ann("lsh", 10)


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_index_recall_against_exact(kind: str) -> None:
    x = _clustered(20_000, 32)
    queries = _clustered(100, 32, seed=1)
    exact = build_faiss(x, "exact").search(queries, 10)[1]
    approx = build_faiss(x, kind).search(queries, 10)[1]
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.9, recall


def test_ann_is_chosen_at_index_time_and_stored(tmp_path: Path) -> None:
    src = _docs(tmp_path, n=20)  # 80 chunks: enough to train IVF lists
    for kind in ("hnsw", "ivf"):
        ix = tmp_path / f"ix-{kind}"
        with RAG.open(ix, embedder="hash", ann=kind) as rag:
            rag.index([src])
            stem = rag.manifest.vectors
            hits = rag.query("Where was Barack Obama born?", method="vanilla").contexts
        assert stem.endswith(f"-{kind}")
        assert VectorIndex.load(ix / "vectors", stem).kind == kind
        assert hits
    # switching back to exact rebuilds the faiss file at the next commit, not the vectors
    with RAG.open(tmp_path / "ix-ivf", ann="exact") as rag:
        rag.index([src])
        stem = rag.manifest.vectors
    assert (
        not stem.endswith("-ivf") and VectorIndex.load(tmp_path / "ix-ivf" / "vectors", stem).kind == "exact"
    )


def test_exact_index_keeps_its_file_name(tmp_path: Path) -> None:
    with RAG.open(tmp_path / "ix", embedder="hash") as rag:
        rag.index([_docs(tmp_path)])
        assert rag.manifest.config.ann == "auto"
        assert rag.manifest.vectors.endswith("-titled")  # indexes built before --ann stay valid


# -- the real model ---------------------------------------------------------------------


@pytest.mark.slow
def test_minilm_token_pass_gives_the_embedding_and_covers_long_texts(minilm) -> None:
    long = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(80))
    texts = ["Jaws\nJaws is a 1975 film directed by Steven Spielberg.", long]
    tes = minilm.token_embeddings(texts)
    np.testing.assert_allclose(np.stack([t.vector for t in tes]), minilm.embed(texts), atol=1e-5)
    starts = tes[1].offsets[:, 0]
    assert (np.diff(starts) > 0).all() and starts[-1] > len(long) - 10  # every window, in order
    assert len(tes[1].tokens) > minilm.max_tokens  # more than one window's tokens
    sent = "Jaws is a 1975 film directed by Steven Spielberg."
    a = texts[0].index(sent)
    pooled = pool_spans(tes[0], [(a, a + len(sent))])[0]
    assert float(pooled @ minilm.embed([sent])[0]) > 0.8  # close to the sentence's own vector
