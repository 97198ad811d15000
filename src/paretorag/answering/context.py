"""Budgeted context packing (unified framework §3 stage 4, prompt construction).

Items are taken in rank order; an item whose block does not fit in the remaining
budget is skipped (a later, shorter one may still fit); ``Context.cut`` names the items
left out, and the answer's trace says so (``budget_cut``). If not even the first item
fits, it is cut at a word boundary to the budget, marked with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..providers.base import Tokenizer
from ..types import Budget, Context, ContextItem


def format_block(n: int, item: ContextItem) -> str:
    """One numbered passage as the LLM reads it."""
    head = f"[{n}] {item.title}".rstrip() + (f" > {item.heading}" if item.heading else "")
    return f"{head}\n{item.text}"


def _cut(text: str, tokenizer: Tokenizer, max_tokens: int) -> str:
    offsets = tokenizer.offsets(text)
    if len(offsets) <= max_tokens:
        return text
    end = offsets[max(max_tokens - 1, 0)][0]
    cut = text[:end]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip() + " …"


def pack(items: Sequence[ContextItem], budget: Budget, tokenizer: Tokenizer) -> Context:
    """Pack items, in order, under ``budget`` (tokens of the numbered blocks)."""
    kept: list[ContextItem] = []
    cut: list[str] = []
    blocks: list[str] = []
    used = 0
    limit = budget.max_tokens
    counts = tokenizer.count([format_block(i + 1, it) for i, it in enumerate(items)]) if items else []
    for item, n_tok in zip(items, counts, strict=True):
        if limit is not None and used + n_tok > limit:
            cut.append(item.chunk_id)
            continue
        kept.append(item)
        blocks.append(format_block(len(kept), item))
        used += n_tok
    if not kept and items and limit is not None:
        first = items[0]
        header = tokenizer.count(
            [format_block(1, ContextItem(first.chunk_id, first.doc_id, first.title, "", 0.0))]
        )[0]
        room = max(limit - header - 1, 1)
        text = _cut(first.text, tokenizer, room)
        shortened = replace(first, text=text, n_tokens=room)
        kept.append(shortened)
        blocks.append(format_block(1, shortened))
        used = tokenizer.count(blocks)[0]
        cut = cut[1:]
    return Context(tuple(kept), "\n\n".join(blocks), used, tuple(cut))
