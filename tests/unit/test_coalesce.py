"""Questions asked at once share forward passes; each asker gets its own vector or error."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from paretorag.providers.coalesce import QueryCoalescer
from paretorag.providers.embedders import HashEmbedder


class SlowEmbedder:
    """A hash embedder whose passes take a while and are recorded (sizes, in order)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.inner = HashEmbedder(dim=16)
        self.batches: list[int] = []
        self.fail_on = fail_on
        self.gate = threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        self.batches.append(len(texts))
        self.gate.wait(0.05)  # long enough for the other askers to queue behind this pass
        if self.fail_on in texts:
            raise ValueError(f"cannot embed {self.fail_on!r}")
        return self.inner.embed(texts)


def test_one_question_alone_is_one_pass_of_one():
    emb = SlowEmbedder()
    emb.gate.set()
    c = QueryCoalescer(emb.embed)
    v = c.embed_one("who wrote it")
    assert np.allclose(v, emb.inner.embed(["who wrote it"])[0])
    assert emb.batches == [1] and c.passes == 1


def test_concurrent_questions_share_passes_and_get_their_own_vectors():
    emb = SlowEmbedder()
    c = QueryCoalescer(emb.embed, max_batch=8)
    questions = [f"question {i}" for i in range(24)]
    with ThreadPoolExecutor(24) as pool:
        got = list(pool.map(c.embed_one, questions))
    want = emb.inner.embed(questions)
    for g, w in zip(got, want, strict=True):
        assert np.allclose(g, w)
    assert sum(emb.batches) == 24
    assert max(emb.batches) <= 8
    assert c.passes < 24, f"no pass was shared: {emb.batches}"


def test_a_failed_pass_raises_in_every_asker_of_it_and_the_next_pass_runs():
    emb = SlowEmbedder(fail_on="bad")
    c = QueryCoalescer(emb.embed)
    errors: list[BaseException] = []
    results: dict[str, np.ndarray] = {}

    def ask(q: str) -> None:
        try:
            results[q] = c.embed_one(q)
        except ValueError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(q,)) for q in ("first", "bad", "x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), "an asker was left waiting"
    assert "bad" not in results and errors
    assert all("cannot embed 'bad'" in str(e) for e in errors)
    # the coalescer is free again: a later question is answered
    emb.fail_on = None
    assert c.embed_one("later").shape == (16,)


def test_max_batch_must_be_positive():
    with pytest.raises(ValueError, match="max_batch"):
        QueryCoalescer(HashEmbedder(dim=4).embed, max_batch=0)


def test_minilm_questions_embedded_together_equal_alone(onnx_minilm):
    """Real MiniLM (ONNX): a question's vector does not depend on who asked with it."""
    questions = ["Who directed Titanic?", "When was the director of Jaws born?", "Where is the Louvre?"] * 4
    c = QueryCoalescer(onnx_minilm.embed)
    with ThreadPoolExecutor(len(questions)) as pool:
        got = list(pool.map(c.embed_one, questions))
    for q, g in zip(questions, got, strict=True):
        np.testing.assert_allclose(g, onnx_minilm.embed([q])[0], atol=1e-5)
