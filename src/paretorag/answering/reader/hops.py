"""Reading in two hops: retrieve again with what the first read found, read again.

A bridge question ("Who married the publisher of *The North Star*?") names its answer
through another entity (the publisher). The first read often stops there: it answers the
bridge, or a guess, because the passage that holds the answer does not mention anything
the question says. The second hop asks the same retrieval method again with the question
and the first read's answer, so the bridge entity's own passages come in; the reader reads the first passages and up to :data:`HOP_PASSAGES` new
ones together, and the second answer replaces the first only when it is found and its
confidence rises (issue 36, item 4: stop after two hops or when the confidence does not
rise). Comparisons, yes/no, "why / how" sentences and followed chains answer in one read.

The pattern is the interleaving of reading and retrieval of IRCoT (Trivedi et al. 2023,
§3), with the first read's answer in place of a generated reasoning sentence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...types import Context, ContextItem
from .core import ReaderResult

HOP_PASSAGES = 3  # new passages the second read may add to the first read's
HOP_KINDS = ("span",)  # the reader's answers that a second hop may replace


@dataclass(frozen=True)
class Hop:
    """What the second hop did, for the answer's trace."""

    query: str
    bridge: str
    new_passages: int
    retrieval_ms: float
    read_ms: float
    confidence: tuple[float, float | None]
    taken: bool

    def to_json(self) -> dict[str, Any]:
        """The trace's record: what was asked and read (its times go to the answer's timings,
        so that the trace of a question is the same however busy the machine was)."""
        return {
            "query": self.query,
            "bridge": self.bridge,
            "new_passages": self.new_passages,
            "confidence": [round(c, 4) if c is not None else None for c in self.confidence],
            "taken": self.taken,
        }

    @property
    def seconds(self) -> float:
        return (self.retrieval_ms + self.read_ms) / 1000.0


def bridge_of(result: ReaderResult) -> str:
    """The entity a second hop asks about: the first read's span answer; "" where it withheld
    its answer (a withheld candidate asked about brought passages the span model then read
    something from, however unrelated: a table cell of a paper for a question about a story),
    or where the answer is not a span (a comparison, yes/no, a sentence, a chain)."""
    if result.kind not in HOP_KINDS or not result.found:
        return ""
    return result.answer


def second_hop(
    question: str,
    ctx: Context,
    first: ReaderResult,
    retrieve: Callable[[str, int], list[ContextItem]],
    read: Callable[[Context], tuple[Context, ReaderResult]],
    *,
    extra: int = HOP_PASSAGES,
) -> tuple[Context, ReaderResult, Hop | None]:
    """The answer after a second hop: ``(context, result, hop)``; ``hop`` is None when none ran.

    ``retrieve(query, k)`` is the first retrieval's method; ``read(context)`` the same reader.
    The context grows by the new passages only when the second answer is taken.
    """
    bridge = bridge_of(first).strip()
    if not bridge or not ctx.items:
        return ctx, first, None
    query = f"{question} {bridge}"
    t0 = time.perf_counter()
    seen = {it.chunk_id for it in ctx.items}
    new = [it for it in retrieve(query, max(len(ctx.items), extra)) if it.chunk_id not in seen][:extra]
    t1 = time.perf_counter()
    if not new:
        hop = Hop(query, bridge, 0, 1000 * (t1 - t0), 0.0, (first.confidence, None), False)
        return ctx, first, hop
    wider, second = read(replace(ctx, items=(*ctx.items, *new)))
    t2 = time.perf_counter()
    taken = second.found and second.confidence > first.confidence
    hop = Hop(
        query,
        bridge,
        len(new),
        1000 * (t1 - t0),
        1000 * (t2 - t1),
        (first.confidence, second.confidence),
        taken,
    )
    return (wider, second, hop) if taken else (ctx, first, hop)


__all__ = ["HOP_KINDS", "HOP_PASSAGES", "Hop", "bridge_of", "second_hop"]
