"""index(A), insert(B), delete(B) retrieves exactly like index(A)."""

from __future__ import annotations

import numpy as np
import pytest

from paretorag import RAG
from paretorag.errors import InputError

QUESTIONS = [
    "Who wrote the novel?",
    "What is the occupation of the person?",
    "In what country is it?",
    "Who was the director?",
]


def _retrieve(rag: RAG) -> list[list[tuple[str, float]]]:
    return [
        [(c.chunk_id, round(c.score, 6)) for c in rag.query(q, k=5, context_only=True).contexts]
        for q in QUESTIONS
    ]


def test_insert_then_delete_equals_never_inserted(tmp_path, minilm, popqa_slice):
    docs, _ = popqa_slice
    a, b = docs[:25], docs[25:]
    only_a = RAG.open(tmp_path / "a", embedder=minilm)
    only_a.index(a)
    expected = _retrieve(only_a)

    rag = RAG.open(tmp_path / "ab", embedder=minilm)
    rag.index(a)
    rag.insert(b)
    assert rag.manifest.counts["documents"] == len(docs)
    with_b = _retrieve(rag)
    assert with_b != expected  # B is retrievable
    removed = rag.delete([d.doc_id for d in b])
    assert sorted(removed) == sorted(d.doc_id for d in b)
    assert _retrieve(rag) == expected
    np.testing.assert_array_equal(rag.view.vectors.matrix, only_a.view.vectors.matrix)
    assert list(rag.view.chunks.ids) == list(only_a.view.chunks.ids)
    assert rag.manifest.counts["documents"] == len(a)
    # deleted documents are gone from the database, not only hidden
    assert rag.store.counts()["documents"] == len(a)


def test_delete_unknown_id_changes_nothing(tmp_path, minilm, popqa_slice):
    docs, _ = popqa_slice
    rag = RAG.open(tmp_path / "ix", embedder=minilm)
    rag.index(docs[:5])
    with pytest.raises(InputError, match="unknown document ids: nope"):
        rag.delete([docs[0].doc_id, "nope"])
    assert rag.manifest.counts["documents"] == 5


def test_replaced_methods_keep_their_structures_until_the_chunks_change(tmp_path, popqa_slice):
    """replace_methods: the dropped method's structure stays (and serves) while the chunks
    are unchanged; the first insert updates only the kept methods and deletes the rest."""
    from paretorag.providers.embedders import HashEmbedder

    docs, _ = popqa_slice
    ix = tmp_path / "ix"
    with RAG.open(ix, methods=["vanilla", "bm25"], embedder=HashEmbedder(32)) as rag:
        rag.index(docs[:20])
        bm25_dir = ix / "structures" / rag.manifest.structures["bm25"]["dir"]
    with RAG.open(ix, methods=["vanilla", "raptor"], replace_methods=True, embedder=HashEmbedder(32)) as rag:
        rag.index(docs[:20])  # builds raptor_tree and commits
        assert rag.manifest.config.methods == ["vanilla", "raptor"]
        assert set(rag.manifest.structures) == {"bm25", "raptor_tree", "reader_spans"} and bm25_dir.is_dir()
        assert rag.query("Who wrote the novel?", method="bm25", context_only=True).contexts
        rag.insert(docs[20:25])
        assert set(rag.manifest.structures) == {"raptor_tree", "reader_spans"}
        assert not bm25_dir.exists()
