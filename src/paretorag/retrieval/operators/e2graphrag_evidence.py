"""E2GraphRAG's evidence format (end of E2GraphRAG §3.2).

Retrieved nodes are shown to the LLM as "entity1-entity2-...: chunks": grouped under
the query entities they contain, each node once (a chunk linked to several entity
pairs is listed once under the union of their entities), runs of adjacent chunks
merged without their overlap, groups ordered by entity coverage and chunks within a
group in document order. Passages are numbered across groups so that the answer
can cite them as ``[n]``.

The registered operator ``e2graphrag.evidence`` turns the retrieved tree nodes into
context items and this evidence text, within the query's token budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...storage.store import ChunkTable
from ...types import ContextItem, IntArray, Scored
from .base import Operator, check_positive_int, register_operator
from .e2graphrag import PAPER, load_state, rank_scores

if TYPE_CHECKING:
    from ..query import IndexView, State


def entity_keys(
    entity_chunks: sp.csr_matrix,
    sources: IntArray,
    names: Sequence[str],
    first_row: np.ndarray,
    last_row: np.ndarray,
    leaf_rows: np.ndarray | None = None,
) -> list[tuple[str, ...]]:
    """The query entities (vertex ids ``sources``) found in each node's leaves.

    A node's leaves are the positions ``first_row .. last_row`` in the tree's leaf
    order ``leaf_rows`` (default: the chunk rows in order): for a chunk, itself; for a
    summary, every chunk it summarizes (those that gave it its occurrence weight).
    ``names`` are all vertex names; entities keep the question's order.
    """
    if sources.size == 0:
        return [() for _ in range(first_row.size)]
    occ = entity_chunks[sources].toarray()  # (query entities, chunks): a few rows
    if leaf_rows is not None:
        occ = occ[:, leaf_rows]
    prefix = np.concatenate([np.zeros((sources.size, 1), np.int64), np.cumsum(occ, axis=1)], axis=1)
    present = (prefix[:, last_row + 1] - prefix[:, first_row]) > 0
    return [
        tuple(names[int(sources[e])] for e in np.flatnonzero(present[:, j])) for j in range(first_row.size)
    ]


@dataclass(frozen=True)
class Evidence:
    """One retrieved tree node to show the LLM.

    ``key`` is the query entities it covers; ``row`` the chunk row (the first leaf for
    a summary); ``start``/``end`` character offsets in its document (chunks only).
    """

    node: int
    key: tuple[str, ...]
    doc_id: str
    title: str
    row: int
    order: int
    start: int
    end: int
    text: str
    is_summary: bool = False


@dataclass(frozen=True)
class Passage:
    """A group member: one node, or a run of adjacent chunks merged without their overlap."""

    nodes: tuple[int, ...]
    rows: tuple[int, ...]
    doc_id: str
    title: str
    text: str
    is_summary: bool = False
    orders: tuple[int, int] = (-1, -1)  # chunk order of the first and last chunk of a run

    @property
    def merged(self) -> bool:
        return len(self.rows) > 1

    @property
    def label(self) -> str:
        """The title shown with the passage; a merged run names its chunk range."""
        if not self.merged:
            return self.title
        return f"{self.title} (chunks {self.orders[0]}-{self.orders[1]}, merged)".lstrip()


def _mergeable(prev: Evidence, cur: Evidence) -> bool:
    return (
        not prev.is_summary
        and not cur.is_summary
        and prev.doc_id == cur.doc_id
        and cur.order == prev.order + 1
        and cur.start <= prev.end
    )


def merge_adjacent(units: Sequence[Evidence]) -> list[Passage]:
    """Passages of units in document order; runs of adjacent chunks are merged (§3.2).

    Adjacent means the same document and consecutive chunk order with overlapping or
    touching character ranges; the overlap (``prev.end - cur.start`` characters) is
    dropped from the later chunk, so the merged text is the document's text from the
    first chunk's start to the last chunk's end.
    """
    ordered = sorted(units, key=lambda u: (u.row, u.is_summary, u.node))
    out: list[Passage] = []
    prev: Evidence | None = None
    for u in ordered:
        if prev is not None and out and _mergeable(prev, u):
            p = out[-1]
            tail = u.text[max(prev.end - u.start, 0) :]
            orders = (p.orders[0], u.order)
            out[-1] = Passage(
                (*p.nodes, u.node), (*p.rows, u.row), p.doc_id, p.title, p.text + tail, False, orders
            )
        else:
            out.append(
                Passage((u.node,), (u.row,), u.doc_id, u.title, u.text, u.is_summary, (u.order, u.order))
            )
        prev = u
    return out


def group_evidence(units: Sequence[Evidence]) -> list[tuple[tuple[str, ...], list[Passage]]]:
    """Units grouped by their entity key, each node once (§3.2).

    Groups are ordered by entity coverage (more entities first), then by where their
    first passage lies in the corpus; passages within a group in document order.
    """
    seen: set[int] = set()
    groups: dict[tuple[str, ...], list[Evidence]] = {}
    for u in units:
        if u.node in seen:
            continue
        seen.add(u.node)
        groups.setdefault(u.key, []).append(u)
    merged = [(key, merge_adjacent(us)) for key, us in groups.items()]
    merged.sort(key=lambda kp: (-len(kp[0]), min(p.rows[0] for p in kp[1]), kp[0]))
    return merged


def passage_block(number: int, passage: Passage) -> str:
    """One numbered passage, as :func:`paretorag.answering.context.format_block` writes it."""
    return f"[{number}] {passage.label}".rstrip() + f"\n{passage.text}"


def format_evidence(groups: Sequence[tuple[tuple[str, ...], Sequence[Passage]]]) -> str:
    """The evidence text: ``entity1-entity2-...:`` headers over numbered passages (§3.2).

    Passages are numbered across groups in order (the LLM cites them as ``[n]``); a
    group without entities is headed ``other:`` unless it is the only group.
    """
    blocks: list[str] = []
    n = 0
    for key, passages in groups:
        body = []
        for p in passages:
            n += 1
            body.append(passage_block(n, p))
        header = "-".join(key) + ":\n" if key else ("other:\n" if len(groups) > 1 else "")
        blocks.append(header + "\n\n".join(body))
    return "\n\n".join(blocks)


def evidence_units(
    chunks: ChunkTable,
    summaries: Sequence[str],
    nodes: IntArray,
    first_row: np.ndarray,
    keys: Sequence[tuple[str, ...]],
    n_docs: Sequence[int] | None = None,
) -> list[Evidence]:
    """Evidence for tree nodes (chunk rows below ``len(chunks)``, summaries after them).

    ``first_row`` is each node's first chunk row; ``n_docs`` the number of documents a
    summary covers (default 1), named in its title when more than one.
    """
    n = len(chunks)
    out: list[Evidence] = []
    spans = n_docs if n_docs is not None else [1] * len(keys)
    for node, r, key, nd in zip(nodes.tolist(), first_row.tolist(), keys, spans, strict=True):
        doc, order = chunks.doc_ids[r], int(chunks.orders[r])
        if node < n:
            start, end = int(chunks.starts[r]), int(chunks.ends[r])
            out.append(Evidence(node, key, doc, chunks.titles[r], r, order, start, end, chunks.texts[r]))
        else:
            more = f" and {nd - 1} more" if nd > 1 else ""
            title = f"{chunks.titles[r]}{more} (summary)".strip()
            out.append(
                Evidence(node, key, doc, title, r, order, -1, -1, summaries[node - n], is_summary=True)
            )
    return out


def _within_budget(index: IndexView, units: list[Evidence], limit: int | None) -> tuple[int, bool]:
    """How many units (best first) fit the token budget once grouped and formatted.

    Returns the count and whether that many fit (one unit is kept even when it does
    not: the context packer then cuts it).
    """
    if limit is None:
        return len(units), True

    def fits(m: int) -> bool:
        return index.count_tokens(format_evidence(group_evidence(units[:m]))) <= limit

    if fits(len(units)):
        return len(units), True
    lo, hi = 0, len(units)  # fits(lo) (vacuously for 0), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return (lo, True) if lo else (1, False)


ANSWER_TOKENS = 12_000  # the evidence's budget when the query gives none (G2ConS's beta)


def _cut_note(
    index: IndexView, units: list[Evidence], keep: int, limit: int, given: bool, n_chunks: int
) -> dict[str, object]:
    """What the budget left out, for the trace: the nodes cut (best first) and the tokens."""
    cut = units[keep:]
    return {
        "max_tokens": limit,
        "budget": "query" if given else "default (e2graphrag.evidence max_tokens)",
        "kept_passages": keep,
        "cut_passages": len(cut),
        "cut": [f"{u.doc_id}#s{u.node - n_chunks}" if u.is_summary else index.chunks.ids[u.row] for u in cut],
        "tokens_before": index.count_tokens(format_evidence(group_evidence(units))),
    }


@register_operator
class EvidenceFormat(Operator):
    """Retrieved tree nodes as E2GraphRAG's evidence (end of §3.2), within the budget.

    Reads the ``"node"`` result (best first), groups the nodes under the query
    entities they contain, merges adjacent chunks, and sets ``state.context_text`` (the
    grouped evidence) and ``state.items`` (the same passages in ranking order, so that
    recall and context recall judge one order); produces the retrieved chunk rows.

    The evidence fits the query's token budget or, when the query gives none,
    ``max_tokens``: E2GraphRAG's k = 25 chunks of 1,200 tokens would be some 30,000
    tokens in one answer prompt. The best nodes are kept; ``state.info["budget_cut"]``
    says what was left out (the passages, best first, and the tokens before the cut).

    Parameters
    ----------
    max_tokens : int, optional
        The evidence's budget in tokens when the query has none (default
        :data:`ANSWER_TOKENS`, 12,000).
    """

    name = "e2graphrag.evidence"
    kind = "e2graphrag"
    produces = "chunk"
    consumes = ("node", "entity")
    structures = ("vectors", "tree", "entity_graph")
    paper = PAPER

    def __init__(self, *, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens

    def run(self, index: IndexView, state: State) -> Scored:
        e2 = load_state(index)
        tree, graph, chunks = e2.tree, e2.graph, index.chunks
        n = tree.n_chunks
        ids = state.get("node").ids
        sources = state.results["entity"].ids if "entity" in state.results else np.zeros(0, np.int64)
        rows = ids[ids < n]
        state.info["summaries"] = [int(i) for i in ids[ids >= n]]
        if ids.size == 0:
            state.items, state.context_text = [], ""
            return Scored(rows, rank_scores(rows.size))
        first, last = tree.first_row[ids], tree.last_row[ids]
        keys = entity_keys(graph.node_chunks, sources, graph.names, first, last, tree.leaf_rows)
        n_docs = [
            len({chunks.doc_ids[r] for r in tree.leaf_rows[a : b + 1]}) if b > a else 1
            for a, b in zip(first.tolist(), last.tolist(), strict=True)
        ]
        units = evidence_units(chunks, tree.summaries, ids, tree.leaf_rows[first], keys, n_docs)
        rank = {int(node): j for j, node in enumerate(ids)}
        given = state.options.budget.max_tokens
        own = (
            ANSWER_TOKENS
            if self.max_tokens is None
            else check_positive_int(self, "max_tokens", self.max_tokens)
        )
        limit = given if given is not None else own
        keep, fits = _within_budget(index, units, limit)
        groups = group_evidence(units[:keep])
        items: list[ContextItem] = []
        for _, passages in groups:
            for p in passages:
                j = min(rank[x] for x in p.nodes)
                r0 = p.rows[0]
                if p.is_summary:
                    cid = f"{chunks.doc_ids[r0]}#s{p.nodes[0] - n}"
                    ntok = int(e2.summary_tokens[p.nodes[0] - n])
                else:
                    cid, ntok = chunks.ids[r0], int(sum(int(chunks.n_tokens[x]) for x in p.rows))
                    if p.merged:  # one context holding several chunks says so
                        cid = f"{p.doc_id}#{p.orders[0]}-{p.orders[1]}"
                items.append(ContextItem(cid, p.doc_id, p.label, p.text, float(1.0 / (1.0 + j)), ntok, r0))
        # one order: the items (what CR@k and the citations read) follow the node ranking, as
        # the chunk rows do (what R@k reads); the grouped evidence text keeps the paper's format
        items.sort(key=lambda it: -it.score)
        state.items = items
        # a single passage over the budget: let the context packer cut it (numbered format)
        state.context_text = format_evidence(groups) if fits else None
        if keep < len(units):
            state.info["dropped_for_budget"] = len(units) - keep
            state.info["budget_cut"] = _cut_note(index, units, keep, limit, given is not None, n)
        return Scored(rows, rank_scores(rows.size))


__all__ = [
    "ANSWER_TOKENS",
    "Evidence",
    "EvidenceFormat",
    "Passage",
    "entity_keys",
    "evidence_units",
    "format_evidence",
    "group_evidence",
    "merge_adjacent",
    "passage_block",
]
