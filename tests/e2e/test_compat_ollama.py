"""The Ollama emulation through the official ``ollama`` client against a real server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import ollama
import pytest

from paretorag.server import KeyRing, create_app

from ..server_util import build_index, live_server, write_corpus

KEY = "rw-key-0123456789abcdef"
OTTERS = [{"role": "user", "content": "What do otters eat?"}]


@pytest.fixture(scope="module")
def wildlife(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ollama")
    return build_index(root / "wildlife", write_corpus(root / "src"))


@pytest.fixture(scope="module")
def base(wildlife) -> Iterator[str]:
    with live_server(create_app(wildlife)) as url:
        yield url


def test_tags_and_version(base):
    names = [m.model for m in ollama.Client(host=base).list().models]
    assert "wildlife/vanilla" in names and all(n.startswith("wildlife/") for n in names)
    v = httpx.get(base + "/api/version").json()
    assert v["version"].count(".") == 2 and "paretorag" in v


def test_chat_whole_and_streamed_give_the_same_cited_text(base):
    c = ollama.Client(host=base)
    whole = c.chat(model="wildlife/vanilla", messages=OTTERS)
    text = whole.message.content
    assert whole.done and whole.message.role == "assistant"
    assert "[1]" in text and text.endswith("\n\nSources:\n[1] otters"), text
    parts = list(c.chat(model="wildlife/vanilla:latest", messages=OTTERS, stream=True))
    assert "".join(p.message.content for p in parts) == text
    assert parts[-1].done and parts[-1].done_reason == "stop" and not any(p.done for p in parts[:-1])


def test_stream_is_the_default_and_the_last_line_has_the_citations(base):
    r = httpx.post(base + "/api/chat", json={"model": "wildlife/vanilla", "messages": OTTERS})
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert len(lines) >= 2 and lines[-1]["done"] is True
    assert lines[-1]["paretorag"]["citations"][0]["title"] == "otters"


def test_a_follow_up_carries_the_earlier_names(base):
    messages = [
        {"role": "user", "content": "Tell me about Beavers."},
        {"role": "assistant", "content": "Beavers are rodents."},
        {"role": "user", "content": "What do they build?"},
    ]
    r = ollama.Client(host=base).chat(model="wildlife/vanilla", messages=messages)
    assert "beavers" in r.message.content.split("Sources:")[1]
    raw = httpx.post(
        base + "/api/chat", json={"model": "wildlife/vanilla", "messages": messages, "stream": False}
    )
    extra = raw.json()["paretorag"]
    assert (
        extra["question"] == "What do they build? (Beavers)" and extra["citations"][0]["title"] == "beavers"
    )


def test_errors(base, wildlife):
    with pytest.raises(ollama.ResponseError, match="unknown model 'llama3'") as err:
        ollama.Client(host=base).chat(model="llama3", messages=OTTERS)
    assert err.value.status_code == 404
    with pytest.raises(ollama.ResponseError, match="no user message") as err:
        ollama.Client(host=base).chat(
            model="wildlife/vanilla", messages=[{"role": "system", "content": "hi"}]
        )
    assert err.value.status_code == 400
    with live_server(create_app(wildlife, keys=KeyRing.from_pairs([("write", KEY)]))) as keyed:
        wrong = ollama.Client(host=keyed, headers={"Authorization": "Bearer wrong-key-0123456789abcdef"})
        with pytest.raises(ollama.ResponseError, match="unknown API key") as err:
            wrong.chat(model="wildlife/vanilla", messages=OTTERS, stream=True).__next__()
        assert err.value.status_code == 401
        with pytest.raises(ollama.ResponseError) as err:
            wrong.list()
        assert err.value.status_code == 401
        right = ollama.Client(host=keyed, headers={"Authorization": f"Bearer {KEY}"})
        assert "Sources:" in right.chat(model="wildlife/vanilla", messages=OTTERS).message.content
