"""The OpenAI-compatible routes through the official ``openai`` client against a real server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from paretorag import FakeLLM
from paretorag.providers.base import Request
from paretorag.server import KeyRing, create_app
from paretorag.server.compat import condense_offline, names_in

from ..server_util import build_index, live_server, write_corpus

RW = "rw-key-0123456789abcdef"
RO = "ro-key-0123456789abcdef"
BEAVERS = [
    {"role": "user", "content": "Tell me about Beavers."},
    {"role": "assistant", "content": "Beavers are rodents.\n\nSources:\n[1] beavers"},
    {"role": "user", "content": "What do they build?"},
]


@pytest.fixture(scope="module")
def wildlife(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("compat")
    return build_index(root / "wildlife", write_corpus(root / "src"))


@pytest.fixture(scope="module")
def base(wildlife) -> Iterator[str]:
    with live_server(create_app(wildlife)) as url:
        yield url


def client(base: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=30)


def test_models_are_index_slash_method(base):
    ids = [m.id for m in client(base).models.list()]
    assert "wildlife/vanilla" in ids and all(i.startswith("wildlife/") for i in ids)
    assert client(base).models.retrieve("wildlife/vanilla").owned_by == "paretorag"


def test_completion_cites_in_text_and_in_the_extra_field(base):
    r = client(base).chat.completions.create(
        model="wildlife/vanilla", messages=[{"role": "user", "content": "What do otters eat?"}]
    )
    text = r.choices[0].message.content
    extra = r.model_extra["paretorag"]
    assert r.model == "wildlife/vanilla" and r.choices[0].finish_reason == "stop"
    assert "[1]" in text and text.endswith("\n\nSources:\n[1] otters"), text
    assert extra["citations"][0]["title"] == "otters" and "fish" in extra["citations"][0]["text"]
    assert extra["question"] == "What do otters eat?" and extra["condensed"] is False
    assert extra["method"] == "vanilla" and set(extra["usage"]) == {
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
    }
    assert r.usage is not None and r.usage.total_tokens == 0  # the offline reader answered
    same = client(base).chat.completions.create(  # a bare method name is accepted too
        model="vanilla", messages=[{"role": "user", "content": "What do otters eat?"}]
    )
    assert same.choices[0].message.content == text


def test_stream_gives_the_same_text_and_the_citations_last(base):
    messages = [{"role": "user", "content": "What do otters eat?"}]
    whole = client(base).chat.completions.create(model="wildlife/vanilla", messages=messages)
    chunks = list(
        client(base).chat.completions.create(
            model="wildlife/vanilla", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(finals) == 1 and finals[0].model_extra["paretorag"]["citations"][0]["marker"] == 1
    assert chunks[-1].usage is not None and not chunks[-1].choices  # stream_options.include_usage


def test_typed_errors(base):
    c = client(base)
    with pytest.raises(openai.NotFoundError, match="wildlife/vanilla") as nf:
        c.chat.completions.create(model="nope/vanilla", messages=[{"role": "user", "content": "hi"}])
    assert nf.value.code == "model_not_found" and nf.value.param == "model"
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("wildlife/no-such-method")
    with pytest.raises(openai.BadRequestError, match="no user message"):
        c.chat.completions.create(
            model="wildlife/vanilla", messages=[{"role": "system", "content": "be brief"}]
        )
    with pytest.raises(openai.BadRequestError, match="limit 2000"):
        c.chat.completions.create(
            model="wildlife/vanilla", messages=[{"role": "user", "content": "otters " * 400}]
        )


def test_keys(wildlife):
    ring = KeyRing.from_pairs([("write", RW), ("read", RO)])
    with live_server(create_app(wildlife, keys=ring)) as base:
        with pytest.raises(openai.AuthenticationError, match="unknown API key") as err:
            client(base, "wrong-key-0123456789abcdef").chat.completions.create(
                model="wildlife/vanilla", messages=[{"role": "user", "content": "otters?"}]
            )
        assert err.value.status_code == 401 and err.value.code == "invalid_api_key"
        missing = httpx.post(
            base + "/v1/chat/completions", json={"model": "wildlife/vanilla", "messages": []}
        )
        assert missing.status_code == 401 and missing.json()["error"]["message"].startswith("missing API key")
        with pytest.raises(openai.AuthenticationError):
            client(base, "wrong-key-0123456789abcdef").models.list()
        for key in (RW, RO):  # a read-only key can chat
            r = client(base, key).chat.completions.create(
                model="wildlife/vanilla", messages=[{"role": "user", "content": "otters?"}]
            )
            assert r.model_extra["paretorag"]["citations"]


def test_a_follow_up_carries_the_earlier_names_offline(base):
    r = client(base).chat.completions.create(model="wildlife/vanilla", messages=BEAVERS)
    extra = r.model_extra["paretorag"]
    assert extra["question"] == "What do they build? (Beavers)" and extra["condensed"] is True
    assert extra["citations"][0]["title"] == "beavers", extra["citations"]
    assert "beavers" in r.choices[0].message.content.split("Sources:")[1]


def test_names_and_offline_condensation():
    assert names_in("Tell me about Sea Otters and the Bank of England. What is it?") == [
        "Sea Otters",
        "Bank of England",
    ]
    assert condense_offline(["Who founded Acme Corp?", "And Globex?"], "When was it founded?") == (
        "When was it founded? (Globex, Acme Corp)"
    )
    assert condense_offline(["Tell me about Beavers."], "Do Beavers swim?") == "Do Beavers swim?"
    assert condense_offline(["what do they eat?"], "and where?") == "and where?"


def test_with_an_llm_the_llm_condenses_and_streams(wildlife):
    def script(request: Request) -> str:
        prompt = request.messages[-1].content
        if prompt.startswith("Conversation:"):
            assert "User: Tell me about Beavers." in prompt and "Sources:" not in prompt
            return "What do beavers build?\n"
        return "Beavers build dams of branches and mud [1]."

    llm = FakeLLM(script)
    with live_server(create_app(wildlife, llm=llm)) as base:
        c = client(base)
        # streamed first (the second time the answer comes from the cache, in one piece)
        chunks = list(c.chat.completions.create(model="wildlife/vanilla", messages=BEAVERS, stream=True))
        pieces = [ch.choices[0].delta.content for ch in chunks if ch.choices and ch.choices[0].delta.content]
        usage = chunks[-1].model_extra["paretorag"]["usage"]
        assert usage["llm_calls"] == 2 and usage["prompt_tokens"] > 0  # the condensation and the answer
        r = c.chat.completions.create(model="wildlife/vanilla", messages=BEAVERS)
        extra = r.model_extra["paretorag"]
        assert extra["question"] == "What do beavers build?" and extra["condensed"] is True
        assert extra["answered_by"] == "fake"
        text = "Beavers build dams of branches and mud [1].\n\nSources:\n[1] beavers"
        assert r.choices[0].message.content == text
        assert len(pieces) > 3 and "".join(pieces) == text  # word by word
    assert (
        sum(1 for q in llm.requests if q.messages[-1].content.startswith("Conversation:")) == 1
    )  # then cached


def test_a_failing_llm_is_a_502_and_an_error_event_mid_stream(wildlife):
    from paretorag import OpenAILLM

    down = OpenAILLM("m", base_url="http://127.0.0.1:9/v1", api_key="", max_retries=0)
    with live_server(create_app(wildlife, llm=down)) as base:
        c = client(base)
        with pytest.raises(openai.InternalServerError, match="cannot connect") as err:
            c.chat.completions.create(model="wildlife/vanilla", messages=BEAVERS[:1])
        assert err.value.status_code == 502 and err.value.code == "llm_failed"
        stream = c.chat.completions.create(model="wildlife/vanilla", messages=BEAVERS[:1], stream=True)
        with pytest.raises(openai.APIError, match="cannot connect"):
            list(stream)


def test_one_reader_slot_is_enough(wildlife):
    """A chat takes one reading slot (the model lookup does not take a second one)."""
    with live_server(create_app(wildlife, readers=1, reader_wait_s=2)) as base:
        r = client(base).chat.completions.create(model="wildlife/vanilla", messages=BEAVERS)
        assert r.model_extra["paretorag"]["condensed"]
        assert [m.id for m in client(base).models.list()]  # the slot was given back
