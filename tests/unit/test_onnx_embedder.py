"""MiniLM on ONNX Runtime: the torch vectors, the torch tokens, a checked cache, a fallback."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from paretorag.errors import ConfigError, EmbedderError, MissingDependencyError
from paretorag.providers import onnx_embedder as ox
from paretorag.providers.embedder_spec import make_embedder
from paretorag.providers.embedders import SentenceTransformerEmbedder

from ..conftest import DATA


def _corpus_texts(n: int) -> list[str]:
    """Passages of two shared corpora as the index embeds them (title, newline, text)."""
    out: list[str] = []
    for name in ("musique/musique_dev200_corpus.json", "2wikimultihopqa/2wikimultihopqa_dev164_corpus.json"):
        rows = json.loads((DATA / name).read_text())[: n // 2]
        out.extend(f"{r['title']}\n{r['text']}" for r in rows)
    return out


def test_fp32_gives_the_torch_vectors_on_shared_corpora(minilm, onnx_minilm):
    texts = _corpus_texts(96)
    texts.append(" ".join(texts[:6]))  # longer than one window
    questions = [
        r["question"] for r in json.loads((DATA / "musique" / "musique_dev200.json").read_text())[:32]
    ]
    for batch in (texts, questions):
        got, want = onnx_minilm.embed(batch), minilm.embed(batch)
        cos = np.sum(got * want, axis=1)
        assert cos.min() >= ox.MIN_COSINE, (cos.min(), batch[int(cos.argmin())][:80])
    assert onnx_minilm.backend == "onnx-fp32" and onnx_minilm.name == minilm.name
    assert onnx_minilm.export.cosine("fp32") >= ox.MIN_COSINE  # what the export recorded


def test_int8_is_close_but_named_apart(minilm):
    int8 = make_embedder("minilm-int8")
    texts = _corpus_texts(32)
    cos = np.sum(int8.embed(texts) * minilm.embed(texts), axis=1)
    assert int8.name == "all-MiniLM-L6-v2-int8" and int8.backend == "onnx-int8"
    assert 0.95 <= cos.mean() < 0.9999  # quantized: near the torch vectors, not the same


def test_tokens_are_the_torch_tokenizers(minilm, onnx_minilm):
    texts = [*_corpus_texts(40), "Ärzte ohne Grenzen", "  spaces\tand\nnewlines  ", ""]
    assert onnx_minilm.tokenizer.count(texts) == minilm.tokenizer.count(texts)
    for t in texts:
        assert onnx_minilm.tokenizer.offsets(t) == minilm.tokenizer.offsets(t)
    long = " ".join(texts[:8])
    assert onnx_minilm.windows(long) == minilm.windows(long)


def test_token_embeddings_pool_to_the_text_vector(onnx_minilm, minilm):
    texts = ["The snowy owl lives in the Arctic tundra.", " ".join(_corpus_texts(8))]
    outs = onnx_minilm.token_embeddings(texts)
    ref = minilm.token_embeddings(texts)
    vecs = onnx_minilm.embed(texts)
    for te, r, v in zip(outs, ref, vecs, strict=True):
        np.testing.assert_allclose(te.vector, v, atol=1e-5)
        np.testing.assert_array_equal(te.offsets, r.offsets)
        assert te.tokens.shape == r.tokens.shape
        assert (
            np.min(
                np.sum(te.tokens * r.tokens, axis=1)
                / (np.linalg.norm(te.tokens, axis=1) * np.linalg.norm(r.tokens, axis=1))
            )
            >= ox.MIN_COSINE
        )


def test_batches_sorted_by_length_give_each_text_its_own_vector(onnx_minilm):
    texts = ["a", "a much longer sentence with many more word pieces in it than the first", "b c"]
    batch = onnx_minilm.embed(texts)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(batch[i], onnx_minilm.embed([t])[0], atol=1e-5)
    assert onnx_minilm.embed([]).shape == (0, 384)


def _copy_export(onnx_minilm, root):
    target = root / onnx_minilm.export.folder.name
    shutil.copytree(onnx_minilm.export.folder, target)
    return target


def test_damaged_export_is_refused_by_its_checksum(tmp_path, onnx_minilm):
    folder = _copy_export(onnx_minilm, tmp_path)
    assert ox.Export.load(folder) is not None  # copied: other mtimes, same bytes (hashed)
    f = folder / "model-int8.onnx"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte changed
    f.write_bytes(bytes(data))
    assert ox.Export.load(folder) is None
    (folder / "model.onnx").write_bytes(b"short")
    assert ox.Export.load(folder) is None


def test_falls_back_to_torch_when_the_export_does_not_match(tmp_path, monkeypatch, onnx_minilm, capsys):
    monkeypatch.setenv("PARETORAG_CACHE_DIR", str(tmp_path))
    folder = ox.export_dir(onnx_minilm.path)
    folder.parent.mkdir(parents=True)
    shutil.copytree(onnx_minilm.export.folder, folder)
    meta = json.loads((folder / "meta.json").read_text())
    meta["cosine_min"]["fp32"] = 0.97
    (folder / "meta.json").write_text(json.dumps(meta))
    emb = make_embedder("minilm")
    assert isinstance(emb, ox.OnnxEmbedder) and emb.backend == "unloaded"
    vec = emb.embed(["The snowy owl lives in the Arctic tundra."])
    assert emb.backend == "torch" and vec.shape == (1, 384)
    assert "embedding with torch" in capsys.readouterr().err
    strict = ox.OnnxEmbedder(fallback=False)
    strict.load()
    assert strict.backend == "onnx-fp32"  # asked for ONNX: served although it is far


def test_an_export_that_cannot_be_made_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PARETORAG_CACHE_DIR", str(tmp_path))  # no export there

    def no_torch(path):
        raise MissingDependencyError("exporting needs torch: pip install torch")

    monkeypatch.setattr(ox, "ensure_export", no_torch)
    monkeypatch.setattr(ox, "_installed", lambda module: module != "torch")
    with pytest.raises(EmbedderError, match="needs torch: pip install torch"):
        make_embedder("minilm").embed(["x"])


def test_backend_setting(monkeypatch):
    monkeypatch.setenv(ox.BACKEND_ENV, "torch")
    assert isinstance(make_embedder("minilm"), SentenceTransformerEmbedder)
    with pytest.raises(ConfigError, match="ONNX only"):
        make_embedder("minilm-int8")
    monkeypatch.setenv(ox.BACKEND_ENV, "gpu")
    with pytest.raises(ConfigError, match="use auto, onnx or torch"):
        make_embedder("minilm")
    monkeypatch.setenv(ox.BACKEND_ENV, "onnx")
    assert isinstance(make_embedder(None), ox.OnnxEmbedder)
    monkeypatch.setenv(ox.THREADS_ENV, "0")
    with pytest.raises(ConfigError, match=ox.THREADS_ENV):
        ox.session_threads()


def test_length_batches_keep_short_windows_apart_from_long_ones():
    from paretorag.providers.onnx_embedder import length_batches

    lengths = [256, 256, 256, 256, 40, 256, 256, 100, 30]
    batches = length_batches(lengths, 3)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 3 and max(lengths[i] for i in b) <= 4 / 3 * min(lengths[i] for i in b)
    assert length_batches([10] * 5, 2) == [[0, 1], [2, 3], [4]]


def test_vectors_depend_on_the_batch_in_their_last_bits_only(onnx_minilm):
    long = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(80))
    texts = ["a short passage", long, "another short one about Lisbon", long[:300]]
    together = onnx_minilm.embed(texts)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(together[i], onnx_minilm.embed([t])[0], atol=1e-6)
