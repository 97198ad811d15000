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
  ``scope="corpus"`` treats the whole chunk table as one sequence. ``scope="auto"``
  keeps one tree per document for documents of at least ``min_tokens`` tokens and
  pools the shorter ones into one sequence, so that a corpus of passages (every
  multi-hop benchmark) gets summaries and a global route to read.
- Pooled documents are grouped in corpus order (``grouping="order"``) or by their
  vectors (``grouping="vector"``): a balanced divisive clustering that splits the
  documents in two along their first principal component, recursively, with sizes
  kept to multiples of ``g**j`` so that every group of ``g`` consecutive nodes, at
  every level, is a cluster. RAPTOR clusters with Gaussian mixtures into groups of
  any size (unified framework, ``raptor_tree``); E2GraphRAG's tree summarizes ``g``
  nodes per call, which keeps its cost formula exact, so the clusters are balanced.
  Documents stay whole: a pooled document's chunks stay together, in order.
- The first level is built whenever a sequence has at least two chunks ("once all
  the original chunks have been summarized", §3.1); later levels while more than
  ``g`` nodes remain.
- Adjacent chunks overlap (100 tokens by default); within a group the overlap is
  sent once (``merge_overlap``), which saves about 8% of the prompt tokens and
  changes nothing the LLM reads.

Node numbering: nodes ``0 .. n-1`` are the chunk rows; summaries follow, level by
level, each level in sequence order. The leaves of a node are contiguous in the
tree's leaf order ``leaf_rows`` (the sequences one after the other; the chunk rows in
order unless documents were pooled): ``first_row``/``last_row`` are positions in it.

One module (over 400 lines): the tree's arrays, its builder and the summary requests are one
§3.1 structure, stored and resumed together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError
from ..params import check_positive_int
from ..providers.base import Request, Task, user_prompt
from ..providers.wrappers import complete_many
from ..storage.store import ChunkTable
from ..storage.structures import pack_texts, unpack_texts
from .base import BuildContext, Builder, StructureData, previous_structure, register_builder

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

    ``first_row`` / ``last_row`` give the leaves a node covers: positions
    ``first_row .. last_row`` in the leaf order ``leaf_rows`` (position -> chunk row;
    the identity unless documents were pooled and reordered). A summary's occurrence
    weight, the sum of its children's (§3.2), is a range sum over them
    (:meth:`in_leaf_order` puts per-chunk values in that order).
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
    leaf_rows: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    def in_leaf_order(self, per_chunk: np.ndarray) -> np.ndarray:
        """Per-chunk values (last axis indexed by chunk row) in leaf order."""
        return per_chunk[..., self.leaf_rows]

    def first_chunk(self, nodes: np.ndarray) -> np.ndarray:
        """The chunk row of each node's first leaf."""
        rows: np.ndarray = self.leaf_rows[self.first_row[nodes]]
        return rows

    def children(self, node: int) -> np.ndarray:
        return self.child_indices[self.child_indptr[node] : self.child_indptr[node + 1]]

    @classmethod
    def from_structure(cls, data: StructureData) -> TreeArrays:
        a = data.arrays
        n = int(data.meta["n_chunks"])
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
            leaf_rows=a["leaf_rows"] if "leaf_rows" in a else np.arange(n, dtype=np.int64),
        )


