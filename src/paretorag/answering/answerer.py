"""Who answers a retrieval, and how: the answer switch behind :meth:`paretorag.RAG.answer`.

Four answerers share one entry, :func:`answer`: the offline reader
(:mod:`paretorag.answering.reader`: a short span with its evidence), map-reduce over many
items (:mod:`paretorag.answering.mapreduce`), and generation with citations
(:mod:`paretorag.answering.answer`) by the index's LLM or by the extractive answerer (the best
evidence sentences). The context is packed under the budget first
(:mod:`paretorag.answering.context`, unified framework §3 stage 4); an LLM's context window
is a hard limit (:func:`~paretorag.answering.answer.fit_to_window`). The open index lends its
models through :class:`AnswerModels`, so this layer imports nothing of the facade.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..providers.base import LLM, Tokenizer, is_generative
from ..retrieval.query import Retrieval
from ..types import Answer, Budget, Citation, Context, ContextItem, Usage
from .answer import WINDOW_MARGIN, citations, fit_to_window, generate
from .context import pack
from .mapreduce import BATCH_TOKENS, map_reduce
from .reader.core import ReaderResult
from .reader.hops import second_hop

# "reader-nospan" is the offline reader without its span model, "reader-onehop" without its
# second hop (to compare them with "reader" in one eval run)
READERS = ("reader", "reader-nospan", "reader-onehop", "extractive", "llm")
OFFLINE_READERS = ("reader", "reader-nospan", "reader-onehop")


@dataclass(frozen=True)
class AnswerModels:
    """What an open index lends to answering: its tokenizer and its models.

    ``base_llm`` is the index's LLM; ``extractive`` the evidence-sentence answerer bound
    to the index's embedder; ``llm_for(usage, stage, base)`` wraps a model so its calls
    are cached and counted; ``read(question, context, span)`` runs the offline reader (with
    its span model or, ``span=False``, without) and returns the context with any passage it
    fetched by title appended; ``retrieve(query, k)``, where given, is the answer's own
    retrieval (its method and parameters) for the reader's second hop
    (:mod:`~paretorag.answering.reader.hops`).
    """

    tokenizer: Tokenizer
    base_llm: Callable[[], LLM]
    extractive: Callable[[], LLM]
    llm_for: Callable[[Usage, str, LLM], LLM]
    read: Callable[[str, Context, bool], tuple[Context, ReaderResult]]
    retrieve: Callable[[str, int], tuple[Retrieval, list[ContextItem]]] | None = None


def choose_answerer(reader: str | None, base_llm: Callable[[], LLM]) -> str:
    """Who answers: ``reader`` (the offline reader; ``reader-nospan`` without its span model,
    ``reader-onehop`` without its second hop),
    ``extractive`` (evidence sentences) or ``llm``.

    ``None`` picks the index's LLM when it is generative, else the reader.
    """
    if reader is not None and reader not in READERS:
        raise ConfigError(f"unknown reader {reader!r}; use one of {', '.join(READERS)}")
    if reader == "llm" and not is_generative(base_llm()):
        raise ConfigError(
            f"the index's LLM ({base_llm().name}) does not generate answers; "
            "configure one with --llm openai:MODEL or llamacpp:GGUF, or use --reader reader"
        )
    if reader is not None:
        return reader
    return "llm" if is_generative(base_llm()) else "reader"


def answer(
    models: AnswerModels,
    question: str,
    retrieval: Retrieval,
    items: list[ContextItem],
    *,
    who: str,
    method: str = "",
    budget: Budget,
    max_answer_tokens: int = 512,
    retrieval_seconds: float = 0.0,
    on_token: Callable[[str], None] | None = None,
) -> Answer:
    """Pack ``items`` under ``budget`` and answer with ``who`` (``""``: the context only).

    The answer's usage includes the LLM calls the retrieval made (``retrieval.usage``);
    ``on_token`` receives the answer's pieces as the LLM streams them.
    """
    t1 = time.perf_counter()
    b = budget
    ctx = pack(items, b, models.tokenizer)
    usage = Usage()
    usage.merge(retrieval.usage)
    text = ""
    cites: list[Citation] = []
    evidence = retrieval.context_text
    warnings: list[str] = []
    read = None
    hop = None
    if who in OFFLINE_READERS:
        ctx, read = models.read(question, ctx, who != "reader-nospan")
        if who == "reader" and models.retrieve is not None:
            again = models.retrieve

            def retrieve(query: str, k: int) -> list[ContextItem]:
                r, found = again(query, k)
                usage.merge(r.usage)  # a method that asks an LLM at query time asks it again
                return found

            ctx, read, hop = second_hop(
                question, ctx, read, retrieve, lambda c: models.read(question, c, True)
            )
        text = read.text
        cites = citations(text, ctx)
        if on_token is not None:
            on_token(text)
    elif who and retrieval.generation == "map-reduce":
        base = models.base_llm() if who == "llm" else models.extractive()
        window = getattr(base, "context_window", None)
        batch = BATCH_TOKENS  # a map batch must fit the window with the prompt and the answer
        if isinstance(window, int) and window > 0:
            batch = max(64, min(batch, window - max_answer_tokens - 600 - WINDOW_MARGIN))
        llm = models.llm_for(usage if who == "llm" else Usage(), "query.answer", base)
        text, cites, _ = map_reduce(
            llm,
            question,
            ctx,
            models.tokenizer,
            batch_tokens=batch,
            reduce_tokens=batch,
            max_tokens=max_answer_tokens,
        )
    elif who:
        base = models.base_llm() if who == "llm" else models.extractive()
        ctx, evidence, warnings = fit_to_window(  # the LLM's context window is a hard limit
            base,
            question,
            items,
            ctx,
            b,
            models.tokenizer,
            max_answer_tokens=max_answer_tokens,
            context_text=evidence,
        )
        # the extractive answerer runs no model: its answer is cached, not counted as an LLM call
        llm = models.llm_for(usage if who == "llm" else Usage(), "query.answer", base)
        text, cites = generate(
            llm,
            question,
            ctx,
            context_text=evidence,
            max_tokens=max_answer_tokens,
            on_token=on_token,
        )
    t2 = time.perf_counter()
    total = retrieval_seconds + (t2 - t1)
    trace = _trace(retrieval, ctx, b)
    if read is not None:  # which of the reader's stages answered, and what it read
        trace["reader"] = {
            **read.trace,
            "stage": read.kind,
            "expected": read.expected,
            "confidence": read.confidence,
        }
    timings = {"retrieval": retrieval_seconds, "generation": t2 - t1, "total": total}
    if hop is not None:  # the second retrieval and read: part of the generation time
        trace["second_hop"] = hop.to_json()
        timings["second_hop"] = hop.seconds
    return Answer(
        question=question,
        text=text,
        method=method,
        mode=retrieval.mode,
        contexts=list(ctx.items),
        citations=cites,
        usage=usage,
        timings=timings,
        branch=retrieval.branch,
        context_text=evidence or ctx.text,
        warnings=warnings,
        short=read.answer if read is not None else None,
        evidence=[e.to_json() for e in read.evidence] if read is not None else [],
        confidence=read.confidence if read is not None else None,
        found=read.found if read is not None else None,
        answered_by=who if who in ("", *OFFLINE_READERS, "extractive") else models.base_llm().name,
        trace=trace,
    )


def _trace(retrieval: Retrieval, ctx: Context, budget: Budget) -> dict[str, Any]:
    """The method's trace, and what the context packing left out for the budget (when the
    method did not say it already)."""
    trace = dict(retrieval.info)
    if ctx.cut and "budget_cut" not in trace:
        trace["budget_cut"] = {
            "max_tokens": budget.max_tokens,
            "budget": "query",
            "kept_passages": len(ctx.items),
            "cut_passages": len(ctx.cut),
            "cut": list(ctx.cut),
        }
    return trace


__all__ = ["OFFLINE_READERS", "READERS", "AnswerModels", "answer", "choose_answerer"]
