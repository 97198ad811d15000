from __future__ import annotations

import numpy as np

from paretorag.graphs.base import StructureData
from paretorag.ingest.chunking import chunk_document
from paretorag.ingest.files import make_document
from paretorag.providers.embedders import RegexTokenizer
from paretorag.storage.store import Store
from paretorag.storage.structures import load_structure, save_structure
from paretorag.storage.vectors import VectorIndex


def _docs():
    tok = RegexTokenizer()
    out = []
    for i in range(3):
        d = make_document(f"doc{i}", " ".join(f"Sentence {j} of doc {i}." for j in range(40)), f"mem{i}")
        out.append((d, chunk_document(d, tok, size=50, overlap=10)))
    return out


def test_round_trip_and_order(tmp_path):
    store = Store(tmp_path)
    docs = _docs()
    for d, ch in docs:
        store.add_document(d, ch)
    store.close()
    table = Store(tmp_path).chunk_table()
    expected = [c for _, ch in docs for c in ch]
    assert list(table.ids) == [c.chunk_id for c in expected]
    assert list(table.texts) == [c.text for c in expected]
    assert table.chunk(3) == expected[3]


def test_content_hash_dedupe_and_tombstones(tmp_path):
    store = Store(tmp_path)
    (d, ch), (d2, ch2) = _docs()[:2]
    store.add_document(d, ch)
    store.add_document(d, ch)
    assert store.counts()["documents"] == 1
    store.add_document(d2, ch2)
    fp_both = store.chunk_table().fingerprint()
    assert store.mark_deleted([d2.doc_id, "nope"]) == [d2.doc_id]
    assert not store.has_document(d2.doc_id)
    assert len(store.chunk_table()) == len(ch)
    # committed ids still resolve until purged
    assert len(store.chunk_table(list(ch) and [c.chunk_id for c in ch2])) == len(ch2)
    store.purge_deleted()
    assert store.counts()["chunks"] == len(ch)
    assert store.chunk_table().fingerprint() != fp_both


def test_vectors_and_structures_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    m = rng.normal(size=(20, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    VectorIndex(m).save(tmp_path, "v")
    vi = VectorIndex.load(tmp_path, "v")
    np.testing.assert_array_equal(vi.matrix, m)
    hit = vi.search(m[7], 3)
    assert hit.ids[0] == 7 and abs(hit.scores[0] - 1.0) < 1e-5
    exact = np.argsort(-(m @ m[7]))[:3]
    assert list(hit.ids) == list(exact)
    data = StructureData({"a": np.arange(5), "names": np.array(["x", "yy"])}, {"k": [1, 2]})
    save_structure(tmp_path, "s-1", data)
    back = load_structure(tmp_path, "s-1")
    np.testing.assert_array_equal(back.arrays["a"], np.arange(5))
    assert list(back.arrays["names"]) == ["x", "yy"] and back.meta == {"k": [1, 2]}


def test_structure_dir_depends_on_settings_version_and_chunks():
    from paretorag.storage.structures import structure_dirname

    base = structure_dirname("tree", "fp1", {"params": {"g": 5}}, 1)
    assert base.startswith("tree-") and base == structure_dirname("tree", "fp1", {"params": {"g": 5}}, 1)
    others = {
        structure_dirname("tree", "fp1", {"params": {"g": 4}}, 1),
        structure_dirname("tree", "fp1", {"params": {"g": 5}}, 2),
        structure_dirname("tree", "fp2", {"params": {"g": 5}}, 1),
        structure_dirname("tree", "fp1", {"params": {"g": 5}, "inputs": ["x-1"]}, 1),
    }
    assert base not in others and len(others) == 4


def test_chunks_read_back_with_their_heading_paths(tmp_path):
    tok = RegexTokenizer()
    body = " ".join(f"Sentence {j} about rivers." for j in range(30))
    text = f"# Atlas\n\n{body}\n\n## Rivers\n\n{body}\n\n### Rhine\n\n{body}"
    doc = make_document("Atlas", text, "atlas.md")
    passage = make_document("Rhine", "## Not a section\n\nThe Rhine flows north.", "c.json#0", presplit=True)
    store = Store(tmp_path)
    store.add_document(doc, chunk_document(doc, tok, size=60, overlap=10, by="sections"))
    store.add_document(passage, chunk_document(passage, tok, size=60, overlap=10))
    table = store.chunk_table()
    rows = [r for r in range(len(table)) if table.doc_ids[r] == doc.doc_id]
    paths = [table.heading(r) for r in rows]
    assert paths[0] == "" and "Rivers" in paths and "Rivers > Rhine" in paths  # "Atlas" is the title
    assert table.heading(len(table) - 1) == ""  # a pre-split passage has no path
    embedded = table.embedded_texts(True, headings=True)  # BM25's texts
    for r in rows:
        expected = f"{table.heading(r)}\n{table.texts[r]}" if table.heading(r) else table.texts[r]
        assert embedded[r] == expected
    assert embedded[-1] == "Rhine\n## Not a section\n\nThe Rhine flows north."
    vectors = table.embedded_texts(True)  # the vectors' texts: no heading path
    assert [vectors[r] for r in rows] == [table.texts[r] for r in rows] and vectors[-1] == embedded[-1]
    assert table.embedded_texts(False) == list(table.texts)
    assert table.chunk(rows[-1]).heading == "Rivers > Rhine"
