"""Helpers shared by the operator pool (§6.1): graph access, seeds, query vectors,
context items under the budget, and the LLM selection step of the Agent operators.

LLM output is parsed tolerantly: the numbers in the reply are read as candidate
numbers, whatever the words around them; nothing is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError, SettingError
from ...graphs.graph import Communities, Edges, Graph
from ...kernels.rank import dense_scores, top_k
from ...providers.base import LLM, user_prompt
from ...types import ContextItem, FloatArray, Scored

if TYPE_CHECKING:
    from ..query import IndexView, State
    from .base import Operator

QUERY_SOURCES = ("question", "terms", "keywords")
_NUMBER = re.compile(r"\d+")


def edges_of(graph: Graph, op: Operator, structure: str) -> Edges:
    """The graph's edge records, or an error naming the structure and the operator."""
    if graph.edges is None:
        raise ConfigError(
            f"{op.name}: structure {structure!r} has no relation records; "
            "use a knowledge graph (kg, tkg, rkg, communities) for this operator's graph setting"
        )
    return graph.edges


def communities_of(graph: Graph, op: Operator, structure: str) -> Communities:
    if graph.communities is None:
        raise ConfigError(
            f"{op.name}: structure {structure!r} has no communities; set graph='communities' "
            "(the GraphRAG community index) and build it with `paretorag index`"
        )
    return graph.communities


# result kinds over the same rows: a subgraph result holds edge-record rows, as a relation result
_SAME_ROWS = {"relation": ("relation", "subgraph")}


def seeds(state: State, key: str, n: int, kind: str) -> Scored:
    """The state's result ``key`` checked to be rows of an ``n``-row space of ``kind``."""
    s = state.get(key)
    if len(s) and s.kind not in _SAME_ROWS.get(kind, (kind,)):
        raise ConfigError(f"the {key!r} result holds {s.kind!r} rows, this step reads {kind!r} rows")
    if len(s) and (int(s.ids.min()) < 0 or int(s.ids.max()) >= n):
        raise ConfigError(
            f"the {key!r} result has rows outside [0, {n}): the steps read different graphs; "
            "give them the same graph setting"
        )
    return s


def seed_vector(state: State, key: str | Sequence[str], n: int, kind: str) -> np.ndarray:
    """Dense scores of the ``key`` result over ``n`` rows (0 where it names nothing).

    ``key`` may name several results (FastGraphRAG seeds PPR from Link and VDB): their
    dense scores are summed.
    """
    if isinstance(key, str):
        return dense_scores(seeds(state, key, n, kind), n)
    out = np.zeros(n, dtype=np.float64)
    for k in key:
        out += dense_scores(seeds(state, k, n, kind), n)
    return out


def query_vector(index: IndexView, state: State, source: str, owner: Operator) -> FloatArray | None:
    """The vector to search with: the question's, or its extracted terms' (LightRAG).

    ``source`` is ``"question"``, ``"terms"`` (``state.terms``, the low-level keywords)
    or ``"keywords"`` (``state.info["keywords"]``, LightRAG's high-level keywords).
    ``None`` when the terms are empty (nothing to search for).
    """
    if source == "question":
        return state.vector(index)
    if source == "terms":
        if state.terms is None:
            raise ConfigError(
                f"{owner.name}: query='terms' needs a question.terms or question.keywords step first"
            )
        texts = state.terms
    elif source == "keywords":
        if "keywords" not in state.info:
            raise ConfigError(f"{owner.name}: query='keywords' needs a question.keywords step first")
        texts = list(state.info["keywords"])
    else:
        raise SettingError(type(owner).__name__, "query", source, f"be one of {QUERY_SOURCES}")
    if not texts:
        return None
    return np.asarray(index.embed([", ".join(texts)])[0], dtype=np.float32)


def text_item(index: IndexView, key: str, title: str, text: str, score: float) -> ContextItem:
    """A context item that is not a chunk (a community report, a path)."""
    return ContextItem(key, "", title, text, float(score), index.count_tokens(f"{title}\n{text}"), -1)


def add_items(state: State, items: list[ContextItem]) -> list[ContextItem]:
    """Append ``items`` to ``state.items`` while they fit the query's token budget.

    Items are taken in order, like context packing; the budget counts the tokens of
    items already in the state. Returns the items added.
    """
    have = list(state.items or [])
    limit = state.options.budget.max_tokens
    used = sum(it.n_tokens for it in have)
    added: list[ContextItem] = []
    for it in items:
        if limit is not None and used + it.n_tokens > limit:
            continue
        added.append(it)
        used += it.n_tokens
    state.items = have + added
    return added


def generative_llm(index: IndexView, op: Operator) -> LLM:
    """The LLM for ``op`` (stage ``query.<name>``), refusing the extractive backend."""
    llm = index.llm(f"query.{op.name}")
    if not getattr(llm, "generative", True):
        raise ConfigError(
            f"{op.name} asks an LLM to choose among candidates; the extractive backend cannot follow "
            "instructions. Configure a generative LLM: --llm openai:MODEL (or llamacpp:GGUF_PATH)"
        )
    return llm


def parse_choices(text: str, n: int, limit: int) -> list[int]:
    """0-based candidate rows named in an LLM reply: the numbers 1..n, first mention first.

    Numbers out of range and repeats are ignored; at most ``limit`` are returned.
    """
    out: dict[int, None] = {}
    for m in _NUMBER.finditer(text):
        v = int(m.group())
        if 1 <= v <= n:
            out.setdefault(v - 1, None)
            if len(out) >= limit:
                break
    return list(out)


CHOOSE_PROMPT = """You are given a question and a numbered list of candidate {what}.
Choose at most {k} candidates that are most useful to answer the question, most useful first.
Reply with their numbers only, separated by commas (for example: 3, 1). Reply "none" if none helps.

Question: {question}

Candidates:
{candidates}
"""


def choose(llm: LLM, question: str, what: str, candidates: list[str], k: int) -> list[int]:
    """Ask ``llm`` to choose up to ``k`` of ``candidates`` (0-based rows, best first)."""
    if not candidates:
        return []
    listing = "\n".join(f"{i}. {c}" for i, c in enumerate(candidates, start=1))
    prompt = CHOOSE_PROMPT.format(what=what, k=k, question=question, candidates=listing)
    reply = llm.complete(user_prompt(prompt, max_tokens=64)).text
    return parse_choices(reply, len(candidates), k)


def node_text(graph: Graph, row: int, max_chars: int = 300) -> str:
    """A node as a prompt line: its name, and its description when the graph has one."""
    name = graph.names[row]
    desc = graph.descriptions[row] if graph.descriptions else ""
    return f"{name}: {desc[:max_chars]}" if desc else name


def ranked(rows: list[int], kind: str) -> Scored:
    """Rows in the given order with scores 1, 1/2, 1/3, ... (an LLM's ranking)."""
    ids = np.asarray(rows, dtype=np.int64)
    return Scored(ids, (1.0 / (1.0 + np.arange(ids.size))).astype(np.float32), kind)


__all__ = [
    "CHOOSE_PROMPT",
    "QUERY_SOURCES",
    "add_items",
    "best",
    "choose",
    "communities_of",
    "edges_of",
    "generative_llm",
    "node_text",
    "parse_choices",
    "query_vector",
    "ranked",
    "seed_vector",
    "seeds",
    "text_item",
]


def best(scores: np.ndarray, rows: np.ndarray, k: int | None, kind: str) -> Scored:
    """Top ``k`` (all when ``None``) of ``scores`` over ``rows``, best first, ties by row."""
    return top_k(scores, rows.size if k is None else k, kind, rows=rows)
