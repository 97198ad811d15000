from __future__ import annotations

import itertools
import socket

import pytest

from paretorag.errors import LLMError, LLMResponseError, LLMTimeoutError
from paretorag.providers.base import user_prompt
from paretorag.providers.llm import OpenAILLM

from .llm_server import ok_body, scripted_server


def test_retries_429_500_and_garbage_then_succeeds():
    script = [
        (429, b'{"error": "slow down"}', 0),
        (500, b"oops", 0),
        (200, b"<html>garbage", 0),
        (200, b'{"x": 1}', 0),
        (200, ok_body(), 0),
    ]
    with scripted_server(script) as (url, hits):
        llm = OpenAILLM("m", base_url=url, api_key="k", backoff=0.05, max_retries=5)
        out = llm.complete(user_prompt("hi"))
    assert out.text == "hello [1]" and out.prompt_tokens == 11 and out.completion_tokens == 2
    assert len(hits) == 5
    gaps = [b - a for a, b in itertools.pairwise(hits)]
    # exponential backoff: each wait at least half the nominal 0.05 * 2**i
    for i, g in enumerate(gaps):
        assert g >= 0.05 * 2**i * 0.5 * 0.9


def test_gives_up_on_persistent_garbage():
    with scripted_server([(200, b"not json", 0)]) as (url, hits):
        llm = OpenAILLM("m", base_url=url, backoff=0.01, max_retries=2)
        with pytest.raises(LLMResponseError, match="not JSON"):
            llm.complete(user_prompt("hi"))
    assert len(hits) == 3


def test_timeout_is_retried_then_reported():
    with scripted_server([(200, ok_body(), 1.0)]) as (url, hits):
        llm = OpenAILLM("m", base_url=url, timeout=0.2, backoff=0.01, max_retries=1)
        with pytest.raises(LLMTimeoutError, match="timed out"):
            llm.complete(user_prompt("hi"))
    assert len(hits) == 2


def test_server_down():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAILLM("m", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01, max_retries=1)
    with pytest.raises(LLMError, match="is the server running"):
        llm.complete(user_prompt("hi"))


def test_client_error_is_not_retried():
    with (
        scripted_server([(401, b'{"error": "bad key"}', 0)]) as (url, hits),
        pytest.raises(LLMError, match="401"),
    ):
        OpenAILLM("m", base_url=url, backoff=0.01).complete(user_prompt("hi"))
    assert len(hits) == 1


def test_openai_embeddings_endpoint():
    import json

    import numpy as np

    from paretorag.providers.embedders import OpenAIEmbedder

    body = json.dumps(
        {"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 4.0]}]}
    ).encode()
    with scripted_server([(503, b"busy", 0), (200, body, 0)]) as (url, hits):
        emb = OpenAIEmbedder("e", base_url=url, dim=2)
        emb._client.backoff = 0.01
        vecs = emb.embed(["a", "b"])
    np.testing.assert_allclose(vecs, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)
    assert len(hits) == 2
