"""Wrappers around any LLM: response cache, usage counting per stage, bounded concurrency."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, Protocol

from ..types import Usage
from .base import LLM, Completion, Request, Tokenizer, is_generative
from .notices import run_in_context


class ResponseStore(Protocol):
    def get_llm(self, key: str) -> str | None: ...

    def put_llm(self, key: str, model: str, response: str) -> None: ...


def request_key(model: str | Mapping[str, Any], request: Request) -> str:
    """Cache key: hash of the model and everything that shapes the response.

    ``model`` is the LLM's name or, better, its ``identity``: for a server, its base URL
    and model name; for a local model, its file and settings. The request adds the
    messages, the task and every generation setting (``max_tokens``, ``temperature``).
    """
    ident: Any = model if isinstance(model, str) else dict(model)
    payload = json.dumps({"model": ident, **asdict(request)}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def llm_identity(llm: LLM) -> str | dict[str, Any]:
    """What identifies an LLM's answers: its ``identity`` mapping when it has one, else its name."""
    ident = getattr(llm, "identity", None)
    return dict(ident) if isinstance(ident, Mapping) else llm.name


def stream_text(llm: LLM, request: Request) -> Generator[str, None, None]:
    """The answer in pieces: ``llm.stream(request)`` when the backend streams, else one piece."""
    stream = getattr(llm, "stream", None)
    if callable(stream):
        yield from stream(request)
    else:
        yield llm.complete(request).text


class CachedLLM:
    """Serve repeated prompts from a store (the index's ``llm_cache`` table)."""

    def __init__(self, llm: LLM, store: ResponseStore) -> None:
        self.inner = llm
        self.name = llm.name
        self.max_concurrency = int(getattr(llm, "max_concurrency", 1))
        self.generative = is_generative(llm)
        self._store = store
        self._identity = llm_identity(llm)

    def complete(self, request: Request) -> Completion:
        key = request_key(self._identity, request)
        hit = self._store.get_llm(key)
        if hit is not None:
            data = json.loads(hit)
            return Completion(
                data["text"], data.get("prompt_tokens"), data.get("completion_tokens"), cached=True
            )
        out = self.inner.complete(request)
        self._store.put_llm(
            key,
            self.name,
            json.dumps(
                {
                    "text": out.text,
                    "prompt_tokens": out.prompt_tokens,
                    "completion_tokens": out.completion_tokens,
                }
            ),
        )
        return out

    def stream(self, request: Request) -> Iterator[str]:
        """Stream from the backend (a cached answer comes as one piece), then cache it."""
        key = request_key(self._identity, request)
        hit = self._store.get_llm(key)
        if hit is not None:
            yield json.loads(hit)["text"]
            return
        pieces: list[str] = []
        for piece in stream_text(self.inner, request):
            pieces.append(piece)
            yield piece
        text = "".join(pieces)
        self._store.put_llm(
            key, self.name, json.dumps({"text": text, "prompt_tokens": None, "completion_tokens": None})
        )


class CountingLLM:
    """Count calls, prompt and completion tokens and seconds under one stage of a :class:`Usage`.

    ``calls`` counts every logical call (the method's cost, whatever the cache did);
    ``cached`` how many of them the cache served. Tokens the backend did not report
    are counted with ``tokenizer`` over the prompt messages and the response. A backend
    that is not generative (``extractive``) runs no model: its calls cost 0 tokens (the
    sentences it scores are counted apart, :mod:`paretorag.providers.counting`).
    """

    def __init__(self, llm: LLM, usage: Usage, stage: str, tokenizer: Tokenizer) -> None:
        self.inner = llm
        self.name = llm.name
        self.max_concurrency = int(getattr(llm, "max_concurrency", 1))
        self.generative = is_generative(llm)
        self.usage = usage
        self.stage = stage
        self._tok = tokenizer
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        t0 = time.perf_counter()
        out = self.inner.complete(request)
        dt = time.perf_counter() - t0
        pt = out.prompt_tokens
        ct = out.completion_tokens
        if not self.generative:  # extractive: no model reads or writes tokens (an old cache entry says None)
            pt = ct = 0
        if pt is None or ct is None:
            counts = self._tok.count(["\n".join(m.content for m in request.messages), out.text])
            pt = counts[0] if pt is None else pt
            ct = counts[1] if ct is None else ct
        with self._lock:
            s = self.usage.stage(self.stage)
            s.calls += 1
            s.prompt_tokens += pt
            s.completion_tokens += ct
            s.seconds += dt
            s.cached += int(out.cached)
        return Completion(out.text, pt, ct, out.cached)

    def stream(self, request: Request) -> Iterator[str]:
        """Stream, then count the call (tokens counted with the tokenizer: streams do not report them)."""
        t0 = time.perf_counter()
        pieces: list[str] = []
        try:
            for piece in stream_text(self.inner, request):
                pieces.append(piece)
                yield piece
        finally:
            dt = time.perf_counter() - t0
            pt, ct = (
                self._tok.count(["\n".join(m.content for m in request.messages), "".join(pieces)])
                if self.generative
                else (0, 0)
            )
            with self._lock:
                s = self.usage.stage(self.stage)
                s.calls += 1
                s.prompt_tokens += pt
                s.completion_tokens += ct
                s.seconds += dt


def complete_many(
    llm: LLM, requests: Sequence[Request], max_concurrency: int | None = None
) -> list[Completion]:
    """Run requests concurrently (at most ``max_concurrency`` in flight), results in order."""
    if not requests:
        return []
    limit = max_concurrency or int(getattr(llm, "max_concurrency", 1))
    if limit <= 1 or len(requests) == 1:
        return [llm.complete(r) for r in requests]
    with ThreadPoolExecutor(max_workers=min(limit, len(requests))) as pool:
        return list(pool.map(run_in_context(llm.complete), requests))  # waits reach the caller's listener
