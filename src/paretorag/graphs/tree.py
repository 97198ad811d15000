"""E2GraphRAG's summary tree (E2GraphRAG §3.1, Figure 1; cost in App. D.2).

Chunk order is kept; every ``g`` consecutive nodes are summarized by one LLM call with
a minimal instruction prompt (no few-shot examples, §3.1), and the summaries are
summarized again, level by level, until at most ``g`` remain. Leaves are the chunks,
inner nodes the summaries. Level ``k`` holds ``ceil(n / g**k)`` summaries, so the
number of LLM calls is ``sum_k ceil(n / g**k)``, about ``n / (g - 1)`` (App. D.2;
:func:`expected_calls`). Calls within a level run concurrently
(:func:`paretorag.providers.wrappers.complete_many`). Every summary is embedded for
collapsed-tree dense retrieval (§3.2); chunk vectors are the index's ``vectors``.

Choices where the paper is silent (documented in the builder):

- ``scope="document"`` (default) builds one tree per document, so a summary never
  mixes two documents; a one-chunk document (a pre-split passage) gets no summary.
  ``scope="corpus"`` treats the whole chunk table as one sequence.
- The first level is built whenever a document has at least two chunks ("once all
  the original chunks have been summarized", §3.1); later levels while more than
  ``g`` nodes remain.
- Adjacent chunks overlap (100 tokens by default); within a group the overlap is
  sent once (``merge_overlap``), which saves about 8% of the prompt tokens and
  changes nothing the LLM reads.

Node numbering: nodes ``0 .. n-1`` are the chunk rows; summaries follow, level by
level, each level in document order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError
from ..params import check_positive_int
from ..providers.base import Request, Task, user_prompt
from ..providers.wrappers import complete_many
from ..store import ChunkTable
from ..structures import pack_texts, unpack_texts
from .base import BuildContext, Builder, StructureData, register_builder

SUMMARY_PROMPT = "Summarize the following text.\n\n{text}\n\nSummary:"
"""The minimal instruction prompt of §3.1: the task, then the text; nothing else."""


def summary_request(texts: Sequence[str], *, max_tokens: int, max_words: int = 0) -> Request:
    """One summarization call over ``texts`` with :data:`SUMMARY_PROMPT` (shared by RAPTOR).

    The structured :class:`~paretorag.providers.base.Task` lets the LLM-free
    ``extractive`` backend summarize too.
    """
    task = Task("summarize", texts=tuple(texts), max_words=max_words)
    return user_prompt(SUMMARY_PROMPT.format(text="\n\n".join(texts)), task, max_tokens=max_tokens)


def level_sizes(n: int, g: int) -> list[int]:
    """Summaries per level over ``n`` nodes: ``ceil(n / g**k)`` for each level ``k`` built.

    One level is built when ``n >= 2``, then more while the previous level has more
    than ``g`` nodes.

    Examples
    --------
    >>> level_sizes(100, 5), level_sizes(26, 5), level_sizes(1, 5)
    ([20, 4], [6, 2], [])
    """
    out: list[int] = []
    if n < 2:
        return out
    k = 1
    while not out or out[-1] > g:
        out.append(-(-n // g**k))  # ceil(n / g**k), exact in integers
        k += 1
    return out


def expected_calls(n: int, g: int) -> int:
    """LLM calls to build the tree over ``n`` nodes: ``sum_k ceil(n / g**k)`` (App. D.2).

    Examples
    --------
    >>> expected_calls(100, 5), expected_calls(3, 5), expected_calls(1, 5)
    (24, 1, 0)
    """
    return sum(level_sizes(n, g))


@dataclass(frozen=True)
class TreeArrays:
    """A loaded summary tree (rows ``0..n_chunks-1`` are chunks, then summaries).

    ``first_row`` / ``last_row`` give the chunk rows a node covers (its leaves are the
    contiguous rows ``first_row .. last_row``): a summary's occurrence weight, the sum
    of its children's (§3.2), is a range sum over them.
    """

    n_chunks: int
    parent: np.ndarray
    level: np.ndarray
    child_indptr: np.ndarray
    child_indices: np.ndarray
    first_row: np.ndarray
    last_row: np.ndarray
    summary_vectors: np.ndarray
    summaries: list[str]

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    def children(self, node: int) -> np.ndarray:
        return self.child_indices[self.child_indptr[node] : self.child_indptr[node + 1]]

    @classmethod
    def from_structure(cls, data: StructureData) -> TreeArrays:
        a = data.arrays
        return cls(
            n_chunks=int(data.meta["n_chunks"]),
            parent=a["parent"],
            level=a["level"],
            child_indptr=a["child_indptr"],
            child_indices=a["child_indices"],
            first_row=a["first_row"],
            last_row=a["last_row"],
            summary_vectors=np.ascontiguousarray(a["summary_vectors"], dtype=np.float32),
            summaries=unpack_texts(a["summary_utf8"], a["summary_offsets"]),
        )


def _sequences(chunks: ChunkTable, scope: str) -> list[list[int]]:
    """Chunk rows to summarize as one sequence each: per document, or the whole table."""
    n = len(chunks)
    if scope == "corpus":
        return [list(range(n))] if n else []
    seqs: list[list[int]] = []
    for row in range(n):
        if row and chunks.doc_ids[row] == chunks.doc_ids[row - 1]:
            seqs[-1].append(row)
        else:
            seqs.append([row])
    return seqs


def _group_texts(chunks: ChunkTable, rows: Sequence[int], merge_overlap: bool) -> list[str]:
    """Texts of a group of chunks; runs of adjacent overlapping chunks joined without the overlap."""
    out: list[str] = []
    prev = -1
    for row in rows:
        text = chunks.texts[row]
        contiguous = (
            merge_overlap
            and prev >= 0
            and chunks.doc_ids[row] == chunks.doc_ids[prev]
            and chunks.starts[row] <= chunks.ends[prev]
        )
        if contiguous and out:
            cut = int(chunks.ends[prev] - chunks.starts[row])
            out[-1] += text[max(cut, 0) :]
        else:
            out.append(text)
        prev = row
    return out


@register_builder
class SummaryTree(Builder):
    """Recursive summary tree over consecutive chunks (E2GraphRAG §3.1; App. D.2).

    Parameters
    ----------
    g : int
        Group size: nodes summarized per LLM call (paper default 5).
    scope : {"document", "corpus"}
        One tree per document (default) or one over the whole chunk table.
    max_concurrency : int, optional
        Calls in flight per level (default: the backend's own limit).
    max_tokens : int
        Generation limit per summary (the paper's ``max_new_tokens`` 1200, App. C).
    max_words : int
        Summary length passed to LLM-free backends (``extractive``); 0 = backend default.
    merge_overlap : bool
        Send the overlap of adjacent chunks once per group.
    """

    name = "tree"
    runtime_params = ("max_concurrency",)
    requires = ()
    uses_llm = True

    def __init__(
        self,
        *,
        g: int = 5,
        scope: Literal["document", "corpus"] = "document",
        max_concurrency: int | None = None,
        max_tokens: int = 1200,
        max_words: int = 0,
        merge_overlap: bool = True,
    ) -> None:
        self.g = g
        self.scope = scope
        self.max_concurrency = max_concurrency
        self.max_tokens = max_tokens
        self.max_words = max_words
        self.merge_overlap = merge_overlap

    def _validate(self) -> None:
        if check_positive_int(self, "g", self.g) < 2:
            raise ConfigError(f"SummaryTree.g must be at least 2 (nodes per summary), got {self.g}")
        if self.scope not in ("document", "corpus"):
            raise ConfigError(f"SummaryTree.scope must be 'document' or 'corpus', got {self.scope!r}")
        if self.max_concurrency is not None:
            check_positive_int(self, "max_concurrency", self.max_concurrency)
        check_positive_int(self, "max_tokens", self.max_tokens)
        if isinstance(self.max_words, bool) or not isinstance(self.max_words, int) or self.max_words < 0:
            raise ConfigError(f"SummaryTree.max_words must be a non-negative integer, got {self.max_words!r}")

    def build(self, ctx: BuildContext) -> StructureData:
        self._validate()
        chunks = ctx.chunks
        n, g = len(chunks), self.g
        llm = ctx.llm("index.tree")
        parent: list[int] = [-1] * n
        level: list[int] = [0] * n
        first: list[int] = list(range(n))
        last: list[int] = list(range(n))
        children: list[list[int]] = [[] for _ in range(n)]
        summaries: list[str] = []
        current = _sequences(chunks, self.scope)
        total = sum(expected_calls(len(s), g) for s in current)
        depth = 0
        with ctx.progress.task("summary tree", total=total) as bar:
            while True:
                groups: list[list[int]] = []
                seq_of: list[int] = []
                for si, seq in enumerate(current):
                    if len(seq) > (1 if depth == 0 else g):
                        for i in range(0, len(seq), g):
                            groups.append(seq[i : i + g])
                            seq_of.append(si)
                if not groups:
                    break
                requests = []
                for grp in groups:
                    texts = (
                        _group_texts(chunks, grp, self.merge_overlap)
                        if depth == 0
                        else [summaries[c - n] for c in grp]
                    )
                    requests.append(
                        summary_request(texts, max_tokens=self.max_tokens, max_words=self.max_words)
                    )
                done = complete_many(llm, requests, self.max_concurrency)
                bar.advance(len(done))
                nxt: list[list[int]] = [[] for _ in current]
                for grp, si, out in zip(groups, seq_of, done, strict=True):
                    node = n + len(summaries)
                    summaries.append(out.text.strip())
                    for c in grp:
                        parent[c] = node
                    parent.append(-1)
                    level.append(depth + 1)
                    first.append(first[grp[0]])
                    last.append(last[grp[-1]])
                    children.append(list(grp))
                    nxt[si].append(node)
                current = [s for s in nxt if s]
                depth += 1
        vectors = (
            np.asarray(ctx.embedder.embed(summaries), dtype=np.float32)
            if summaries
            else np.zeros((0, int(ctx.embedder.dim)), dtype=np.float32)
        )
        blob, offsets = pack_texts(summaries)
        indptr = np.zeros(len(children) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(c) for c in children])
        flat = [c for cs in children for c in cs]
        arrays: dict[str, np.ndarray] = {
            "parent": np.asarray(parent, dtype=np.int64),
            "level": np.asarray(level, dtype=np.int32),
            "child_indptr": indptr,
            "child_indices": np.asarray(flat, dtype=np.int64),
            "first_row": np.asarray(first, dtype=np.int64),
            "last_row": np.asarray(last, dtype=np.int64),
            "summary_vectors": vectors,
            "summary_utf8": blob,
            "summary_offsets": offsets,
        }
        stats: dict[str, Any] = {
            "summaries": len(summaries),
            "levels": depth,
            "llm_calls": len(summaries),
            "expected_calls": total,
            "empty_summaries": sum(1 for s in summaries if not s),
        }
        meta = {
            "n_chunks": n,
            "settings": self.get_params(deep=False),
            "prompt": SUMMARY_PROMPT,
            "stats": stats,
        }
        return StructureData(arrays, meta)


__all__ = [
    "SUMMARY_PROMPT",
    "SummaryTree",
    "TreeArrays",
    "expected_calls",
    "level_sizes",
    "pack_texts",
    "summary_request",
    "unpack_texts",
]
