"""Chunk vectors embed "title\ntext" by default; the setting is part of the vectors' identity."""

from __future__ import annotations

import json

import numpy as np

from paretorag import RAG
from paretorag.storage.store import ChunkTable
from paretorag.types import Chunk


def _corpus(tmp_path):
    path = tmp_path / "corpus.json"
    records = [
        {"title": "Ada Lovelace", "text": "She wrote the first published program."},
        {"title": "", "text": "An untitled note about engines."},
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_embedded_texts_prefix_titles():
    chunks = [
        Chunk("a", "d1", 0, 0, 5, "body one", 2, title="Title One"),
        Chunk("b", "d2", 0, 0, 5, "body two", 2, title="  "),
        Chunk("c", "d3", 0, 0, 5, "part one", 2, title="Long Page"),
        Chunk("d", "d3", 1, 5, 9, "part two", 2, title="Long Page"),
    ]
    table = ChunkTable.from_chunks(chunks)
    # only a chunk that is its whole document carries the title
    assert table.embedded_texts() == ["Title One\nbody one", "body two", "part one", "part two"]
    assert table.embedded_texts(titles=False) == ["body one", "body two", "part one", "part two"]


def test_vectors_follow_the_setting(tmp_path):
    corpus = _corpus(tmp_path)
    idx = tmp_path / "idx"
    with RAG.open(idx, embedder="hash") as rag:
        rag.index([corpus])
        titled = rag.manifest.vectors
        assert titled.endswith("-titled")
        table = rag.store.chunk_table()
        expected = rag.embedder.embed(table.embedded_texts(True))
        np.testing.assert_allclose(np.load(idx / "vectors" / f"{titled}.npy"), expected, atol=1e-6)
    # turning titles off re-embeds at the next commit, with nothing else to index
    with RAG.open(idx, embedder="hash", embed_titles=False) as rag:
        report = rag.index([corpus])
        assert report.committed
        plain = rag.manifest.vectors
        assert not plain.endswith("-titled") and plain != titled
        expected = rag.embedder.embed(list(rag.store.chunk_table().texts))
        np.testing.assert_allclose(np.load(idx / "vectors" / f"{plain}.npy"), expected, atol=1e-6)
        assert rag.manifest.config.embed_titles is False
    # an index written before the setting existed (text-only vectors under the plain name)
    # reads as titled and re-embeds
    manifest = json.loads((idx / "manifest.json").read_text())
    del manifest["config"]["embed_titles"]
    (idx / "manifest.json").write_text(json.dumps(manifest))
    with RAG.open(idx, embedder="hash") as rag:
        assert rag.index([corpus]).committed
        assert rag.manifest.vectors == titled
