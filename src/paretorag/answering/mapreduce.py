"""Map-reduce generation (unified framework §6.3; GraphRAG global search §2.6; CheapRAG, §7.3 Exp. 4).

The packed context items (community reports, chunks) are cut into batches of at most
``batch_tokens`` tokens, in order. **Map**: each batch answers the question as a list of
points, each with an importance score 0-100 (GraphRAG's map prompt, JSON); a reply that
is not such JSON is one point, scored 0 when it says that it cannot answer and 50
otherwise (the extractive backend answers with its best evidence sentences). **Reduce**:
the points scored above 0, best first, up to ``reduce_tokens`` tokens, are combined by
one more call into the answer. With no useful point there is no reduce call and the
answer says that nothing was found. LLM calls: one per batch plus at most one, all
counted (stage ``query.answer``).

Citations: a point cites the batch's passages as ``[n]``, renumbered into the packed
context's numbering; the reduce step cites points as ``[p]``, replaced by the passages
that point cites, so the answer's markers name context items as in direct generation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..providers.base import LLM, Message, Request, Task, Tokenizer
from ..types import Citation, Context, ContextItem
from .answer import citations
from .context import format_block

BATCH_TOKENS = 12000  # GraphRAG global search: max_data_tokens of a map batch
REDUCE_TOKENS = 12000

MAP_PROMPT = """---Role---
You are a helpful assistant responding to questions about data in the tables provided.

---Goal---
Generate a response consisting of a list of key points that responds to the user's question, summarizing all relevant information in the input data tables.
If you don't know the answer or if the input data tables do not contain sufficient information to provide an answer, just say so. Do not make anything up.
Each key point in the response should have the following element:
- Description: A comprehensive description of the point, citing the numbered data records that support it as [n].
- Importance Score: An integer score between 0-100 that indicates how important the point is in answering the user's question. An 'I don't know' type of response should have a score of 0.

The response should be JSON formatted as follows:
{{"points": [{{"description": "Description of point 1 [1]", "score": score_value}}]}}

---Data tables---
{data}

---Question---
{question}"""

REDUCE_PROMPT = """---Role---
You are a helpful assistant responding to questions about a dataset by synthesizing perspectives from multiple analysts.

---Goal---
Generate a concise answer to the user's question that summarizes the analysts' reports below, ranked in descending order of importance.
If you don't know the answer, just say so. Do not make anything up.
Cite the reports that support each statement as [n].

---Analyst Reports---
{reports}

---Question---
{question}
Answer:"""

NO_ANSWER = "I cannot find the answer in the retrieved context."
_MARKER = re.compile(r"\[(\d{1,3})\]")
_OBJECT = re.compile(r"\{.*\}", re.S)
_NEGATIVE = ("does not contain", "cannot find", "don't know", "do not know", "no information")


@dataclass(frozen=True)
class Point:
    """One partial answer of the map step: its text, importance, and the items it cites (1-based)."""

    text: str
    score: float
    cites: tuple[int, ...]
    batch: int


def batches(items: tuple[ContextItem, ...], tokenizer: Tokenizer, limit: int) -> list[list[int]]:
    """Consecutive item positions grouped under ``limit`` tokens (an item over it is alone)."""
    if not items:
        return []
    counts = tokenizer.count([format_block(i + 1, it) for i, it in enumerate(items)])
    out: list[list[int]] = [[]]
    used = 0
    for i, n in enumerate(counts):
        if out[-1] and used + n > limit:
            out.append([])
            used = 0
        out[-1].append(i)
        used += n
    return out


def _renumber(text: str, positions: list[int]) -> tuple[str, tuple[int, ...]]:
    """Batch-local markers ``[n]`` -> the packed context's numbers; the numbers cited."""
    cited: list[int] = []

    def sub(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if 1 <= n <= len(positions):
            g = positions[n - 1] + 1
            cited.append(g)
            return f"[{g}]"
        return ""

    return _MARKER.sub(sub, text).strip(), tuple(dict.fromkeys(cited))


def parse_points(reply: str, positions: list[int], batch: int) -> list[Point]:
    """The points of one map reply (JSON, or the whole reply as one point); never evaluated."""
    m = _OBJECT.search(reply)
    data = None
    if m:
        try:
            data = json.loads(m.group())
        except json.JSONDecodeError:
            data = None
    if isinstance(data, dict) and isinstance(data.get("points"), list):
        out = []
        for p in data["points"]:
            if not isinstance(p, dict) or not isinstance(p.get("description"), str):
                continue
            try:
                score = float(p.get("score", 0))
            except (TypeError, ValueError):
                score = 0.0
            text, cites = _renumber(p["description"], positions)
            if text:
                out.append(Point(text, score, cites, batch))
        return out
    text, cites = _renumber(reply, positions)
    if not text:
        return []
    score = 0.0 if any(s in text.lower() for s in _NEGATIVE) else 50.0
    return [Point(text, score, cites, batch)]


def map_reduce(
    llm: LLM,
    question: str,
    context: Context,
    tokenizer: Tokenizer,
    *,
    batch_tokens: int = BATCH_TOKENS,
    reduce_tokens: int = REDUCE_TOKENS,
    max_tokens: int = 512,
) -> tuple[str, list[Citation], list[Point]]:
    """Answer from ``context`` by map-reduce (see the module docstring).

    Returns the answer, its citations (into ``context.items``) and the map step's points.
    """
    points: list[Point] = []
    for b, positions in enumerate(batches(context.items, tokenizer, batch_tokens)):
        items = [context.items[i] for i in positions]
        data = "\n\n".join(format_block(j + 1, it) for j, it in enumerate(items))
        req = Request(
            (Message("user", MAP_PROMPT.format(data=data, question=question)),),
            Task("answer", texts=tuple(it.text for it in items), question=question),
            max_tokens=max_tokens,
        )
        points.extend(parse_points(llm.complete(req).text, positions, b))
    useful = sorted((p for p in points if p.score > 0), key=lambda p: (-p.score, p.batch))
    kept: list[Point] = []
    used = 0
    for p in useful:
        n = tokenizer.count([p.text])[0]
        if kept and used + n > reduce_tokens:
            break
        kept.append(p)
        used += n
    if not kept:
        return NO_ANSWER, [], points
    reports = "\n\n".join(
        f"----Analyst {i}----\nImportance Score: {p.score:g}\n{p.text}" for i, p in enumerate(kept, 1)
    )
    req = Request(
        (Message("user", REDUCE_PROMPT.format(reports=reports, question=question)),),
        Task("answer", texts=tuple(_MARKER.sub("", p.text).strip() for p in kept), question=question),
        max_tokens=max_tokens,
    )
    reply = llm.complete(req).text.strip()

    def expand(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if 1 <= n <= len(kept):
            return "".join(f"[{c}]" for c in kept[n - 1].cites)
        return ""

    text = _MARKER.sub(expand, reply).strip() or NO_ANSWER
    return text, citations(text, context), points


__all__ = ["BATCH_TOKENS", "MAP_PROMPT", "REDUCE_PROMPT", "Point", "batches", "map_reduce", "parse_points"]