def _doc_runs(chunks: ChunkTable) -> list[list[int]]:
    """Chunk rows of each document (consecutive rows of one ``doc_id``), in table order."""
    runs: list[list[int]] = []
    for row in range(len(chunks)):
        if row and chunks.doc_ids[row] == chunks.doc_ids[row - 1]:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def balanced_order(vectors: np.ndarray, g: int) -> np.ndarray:
    """An order of the rows of ``vectors`` in which consecutive blocks are clusters.

    Divisive clustering: split the rows in two along their first principal component
    (at a multiple of the largest power of ``g`` below their number, so the blocks of
    ``g**j`` consecutive rows at every level fall inside one side), then split each
    side again, down to at most ``g`` rows. Deterministic (the component's sign is
    fixed by its largest coordinate).

    Examples
    --------
    >>> x = np.array([[0, 1.0], [5, 0], [0, 1.1], [5.2, 0]])
    >>> balanced_order(x, 2).tolist()
    [2, 0, 1, 3]
    """
    x = np.asarray(vectors, dtype=np.float64)
    out: list[np.ndarray] = []
    todo = [np.arange(x.shape[0], dtype=np.int64)]
    while todo:
        rows = todo.pop()
        m = rows.size
        if m <= g:
            out.append(rows)
            continue
        c = x[rows] - x[rows].mean(axis=0)
        _, _, vt = np.linalg.svd(c, full_matrices=False)
        axis = vt[0] * (1.0 if vt[0][np.argmax(np.abs(vt[0]))] >= 0 else -1.0)
        order = rows[np.lexsort((rows, c @ axis))]
        block = g  # the largest power of g below m: block < m <= block * g
        while block * g < m:
            block *= g
        half = block * ((-(-m // block) + 1) // 2)  # half of the blocks, rounded up: block <= half < m
        todo.append(order[half:])  # popped second: the first half comes first
        todo.append(order[:half])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


DRIFT_LIMIT = 0.2
"""Pooled documents added plus removed since the last full grouping, as a fraction of the
documents it grouped, past which they are grouped afresh (as RAPTOR's tree,
:data:`paretorag.graphs.raptor_update.DRIFT_LIMIT`)."""


@dataclass(frozen=True)
class PooledOrder:
    """The order of the pooled documents (their ids) and the drift since their last full grouping."""

    doc_ids: list[str]
    base: int
    changed: int
    kept: bool = False  # the earlier order, kept (not stored)

    def to_json(self) -> dict[str, Any]:
        return {"doc_ids": self.doc_ids, "base": self.base, "changed": self.changed}


def _kept_order(
    pooled: list[list[int]], chunks: ChunkTable, before: PooledOrder | None
) -> PooledOrder | None:
    """The earlier order of the pooled documents that remain, new ones after them; None when
    there is no earlier order or the drift passes :data:`DRIFT_LIMIT` (group afresh)."""
    if before is None or not before.base:
        return None
    ids = [chunks.doc_ids[r[0]] for r in pooled]
    now = set(ids)
    kept = [d for d in before.doc_ids if d in now]
    known = set(kept)
    added = [d for d in ids if d not in known]
    changed = before.changed + len(added) + (len(before.doc_ids) - len(kept))
    if changed > DRIFT_LIMIT * before.base:
        return None
    return PooledOrder(kept + added, before.base, changed, kept=True)


def _sequences(
    chunks: ChunkTable,
    scope: str,
    min_tokens: int,
    grouping: str,
    g: int,
    vectors: Callable[[list[int]], np.ndarray],
    before: PooledOrder | None = None,
) -> tuple[list[list[int]], PooledOrder | None]:
    """Chunk rows to summarize as one sequence each (see the module docstring), and the order
    of the pooled documents.

    ``vectors(rows)`` gives the vectors of chunk rows (used by ``grouping="vector"``).
    ``before``: the pooled order of the tree this one replaces. Its documents keep their
    places and new ones follow them, so that an insert changes only the groups at the end
    of the sequence and the summaries above them (the others repeat their prompts and come
    from the LLM cache); a delete changes the groups from the deleted document on. Past
    :data:`DRIFT_LIMIT` the documents are grouped afresh.
    """
    runs = _doc_runs(chunks)
    if scope == "document":
        return runs, None
    if scope == "corpus":
        pooled, own = runs, []
    else:
        ntok = np.asarray(chunks.n_tokens, dtype=np.int64)
        own = [r for r in runs if int(ntok[r].sum()) >= min_tokens]
        pooled = [r for r in runs if int(ntok[r].sum()) < min_tokens]
    order = _kept_order(pooled, chunks, before)
    if order is not None:
        by_id = {chunks.doc_ids[r[0]]: r for r in pooled}
        pooled = [by_id[d] for d in order.doc_ids]
    elif grouping == "vector" and len(pooled) > 2:
        vec = vectors([row for r in pooled for row in r])
        docs = np.repeat(np.arange(len(pooled)), [len(r) for r in pooled])
        means = np.zeros((len(pooled), vec.shape[1]), dtype=np.float64)
        np.add.at(means, docs, vec)
        pooled = [pooled[i] for i in balanced_order(means / np.bincount(docs)[:, None], g).tolist()]
    if order is None:
        order = PooledOrder([chunks.doc_ids[r[0]] for r in pooled], len(pooled), 0)
    seqs = [r for r in own]
    flat = [row for r in pooled for row in r]
    if flat:
        seqs.append(flat)
    return seqs, order


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
            and int(chunks.orders[row]) == int(chunks.orders[prev]) + 1
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
    scope : {"document", "corpus", "auto"}
        One tree per document (default), one over the whole chunk table, or per
        document for documents of at least ``min_tokens`` tokens and one over the
        shorter documents pooled (``auto``).
    min_tokens : int
        ``auto``: documents with fewer tokens (summed over their chunks) are pooled
        (default 2400, two of the paper's 1200-token chunks).
    grouping : {"order", "vector"}
        How pooled documents are ordered before every ``g`` consecutive nodes are
        summarized: corpus order, or balanced divisive clustering of their vectors
        (:func:`balanced_order`; vectors of ``"title\ntext"``, cached with the
        index's own when it embeds titles).
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
    version = 2  # scope "auto", grouping; a pooled document's chunks merged only when consecutive
    runtime_params = ("max_concurrency",)
    requires = ()
    uses_llm = True

    def __init__(
        self,
        *,
        g: int = 5,
        scope: Literal["document", "corpus", "auto"] = "document",
        min_tokens: int = 2400,
        grouping: Literal["order", "vector"] = "vector",
        max_concurrency: int | None = None,
        max_tokens: int = 1200,
        max_words: int = 0,
        merge_overlap: bool = True,
    ) -> None:
        self.g = g
        self.scope = scope
        self.min_tokens = min_tokens
        self.grouping = grouping
        self.max_concurrency = max_concurrency
        self.max_tokens = max_tokens
        self.max_words = max_words
        self.merge_overlap = merge_overlap

    def _validate(self) -> None:
        if check_positive_int(self, "g", self.g) < 2:
            raise ConfigError(f"SummaryTree.g must be at least 2 (nodes per summary), got {self.g}")
        if self.scope not in ("document", "corpus", "auto"):
            raise ConfigError(f"SummaryTree.scope must be 'document', 'corpus' or 'auto', got {self.scope!r}")
        if self.grouping not in ("order", "vector"):
            raise ConfigError(f"SummaryTree.grouping must be 'order' or 'vector', got {self.grouping!r}")
        check_positive_int(self, "min_tokens", self.min_tokens)
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

        def chunk_vectors(rows: list[int]) -> np.ndarray:
            texts = chunks.embedded_texts(True)
            return np.asarray(ctx.embedder.embed([texts[r] for r in rows]), dtype=np.float32)

        before = self._pooled_before(ctx)
        current, pooled = _sequences(
            chunks, self.scope, self.min_tokens, self.grouping, g, chunk_vectors, before
        )
        leaf_rows = np.asarray([r for seq in current for r in seq], dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[leaf_rows] = np.arange(n, dtype=np.int64)
        level: list[int] = [0] * n
        first: list[int] = pos.tolist()
        last: list[int] = pos.tolist()
        children: list[list[int]] = [[] for _ in range(n)]
        summaries: list[str] = []
        current_seqs = current
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
        if not np.array_equal(leaf_rows, np.arange(n)):
            arrays["leaf_rows"] = leaf_rows
        stats: dict[str, Any] = {
            "summaries": len(summaries),
            "sequences": len(current_seqs),
            "levels": depth,
            "llm_calls": len(summaries),
            "expected_calls": total,
            "empty_summaries": sum(1 for s in summaries if not s),
        }
        meta: dict[str, Any] = {
            "n_chunks": n,
            "settings": self.get_params(deep=False),
            "prompt": SUMMARY_PROMPT,
            "stats": stats,
        }
        if pooled is not None and pooled.doc_ids:
            meta["pooled"] = pooled.to_json()
            stats["pooled"] = "order kept" if pooled.kept else "grouped afresh"
        return StructureData(arrays, meta)

    def _pooled_before(self, ctx: BuildContext) -> PooledOrder | None:
        """The pooled order of the tree this build replaces, when it was built with these settings."""
        if self.scope == "document":
            return None
        prev = previous_structure(ctx, self.name)
        if prev is None or prev.meta.get("settings") != self.get_params(deep=False):
            return None
        got = prev.meta.get("pooled")
        if not isinstance(got, dict):
            return None
        return PooledOrder(list(got["doc_ids"]), int(got["base"]), int(got["changed"]))


__all__ = [
    "SUMMARY_PROMPT",
    "SummaryTree",
    "TreeArrays",
    "balanced_order",
    "expected_calls",
    "level_sizes",
    "pack_texts",
    "summary_request",
    "unpack_texts",
]
