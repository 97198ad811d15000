"""Question conversion (unified framework §6.3): the question's retrieval primitives.

DALK, HippoRAG and ToG extract the question's entities, the LightRAG variants its
low- and high-level keywords; these steps fill ``state.terms`` (and, for keywords,
``state.info["keywords"]``) for later steps (``node.link``; ``query="terms"`` or
``"keywords"`` of the VDB operators). The result, stored under ``"terms"``, is
:class:`~paretorag.types.Scored` over the positions of ``state.terms`` (kind
``"term"``, score 1).

- ``question.terms``: spaCy (through ``index.nlp``), offline: named entities (not numbers, amounts or
  ordinals) then noun chunks without leading determiners and pronouns, distinct
  (case-insensitive), first mention first;
- ``question.keywords``: LightRAG's keyword-extraction prompt (LightRAG §3.2): the
  low-level keywords become ``state.terms``, the high-level ones
  ``state.info["keywords"]``. With the extractive backend (no generative LLM) it
  falls back to ``question.terms`` for both unless ``fallback=False``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ...providers.base import user_prompt
from ...types import Scored
from .base import Operator, register_operator
from .common import generative_llm

if TYPE_CHECKING:
    from ..query import IndexView, State

KIND = "term"


def _positions(terms: list[str]) -> Scored:
    return Scored(np.arange(len(terms), dtype=np.int64), np.ones(len(terms), dtype=np.float32), KIND)


@register_operator
class QuestionTerms(Operator):
    """The question's entities and noun phrases with spaCy (§6.3 question conversion; offline).

    Parameters
    ----------
    noun_chunks : bool
        Add noun chunks after the named entities (True).
    """

    name = "question.terms"
    kind = "question"
    produces = "terms"
    paper = "unified-framework §6.3 (question conversion: entities of the question)"

    def __init__(self, *, noun_chunks: bool = True) -> None:
        self.noun_chunks = noun_chunks

    def run(self, index: IndexView, state: State) -> Scored:
        state.terms = index.nlp.terms(state.question, noun_chunks=bool(self.noun_chunks))
        return _positions(state.terms)


KEYWORDS_PROMPT = """---Role---
You are a helpful assistant tasked with identifying both high-level and low-level keywords in the user's query.

---Goal---
Given the query, list both high-level and low-level keywords. High-level keywords focus on overarching \
concepts or themes, while low-level keywords focus on specific entities, details, or concrete terms.

---Instructions---
- Output the keywords in JSON format.
- The JSON should have two keys:
  - "high_level_keywords" for overarching concepts or themes.
  - "low_level_keywords" for specific entities or details.

Example:
Query: "How does international trade influence global economic stability?"
Output: {{"high_level_keywords": ["International trade", "Global economic stability", "Economic impact"], \
"low_level_keywords": ["Trade agreements", "Tariffs", "Currency exchange", "Imports", "Exports"]}}

Query: "{question}"
Output:"""

_OBJECT = re.compile(r"\{.*\}", re.S)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(s.strip() for s in value if isinstance(s, str) and s.strip()))


def _key_list(text: str, key: str) -> list[str]:
    """The quoted strings after ``"key": [`` in a reply that is not valid JSON."""
    m = re.search(rf'"?{key}"?\s*:\s*\[(.*?)\]', text, re.S)
    return _strings(re.findall(r'"([^"]+)"', m.group(1))) if m else []


def parse_keywords(text: str) -> tuple[list[str], list[str]]:
    """``(high, low)`` keyword lists from an LLM reply (JSON, or JSON-like text); never evaluated."""
    m = _OBJECT.search(text)
    if m:
        try:
            data = json.loads(m.group())
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            return _strings(data.get("high_level_keywords")), _strings(data.get("low_level_keywords"))
    return _key_list(text, "high_level_keywords"), _key_list(text, "low_level_keywords")


@register_operator
class QuestionKeywords(Operator):
    """LightRAG's high- and low-level keywords of the question (§6.3; LightRAG §3.2).

    One LLM call; low-level keywords go to ``state.terms`` (entity search), high-level
    ones to ``state.info["keywords"]`` (relation search). Parameters: ``fallback``
    (True): with the extractive backend, use ``question.terms`` for both instead of
    raising.
    """

    name = "question.keywords"
    kind = "question"
    produces = "terms"
    uses_llm = True
    paper = "unified-framework §6.3 (LightRAG keywords); LightRAG §3.2 (dual-level retrieval)"

    def __init__(self, *, fallback: bool = True) -> None:
        self.fallback = fallback

    def run(self, index: IndexView, state: State) -> Scored:
        llm = index.llm(f"query.{self.name}")
        if not getattr(llm, "generative", True):
            if not self.fallback:
                generative_llm(index, self)  # raises, naming the fix
            terms = index.nlp.terms(state.question)
            state.terms, state.info["keywords"] = terms, list(terms)
            return _positions(terms)
        reply = llm.complete(
            user_prompt(KEYWORDS_PROMPT.format(question=state.question), max_tokens=256)
        ).text
        high, low = parse_keywords(reply)  # unreadable reply: no keywords, an empty retrieval
        state.terms, state.info["keywords"] = low, high
        return _positions(low)
