"""Per-chunk extraction for the knowledge graphs: with an LLM, or with spaCy (unified framework §4).

Both backends return one :class:`~paretorag.graphs.kg_prompts.Records` per chunk, which
:mod:`paretorag.graphs.kg` merges into a :class:`~paretorag.graphs.graph.Graph`:

- :func:`hipporag_records`: KG by HippoRAG's NER then OpenIE prompts (2 calls per chunk);
- :func:`graphrag_records`: TKG (GraphRAG) / RKG (LightRAG) records with gleaning
  (``1 + max_gleaning`` calls per chunk, plus the YES/NO checks between rounds);
- :func:`spacy_records`: the same graph types without an LLM (0 calls): named entities
  and noun phrases as entities (the NER label, or ``NOUN``, as their type), dependency
  subject-verb-object triples as relations (the verb lemma as relation text), the
  sentence as description, the verb and object head lemmas as RKG keywords.

Every prompt is a pure function of the chunk text and earlier answers, so a re-run after
a crash gets the cached answers for free (the index caches responses by prompt hash).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..progress import Progress
from ..providers.base import LLM, Message, Request
from ..providers.nlp import MODEL
from ..providers.nlp_kg import EXTRACT_VERSION, KGExtraction, extract_kg
from ..providers.wrappers import complete_many
from ..storage.store import text_hash
from .kg_prompts import (
    CONTINUE_PROMPT,
    JSON_RETRY,
    LOOP_PROMPT,
    NER_PROMPT,
    OPENIE_PROMPT,
    RECORD_RETRY,
    Records,
    extract_prompt,
    parse_ner,
    parse_records,
    parse_triples,
    request,
)

T = TypeVar("T")


@dataclass
class ExtractStats:
    """Retries (follow-up turns after an unusable answer) and answers still unusable after them."""

    calls: int = 0
    retries: int = 0
    unparsed: int = 0


if TYPE_CHECKING:
    from .base import BuildContext


def parsed_chunks(
    ctx: BuildContext, n_process: int, batch_size: int, label: str
) -> tuple[list[KGExtraction], int]:
    """spaCy KG extraction (:func:`~paretorag.providers.nlp_kg.extract_kg`) of every chunk,
    cached per chunk text in the index.

    One parse cache for every builder that reads the dependency parse (``kg``, ``tkg`` and
    ``rkg`` without an LLM, ``passage_graph``, ``fact_graph``): each chunk is parsed once
    per index, whichever builds first, and again only when the extraction changes
    (:data:`~paretorag.providers.nlp_kg.EXTRACT_VERSION`). Returns the extractions in chunk
    order and how many chunks were parsed now.
    """
    texts = list(ctx.chunks.texts)
    salt = json.dumps({"model": MODEL, "v": EXTRACT_VERSION, "what": "kg"}, sort_keys=True)
    keys = [f"kgx:{text_hash(salt + chr(0) + t)}" for t in texts]
    cached = ctx.cache_get(sorted(set(keys)))
    todo = sorted({k: i for i, k in reversed(list(enumerate(keys))) if k not in cached}.values())
    with ctx.progress.task(label, total=len(texts)) as bar:
        bar.advance(len(texts) - len(todo))
        if todo:
            exs = extract_kg([texts[i] for i in todo], n_process=n_process, batch_size=batch_size)
            fresh = [(keys[i], [ex.to_json(), ex.n_tokens]) for i, ex in zip(todo, exs, strict=True)]
            ctx.cache_put(fresh)
            cached.update(fresh)
            bar.advance(len(todo))
    out = [KGExtraction.from_json(cached[k][0], int(cached[k][1])) for k in keys]
    return out, len(todo)


def _followup(req: Request, answer: str, text: str) -> Request:
    msgs = (*req.messages, Message("assistant", answer), Message("user", text))
    return Request(msgs, req.task, max_tokens=req.max_tokens, temperature=req.temperature)


def complete_parsed(
    llm: LLM,
    requests: Sequence[Request],
    parse: Callable[[str], T | None],
    retry_text: str,
    stats: ExtractStats,
    max_concurrency: int | None = None,
) -> tuple[list[T | None], list[str]]:
    """Answers parsed with ``parse``; an unusable one (``None``) is retried once as a follow-up turn.

    Returns the parsed values (``None`` where both attempts failed) and the answer texts used.
    """
    outs = complete_many(llm, requests, max_concurrency)
    stats.calls += len(requests)
    texts = [o.text for o in outs]
    parsed = [parse(t) for t in texts]
    bad = [i for i, p in enumerate(parsed) if p is None]
    if bad:
        stats.retries += len(bad)
        stats.calls += len(bad)
        again = complete_many(
            llm, [_followup(requests[i], texts[i], retry_text) for i in bad], max_concurrency
        )
        for i, o in zip(bad, again, strict=True):
            parsed[i] = parse(o.text)
            texts[i] = o.text
            stats.unparsed += parsed[i] is None
    return parsed, texts


def hipporag_records(
    llm: LLM,
    texts: Sequence[str],
    *,
    max_tokens: int,
    progress: Progress,
    max_concurrency: int | None = None,
) -> tuple[list[Records], ExtractStats]:
    """KG records by HippoRAG's NER and OpenIE prompts (HippoRAG §3.1): 2 calls per chunk."""
    stats = ExtractStats()
    with progress.task("KG: named entities (LLM)", total=len(texts)) as bar:
        reqs = [request([], NER_PROMPT.format(text=t), max_tokens) for t in texts]
        ents, _ = complete_parsed(llm, reqs, parse_ner, JSON_RETRY, stats, max_concurrency)
        bar.advance(len(texts))
    with progress.task("KG: triples (LLM)", total=len(texts)) as bar:
        reqs = [
            request(
                [],
                OPENIE_PROMPT.format(
                    text=t, entities=json.dumps({"named_entities": e or []}, ensure_ascii=False)
                ),
                max_tokens,
            )
            for t, e in zip(texts, ents, strict=True)
        ]
        triples, _ = complete_parsed(llm, reqs, parse_triples, JSON_RETRY, stats, max_concurrency)
        bar.advance(len(texts))
    out = []
    for e, tr in zip(ents, triples, strict=True):
        out.append(
            Records(
                entities=[(name, "entity", "") for name in e or []],
                relations=[(s, o, r, "", "") for s, r, o in tr or []],
            )
        )
    return out, stats


