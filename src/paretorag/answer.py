"""Generation with citations (unified framework §3 stage 4).

The LLM reads numbered passages and cites them as ``[n]``; markers in the answer are
mapped back to the passages' chunk and document ids.
"""

from __future__ import annotations

import re

from .providers.base import LLM, Message, Request, Task
from .types import Citation, Context

SYSTEM = (
    "You answer questions using only the numbered passages provided. "
    "Cite the passages that support each statement as [n]. "
    "If the passages do not contain the answer, say that you cannot find it."
)
ZEROSHOT_SYSTEM = "Answer the question concisely from your own knowledge."
_MARKER = re.compile(r"\[(\d{1,3})\]")


def answer_request(
    question: str, context: Context, *, context_text: str | None = None, max_tokens: int = 512
) -> Request:
    """The answer prompt: passages (or a method's evidence text), then the question."""
    if not context.items and not context_text:
        msgs = (Message("system", ZEROSHOT_SYSTEM), Message("user", f"Question: {question}\nAnswer:"))
        return Request(msgs, Task("answer", question=question), max_tokens=max_tokens)
    body = context_text or context.text
    msgs = (Message("system", SYSTEM), Message("user", f"Passages:\n{body}\n\nQuestion: {question}\nAnswer:"))
    return Request(
        msgs,
        Task("answer", texts=tuple(it.text for it in context.items), question=question),
        max_tokens=max_tokens,
    )


def citations(text: str, context: Context) -> list[Citation]:
    """Citations for the ``[n]`` markers of an answer that name a passage (each once, in order)."""
    out: list[Citation] = []
    seen: set[int] = set()
    for m in _MARKER.finditer(text):
        n = int(m.group(1))
        if 1 <= n <= len(context.items) and n not in seen:
            seen.add(n)
            it = context.items[n - 1]
            out.append(Citation(n, it.chunk_id, it.doc_id, it.title))
    return out


def generate(
    llm: LLM, question: str, context: Context, *, context_text: str | None = None, max_tokens: int = 512
) -> tuple[str, list[Citation]]:
    """Ask the LLM (at most ``max_tokens`` in the answer) and extract citations."""
    out = llm.complete(answer_request(question, context, context_text=context_text, max_tokens=max_tokens))
    text = out.text.strip()
    return text, citations(text, context)
