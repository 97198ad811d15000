"""Provider seams: one method each (``LLM.complete``, ``Embedder.embed``).

Every LLM backend implements :class:`LLM`; retries, caching and usage counting are
wrappers around any of them (:mod:`paretorag.providers.wrappers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Task:
    """What a prompt asks for, in structured form.

    Chat backends read only the messages; the ``extractive`` backend cannot read
    instructions and works from this instead. ``kind`` is ``"summarize"``
    (``texts`` are the passages to summarize) or ``"answer"`` (``question`` and
    numbered ``texts``).
    """

    kind: Literal["summarize", "answer", "other"]
    texts: tuple[str, ...] = ()
    question: str = ""
    max_words: int = 0


@dataclass(frozen=True)
class Request:
    """One LLM call: messages plus the structured task and generation settings."""

    messages: tuple[Message, ...]
    task: Task = field(default_factory=lambda: Task("other"))
    max_tokens: int = 512
    temperature: float = 0.0


@dataclass(frozen=True)
class Completion:
    """A response and its token counts (``None`` when the backend did not report them)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False


@runtime_checkable
class LLM(Protocol):
    """Any chat model. ``name`` identifies it in the manifest and cache keys."""

    name: str

    def complete(self, request: Request) -> Completion: ...


@runtime_checkable
class Embedder(Protocol):
    """Any text embedder returning L2-normalized float32 rows."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]: ...


@runtime_checkable
class Tokenizer(Protocol):
    """Counts and locates tokens (the embedder's word-pieces by default)."""

    name: str

    def count(self, texts: list[str]) -> list[int]: ...

    def offsets(self, text: str) -> list[tuple[int, int]]: ...


def is_generative(llm: object) -> bool:
    """Whether an LLM follows instructions (``generative``, default true; the ``extractive``
    backend and the wrappers around it say false). Builders with an LLM-free path
    (the knowledge graphs, §4) take it when this is false."""
    return bool(getattr(llm, "generative", True))


def user_prompt(
    text: str, task: Task | None = None, *, system: str | None = None, max_tokens: int = 512
) -> Request:
    """A one-turn request (optionally with a system message)."""
    msgs: list[Message] = []
    if system:
        msgs.append(Message("system", system))
    msgs.append(Message("user", text))
    return Request(tuple(msgs), task or Task("other"), max_tokens=max_tokens)
