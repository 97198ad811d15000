"""Follow-up questions made standalone for the chat routes (:mod:`.compat`).

Earlier turns are condensed into a standalone question: by the index's LLM when it
generates text, else (offline) by appending, in parentheses, the names (capitalised
phrases) of the earlier user turns that the last message does not already mention, newest
first, at most :data:`CARRY_MAX` of them.
"""

from __future__ import annotations

import re
from typing import Any

from ..providers.base import Message, Task, is_generative
from ..providers.base import Request as LLMRequest
from ..textutil import OPENING_WORDS
from ..types import Usage

CARRY_MAX = 4  # names carried over from earlier turns by the offline condensation
HISTORY_CHARS = 600  # each earlier turn, cut to this, in the LLM's condensation prompt
CONDENSE_TOKENS = 96

_WORD = r"[A-Z](?:[\w'’-]|\.(?=\w))*"  # "U.S." is one word; a final period ends it
_NAME = re.compile(rf"\b{_WORD}(?:\s+(?:(?:of|the|de|la|van|von|der|and|&)\s+)?{_WORD})*")
_SOURCES = re.compile(r"\n+Sources:\n(?:\[\d+\][^\n]*\n?)+\s*$")


def names_in(text: str) -> list[str]:
    """Capitalised phrases of ``text`` (``"Tell me about Sea Otters"`` -> ``["Sea Otters"]``),
    without the sentence-starting words of :data:`~paretorag.textutil.OPENING_WORDS`."""
    out: list[str] = []
    for m in _NAME.finditer(text):
        words = m.group(0).rstrip(".'’").split()
        while words and words[0].lower() in OPENING_WORDS:
            words.pop(0)
        while words and words[-1].lower() in OPENING_WORDS:
            words.pop()
        name = " ".join(words)
        if name and name not in out:
            out.append(name)
    return out


def condense_offline(history: list[str], last: str) -> str:
    """``last`` with the names of the earlier user turns (``history``, oldest first) that it
    lacks, newest first, at most :data:`CARRY_MAX`: ``"What do they build? (Beavers)"``."""
    have = last.lower()
    carried: list[str] = []
    for turn in reversed(history):
        for name in names_in(turn):
            if name.lower() not in have and name not in carried:
                carried.append(name)
    carried = carried[:CARRY_MAX]
    return f"{last.rstrip()} ({', '.join(carried)})" if carried else last


def condense(rag: Any, history: list[tuple[str, str]], last: str, usage: Usage) -> str:
    """``last`` as a standalone question, given the earlier turns (``(role, text)``, oldest
    first): rewritten by ``rag``'s LLM (its calls counted in ``usage``) when it generates
    text, else (or when the rewrite is empty) by :func:`condense_offline`."""
    question = ""
    if is_generative(rag._base_llm()):
        llm = rag._llm_for(usage, "query.condense")
        question = _first_line(llm.complete(_condense_prompt(history, last)).text)
    if not question:
        question = condense_offline([text for role, text in history if role == "user"], last)
    return question


def _condense_prompt(history: list[tuple[str, str]], last: str) -> LLMRequest:
    lines = []
    for role, said in history:
        if role in ("user", "assistant"):
            text = _SOURCES.sub("", said).strip()
            if len(text) > HISTORY_CHARS:
                text = text[:HISTORY_CHARS] + "..."
            lines.append(f"{'User' if role == 'user' else 'Assistant'}: {text}")
    prompt = (
        "Conversation:\n" + "\n".join(lines) + f"\n\nFollow-up question: {last}\n\n"
        "Rewrite the follow-up question so that it can be understood without the conversation "
        "(name what it refers to). Reply with the question only."
    )
    return LLMRequest(
        (
            Message("system", "You rewrite follow-up questions as standalone questions."),
            Message("user", prompt),
        ),
        Task("other"),
        max_tokens=CONDENSE_TOKENS,
    )


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip('"“”').strip()
        if line.lower().startswith(("standalone question:", "question:")):
            line = line.split(":", 1)[1].strip()
        if line:
            return line
    return ""


__all__ = ["CARRY_MAX", "condense", "condense_offline", "names_in"]
