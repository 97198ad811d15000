from __future__ import annotations

import numpy as np

from paretorag.indexing.embed_cache import CachedEmbedder
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.store import Store


def test_short_text_is_one_window(minilm):
    assert minilm.windows("a short sentence") == ["a short sentence"]


def test_windowed_embedding_is_mean_of_windows(minilm):
    text = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(80))
    windows = minilm.windows(text)
    assert len(windows) >= 3
    for w in windows:
        assert minilm.tokenizer.count([w])[0] <= minilm.max_tokens
    assert "".join(windows).split() == text.split()  # nothing dropped
    whole = minilm.embed([text])[0]
    parts = minilm.embed(windows)
    mean = parts.mean(axis=0)
    np.testing.assert_allclose(whole, mean / np.linalg.norm(mean), atol=1e-5)
    # not the truncated embedding of the first window
    assert float(whole @ parts[0]) < 0.999


def test_batch_matches_single(minilm):
    texts = ["alpha beta", "gamma delta epsilon", "zeta"]
    batch = minilm.embed(texts)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(batch[i], minilm.embed([t])[0], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


class _Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return super().embed(texts)


def test_cache_by_text_hash(tmp_path):
    store = Store(tmp_path)
    inner = _Counting()
    emb = CachedEmbedder(inner, store)
    a = emb.embed(["x y", "z", "x y"])
    assert inner.seen == ["x y", "z"]
    b = CachedEmbedder(inner, Store(tmp_path)).embed(["z", "x y"])
    assert inner.seen == ["x y", "z"]  # served from the store
    np.testing.assert_array_equal(a[[1, 0]], b)


def test_batches_hold_about_the_same_number_of_windows():
    from paretorag.indexing.embed_cache import window_batches

    assert window_batches(list("abcdef"), [1, 1, 30, 40, 70, 1], size=64) == [
        ["a", "b", "c"],
        ["d"],
        ["e"],
        ["f"],
    ]
    assert window_batches([], [], size=64) == []


class _Recording:
    def __init__(self) -> None:
        self.tasks: list[tuple[str, int | None, list[int]]] = []

    def task(self, description, total):
        from contextlib import contextmanager

        steps: list[int] = []
        self.tasks.append((description, total, steps))

        @contextmanager
        def run():
            class T:
                def advance(self, n=1):
                    steps.append(n)

            yield T()

        return run()


def test_long_texts_are_batched_and_counted_by_window(tmp_path, minilm):
    long = [
        " ".join(f"Chunk {k} sentence {i} is about topic {i % 7}." for i in range(300)) for k in range(12)
    ]
    per_text = [len(minilm.windows(t)) for t in long]
    assert min(per_text) >= 10  # each long text is many windows
    progress = _Recording()
    emb = CachedEmbedder(minilm, Store(tmp_path), progress)
    assert [emb.windows(t) for t in long] == per_text and emb.windows("short") == 1
    vecs = emb.embed([*long, "a short passage"])
    np.testing.assert_allclose(vecs[0], minilm.embed([long[0]])[0], atol=1e-5)
    ((label, total, steps),) = progress.tasks
    assert total == sum(per_text) + 1 and sum(steps) == total
    assert "13 texts" in label and f"{total} windows" in label
    assert len(steps) >= sum(per_text) // 64  # the bar moves per batch of about 64 windows, not per 64 texts
    # the windows were embedded through the cache: asking for them again embeds nothing
    again = CachedEmbedder(minilm, Store(tmp_path))
    windows = minilm.windows(long[3])
    np.testing.assert_allclose(again.embed(windows), minilm.embed(windows), atol=1e-5)
    assert again.computed == 0
