"""Generation with citations (unified framework §3 stage 4).

The LLM reads numbered passages and cites them as ``[n]``; markers in the answer are
mapped back to the passages' chunk and document ids.

An LLM with a ``context_window`` (llama.cpp: ``n_ctx``) is a hard limit: the passages
are packed again, or a method's evidence text cut, until the prompt plus the longest
answer fit (:func:`fit_to_window`), and the answer says so in its warnings. The token
budget stays a maximum under that limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import closing

from ..errors import ConfigError
from ..providers.base import LLM, Message, Request, Task, Tokenizer
from ..providers.wrappers import stream_text
from ..types import Budget, Citation, Context, ContextItem
from .context import pack

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
            out.append(Citation(n, it.chunk_id, it.doc_id, it.title, it.sources, it.heading))
    return out


def generate(
    llm: LLM,
    question: str,
    context: Context,
    *,
    context_text: str | None = None,
    max_tokens: int = 512,
    on_token: Callable[[str], None] | None = None,
) -> tuple[str, list[Citation]]:
    """Ask the LLM (at most ``max_tokens`` in the answer) and extract citations.

    With ``on_token``, the answer is streamed: each piece is passed to it as the backend
    produces it (one piece for backends that do not stream).
    """
    request = answer_request(question, context, context_text=context_text, max_tokens=max_tokens)
    if on_token is None:
        text = llm.complete(request).text.strip()
    else:
        pieces: list[str] = []
        # closed at once if on_token raises (a streamed answer whose client went away): that
        # closes the backend's stream, and with it the HTTP request to the model server
        with closing(stream_text(llm, request)) as stream:
            for piece in stream:
                pieces.append(piece)
                on_token(piece)
        text = "".join(pieces).strip()
    return text, citations(text, context)


WINDOW_MARGIN = 64  # tokens kept free for the chat template (role markers, BOS) and miscounting


def context_room(
    context_window: int, prompt_tokens: int, max_answer_tokens: int, *, margin: int = WINDOW_MARGIN
) -> int:
    """Tokens the passages may take: the window less the rest of the prompt, the answer and a margin.

    ``prompt_tokens`` counts the prompt without the passages. Zero or less means that
    not even an empty context fits.
    """
    return context_window - prompt_tokens - max_answer_tokens - margin


def llm_token_counts(llm: LLM, texts: list[str], tokenizer: Tokenizer) -> list[int]:
    """Token counts with the LLM's own tokenizer (``count_tokens``) when it has one."""
    counter = getattr(llm, "count_tokens", None)
    return list(counter(texts)) if callable(counter) else tokenizer.count(texts)


def _cut_words(text: str, ratio: float) -> str:
    end = max(int(len(text) * ratio), 0)
    space = text.rfind(" ", 0, end)
    return (text[: space if space > 0 else end]).rstrip() + " …"


def fit_to_window(
    llm: LLM,
    question: str,
    items: Sequence[ContextItem],
    context: Context,
    budget: Budget,
    tokenizer: Tokenizer,
    *,
    max_answer_tokens: int,
    context_text: str | None = None,
) -> tuple[Context, str | None, list[str]]:
    """The context (and method evidence text) cut to fit ``llm.context_window``, and warnings.

    Without a ``context_window`` attribute the LLM is taken to have room for anything.
    """
    window = getattr(llm, "context_window", None)
    if not isinstance(window, int) or window <= 0:
        return context, context_text, []
    ctx, text = context, context_text
    before_items, before_tokens = len(context.items), None
    for _ in range(6):  # each pass shrinks by the measured overshoot; two are usually enough
        request = answer_request(question, ctx, context_text=text, max_tokens=max_answer_tokens)
        body = text or ctx.text
        total, body_tokens = llm_token_counts(
            llm, ["\n".join(m.content for m in request.messages), body], tokenizer
        )
        before_tokens = body_tokens if before_tokens is None else before_tokens
        room = context_room(window, total - body_tokens, max_answer_tokens)
        if room <= 0:
            raise ConfigError(
                f"{llm.name}: the prompt without passages ({total - body_tokens} tokens) and the answer "
                f"(up to {max_answer_tokens}) do not fit its context window of {window} tokens; "
                "shorten the question or lower max_answer_tokens"
            )
        if body_tokens <= room:
            break
        ratio = room / body_tokens * 0.98
        if text:
            text = _cut_words(text, ratio)
        else:
            limit = max(int(max(ctx.n_tokens, 1) * ratio), 1)
            if budget.max_tokens is not None:
                limit = min(limit, budget.max_tokens)
            ctx = pack(items, Budget(limit), tokenizer)
    else:
        raise ConfigError(f"{llm.name}: could not fit the context into its window of {window} tokens")
    if ctx is context and text is context_text:
        return context, context_text, []
    note = (
        f"the context was cut from {before_tokens} to {body_tokens} tokens"
        + (f" ({before_items} -> {len(ctx.items)} passages)" if not text else "")
        + f" to fit the {window}-token context window of {llm.name} "
        f"(with {total - body_tokens} prompt tokens and up to {max_answer_tokens} answer tokens); "
        "lower -k or --budget to choose what is left out"
    )
    return ctx, text, [note]