def graphrag_records(
    llm: LLM,
    kind: str,
    texts: Sequence[str],
    *,
    entity_types: tuple[str, ...],
    max_gleaning: int,
    max_tokens: int,
    progress: Progress,
    max_concurrency: int | None = None,
) -> tuple[list[Records], ExtractStats]:
    """TKG (GraphRAG §2.2) or RKG (LightRAG §3.1) records, with gleaning rounds.

    The first answer is retried once when it holds no record; gleaning answers are taken
    as they are (an empty gleaning is a valid answer).
    """
    stats = ExtractStats()

    def parse(text: str) -> Records | None:
        rec, ok = parse_records(text, kind)
        return rec if ok else None

    prompts = [extract_prompt(kind, t, entity_types) for t in texts]
    with progress.task(f"{kind.upper()}: extraction (LLM)", total=len(texts) * (1 + max_gleaning)) as bar:
        first, answers = complete_parsed(
            llm, [request([], p, max_tokens) for p in prompts], parse, RECORD_RETRY, stats, max_concurrency
        )
        bar.advance(len(texts))
        records = [r or Records() for r in first]
        history = [[(p, a)] for p, a in zip(prompts, answers, strict=True)]
        active = list(range(len(texts)))
        for g in range(max_gleaning):
            outs = complete_many(
                llm, [request(history[i], CONTINUE_PROMPT, max_tokens) for i in active], max_concurrency
            )
            stats.calls += len(active)
            for i, o in zip(active, outs, strict=True):
                more, _ = parse_records(o.text, kind)
                records[i].entities += more.entities
                records[i].relations += more.relations
                history[i].append((CONTINUE_PROMPT, o.text))
            bar.advance(len(texts))
            if g == max_gleaning - 1:
                break
            checks = complete_many(
                llm, [request(history[i], LOOP_PROMPT, 8) for i in active], max_concurrency
            )
            stats.calls += len(active)
            active = [
                i for i, o in zip(active, checks, strict=True) if o.text.strip().strip("\"'").lower() == "yes"
            ]
            if not active:
                break
    return records, stats


def spacy_records(ex: KGExtraction) -> Records:
    """Records of one chunk from its spaCy extraction (no LLM; see the module docstring)."""
    sents = ex.sentences
    ents = [(name, label, sents[si]) for name, label, si in ex.entities]
    ents += [(name, "NOUN", sents[si]) for name, si in ex.nouns]
    rels = [(s, o, r, sents[si], f"{r.split()[0]}, {head}") for s, r, o, si, head in ex.triples]
    return Records(entities=ents, relations=rels)


__all__ = ["ExtractStats", "complete_parsed", "graphrag_records", "hipporag_records", "spacy_records"]
