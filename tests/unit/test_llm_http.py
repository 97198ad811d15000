from __future__ import annotations

import itertools
import socket

import pytest

from paretorag.errors import LLMError, LLMResponseError, LLMTimeoutError
from paretorag.providers.base import user_prompt
from paretorag.providers.llm import OpenAILLM

from ..llm_server import ok_body, scripted_server


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


def test_malformed_retry_after_falls_back_to_backoff():
    script = [
        (429, b"{}", 0, {"Retry-After": "nan"}),
        (503, b"{}", 0, {"Retry-After": "-3"}),
        (429, b"{}", 0, {"Retry-After": "soon, maybe"}),
        (429, b"{}", 0, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),  # in the past: no wait
        (200, ok_body("fine"), 0),
    ]
    with scripted_server(script) as (url, hits):
        llm = OpenAILLM("m", base_url=url, backoff=0.01, max_retries=5)
        assert llm.complete(user_prompt("hi")).text == "fine"
    assert len(hits) == 5


def test_retry_after_values():
    from datetime import UTC, datetime

    from paretorag.providers.http import retry_after_seconds

    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("2") == 2.0 and retry_after_seconds(" 0.5 ") == 0.5
    for bad in (None, "", "nan", "inf", "-1", "soon", "Wed, 99 Foo 2015"):
        assert retry_after_seconds(bad, now) is None, bad
    assert retry_after_seconds("Wed, 01 Jan 2025 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Wed, 01 Jan 2025 11:00:00 GMT", now) == 0.0


def test_cache_is_keyed_by_server_model_and_settings(monkeypatch):
    from paretorag.providers.wrappers import CachedLLM

    class DictStore:
        def __init__(self):
            self.data = {}

        def get_llm(self, key):
            return self.data.get(key)

        def put_llm(self, key, model, response):
            self.data[key] = response

    store = DictStore()
    with (
        scripted_server([(200, ok_body("from A"), 0)]) as (url_a, hits_a),
        scripted_server([(200, ok_body("from B"), 0)]) as (url_b, hits_b),
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", url_a)
        a = CachedLLM(OpenAILLM("same-model"), store)
        assert a.complete(user_prompt("hi")).text == "from A"
        monkeypatch.setenv("OPENAI_BASE_URL", url_b)
        b = CachedLLM(OpenAILLM("same-model"), store)
        assert b.complete(user_prompt("hi")).text == "from B"  # not A's cached answer
        again = b.complete(user_prompt("hi"))
        assert again.text == "from B" and again.cached
        assert not b.complete(user_prompt("hi", max_tokens=7)).cached  # a generation setting
        other = CachedLLM(OpenAILLM("other-model"), store)
        assert not other.complete(user_prompt("hi")).cached
    assert len(hits_a) == 1 and len(hits_b) == 3


def test_openai_without_environment_fails_at_once(monkeypatch):
    import time

    from paretorag.errors import ConfigError
    from paretorag.providers.llm import make_llm

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"OPENAI_BASE_URL.*OPENAI_API_KEY"):
        make_llm("openai:gpt-4o-mini")
    # a refused connection is not retried for long
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAILLM("m", base_url=f"http://127.0.0.1:{port}/v1")  # default retries and backoff
    t0 = time.monotonic()
    with pytest.raises(LLMError, match=r"is the server running.*OPENAI_BASE_URL"):
        llm.complete(user_prompt("hi"))
    assert time.monotonic() - t0 < 3.0


def test_the_openai_client_sends_the_key_only_when_there_is_one_and_streams():
    import json

    from paretorag.providers.embedders import RegexTokenizer
    from paretorag.providers.wrappers import CountingLLM
    from paretorag.types import Usage

    seen: list = []
    with scripted_server([(200, ok_body("fine"), 0)], seen) as (url, _):
        OpenAILLM("m", base_url=url, api_key="sk-test").complete(user_prompt("hi", max_tokens=9))
        OpenAILLM("m", base_url=url, api_key="").complete(user_prompt("hi"))
    (with_key, body), (without, _) = seen
    assert with_key["authorization"] == "Bearer sk-test" and "authorization" not in without
    assert body["model"] == "m" and body["max_tokens"] == 9 and body["messages"][-1]["content"] == "hi"
    chunks = ["Otters ", "eat ", "fish."]
    events = [{"choices": [{"delta": {"content": c}}]} for c in chunks]
    events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    script = [(200, sse.encode(), 0, {"Content-Type": "text/event-stream"})]
    with scripted_server(script, seen) as (url, hits):
        assert list(OpenAILLM("m", base_url=url, api_key="").stream(user_prompt("hi"))) == chunks
    assert seen[-1][1]["stream"] is True and len(hits) == 1
    usage = Usage()  # counting is unchanged: one call, the server's token counts
    with scripted_server([(200, ok_body("fine"), 0)]) as (url, _):
        counted = CountingLLM(
            OpenAILLM("m", base_url=url, api_key=""), usage, "query.answer", RegexTokenizer()
        )
        counted.complete(user_prompt("hi"))
    total = usage.total
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (1, 11, 2)


def test_a_404_is_not_retried_and_names_the_status():
    with (
        scripted_server([(404, b'{"error": {"message": "no such model"}}', 0)]) as (url, hits),
        pytest.raises(LLMError, match=r"refused the request: HTTP 404: .*no such model"),
    ):
        OpenAILLM("m", base_url=url, backoff=0.01).complete(user_prompt("hi"))
    assert len(hits) == 1
