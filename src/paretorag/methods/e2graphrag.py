"""``e2graphrag``: adaptive local/global retrieval over a summary tree and an entity graph.

E2GraphRAG (papers/e2graphrag.txt) indexes a corpus into a summary tree (§3.1,
:mod:`paretorag.graphs.tree`) and a spaCy entity co-occurrence graph with
entity<->chunk indexes (§3.1, :mod:`paretorag.graphs.entities`), and retrieves with
Algorithm 1 (App. A, §3.2):

1. extract the question's entities with the indexing extractor; keep graph vertices;
2. none -> **global**: dense top-k over the collapsed tree;
3. Graph Filter: pairs within ``h`` hops (Equation 1); none -> **global**: dense
   top-2k over the collapsed tree, Occurrence Ranking, keep k;
4. Index Mapping (Equation 2) -> **local** candidates; while more than ``k``, lower
   ``h`` and map again; if that empties the set, revert to the last non-empty one and
   keep ``k`` by Entity-Aware Ranking;
5. format the evidence as "entity1-entity2-...: chunks" (end of §3.2).

Algorithm 1 leaves one case open: pairs exist but share no chunk at the first ``h``
(the loop never runs, so there is no previous set to revert to). As the authors'
code does, it is treated as a global query (step 3's branch ``no_shared_chunk``).

Table 3's ablations are registered as their own methods so that ``paretorag eval
--methods e2graphrag,e2graphrag-dense-only,...`` reproduces the table on one index
(same structures): ``-dense-only``, ``-no-graph-filter``, ``-no-entity-aware``,
``-no-graph-filter-no-entity-aware``, ``-no-dense``, ``-no-occurrence``,
``-no-dense-no-occurrence``. No LLM call at query time besides the answer.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..graphs.entities import EntityGraphArrays
from ..graphs.tree import TreeArrays
from ..operators import e2graphrag as op
from ..operators import e2graphrag_evidence as ev
from ..operators.base import check_positive_int
from ..providers.nlp import EntityExtractor
from ..types import ContextItem, IntArray, Scored
from .base import IndexView, Method, QueryOptions, Retrieval, register

_STATE_KEY = "e2graphrag.state"
_QUERY_CACHE = 4096


@dataclass
class E2State:
    """Per-index objects, built once (``IndexView.cached``): graph, tree, extractor."""

    graph: EntityGraphArrays
    tree: TreeArrays
    extractor: EntityExtractor
    tree_g: int
    summary_tokens: np.ndarray
    query_terms: dict[str, list[str]] = field(default_factory=dict)

    def entities(self, text: str) -> list[str]:
        terms = self.query_terms.get(text)
        if terms is None:
            if len(self.query_terms) >= _QUERY_CACHE:
                self.query_terms.clear()
            terms = self.query_terms[text] = self.extractor.entities(text)
        return terms


def load_state(index: IndexView) -> E2State:
    """Load the tree and graph of ``index`` and the extractor they were built with."""
    gdata, tdata = index.structure("entity_graph"), index.structure("tree")
    n = len(index.chunks)
    for name, data in (("entity_graph", gdata), ("tree", tdata)):
        if int(data.meta.get("n_chunks", -1)) != n:
            raise ConfigError(
                f"structure {name!r} covers {data.meta.get('n_chunks')} chunks but the index has {n}; "
                "re-run `paretorag index` to rebuild it"
            )
    graph = EntityGraphArrays.from_structure(gdata)
    graph.entity_chunks.sort_indices()
    tree = TreeArrays.from_structure(tdata)
    meta = gdata.meta
    extractor = EntityExtractor(
        labels=tuple(meta["labels"]), split_names=bool(meta["split_names"]), sentences=meta["sentences"]
    )
    tokens = np.asarray([index.count_tokens(s) for s in tree.summaries], dtype=np.int64)
    g = int(tdata.meta.get("settings", {}).get("g", 0))
    return E2State(graph, tree, extractor, g, tokens)


def _rank_scores(n: int) -> np.ndarray:
    return (1.0 / (1.0 + np.arange(n))).astype(np.float32)


@register
class E2GraphRAG(Method):
    """E2GraphRAG retrieval, Algorithm 1 (E2GraphRAG §3.2, App. A; ablations: Table 3).

    Parameters
    ----------
    k : int
        Maximum chunks retrieved (paper: 25); ``QueryOptions.k`` overrides it.
    h : int
        Initial hop threshold of the Graph Filter (paper: 4).
    g : int, optional
        Expected tree group size; checked against the built tree (``None``: as built).
    labels : sequence of str, optional
        Expected entity labels; checked against the built graph (``None``: as built).
        Questions are always parsed with the graph's own extractor settings.
    question_first_line : bool
        Extract entities from the question's first line only, so that the options of a
        multiple-choice question are not read as question entities (App. B; the
        authors' code does the same).
    dense_only : bool
        Table 3 "Dense Retrieval Only": collapsed-tree dense top-k for every question.
    graph_filter : bool
        False: Table 3 "w/o Graph Filter" (every entity pair is kept; too many
        candidates go straight to Entity-Aware Ranking).
    entity_aware : bool
        False: Table 3 "w/o Entity-Aware Ranking" (the reverted set is cut to its
        first ``k`` chunks in document order).
    dense : bool
        False: Table 3 "w/o Dense Retrieval" (global candidates are all tree nodes,
        ranked by occurrences; a question without entities retrieves nothing).
    occurrence : bool
        False: Table 3 "w/o Occurrence Ranking" (global mode keeps the dense top-k).
    """

    name = "e2graphrag"
    requires = ("vectors", "tree", "entity_graph")
    uses_llm = False
    paper = "E2GraphRAG §3.2, Algorithm 1 (App. A)"

    def __init__(
        self,
        *,
        k: int = 25,
        h: int = 4,
        g: int | None = None,
        labels: Sequence[str] | None = None,
        question_first_line: bool = True,
        dense_only: bool = False,
        graph_filter: bool = True,
        entity_aware: bool = True,
        dense: bool = True,
        occurrence: bool = True,
    ) -> None:
        self.k = k
        self.h = h
        self.g = g
        self.labels = labels
        self.question_first_line = question_first_line
        self.dense_only = dense_only
        self.graph_filter = graph_filter
        self.entity_aware = entity_aware
        self.dense = dense
        self.occurrence = occurrence

    def _check(self, state: E2State) -> None:
        if self.g is not None and state.tree_g and self.g != state.tree_g:
            raise ConfigError(
                f"e2graphrag g={self.g} but this index's tree was built with g={state.tree_g}; "
                "drop the g setting or rebuild the tree with that group size in a new index"
            )
        if self.labels is not None and tuple(self.labels) != state.extractor.labels:
            raise ConfigError(
                f"e2graphrag labels={tuple(self.labels)} but the entity graph was built with "
                f"{state.extractor.labels}; drop the labels setting or rebuild the graph in a new index"
            )

    # -- Algorithm 1 ------------------------------------------------------------
    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        k = check_positive_int(self, "k", options.k if options.k is not None else self.k)
        h = self.h
        if isinstance(h, bool) or not isinstance(h, int) or h < 0:
            raise ConfigError(f"e2graphrag h must be a non-negative integer (hops), got {h!r}")
        state: E2State = index.cached(_STATE_KEY, lambda: load_state(index))
        self._check(state)
        graph, tree = state.graph, state.tree
        t0 = time.perf_counter()
        text = question.strip().split("\n", 1)[0] if self.question_first_line else question
        terms = state.entities(text)
        sources = op.map_entities(terms, graph.ids)
        t1 = time.perf_counter()
        info: dict[str, Any] = {"entities": terms, "mapped": [graph.names[v] for v in sources]}

        def collapsed(n_nodes: int) -> Scored:
            qv = index.embed_query(question)
            hits = index.dense_search(qv, n_nodes)
            return op.CollapsedTreeSearch(k=n_nodes)(hits, tree.summary_vectors, tree.n_chunks, qv)

        nodes: Scored
        if self.dense_only:
            mode, branch, nodes = "global", "dense_only", collapsed(k)
        elif sources.size == 0:
            mode, branch = "global", "no_entity"
            nodes = collapsed(k) if self.dense else Scored.empty("node")
        else:
            mode, branch, nodes = self._graph_branches(state, sources, k, h, info, collapsed)
        t2 = time.perf_counter()
        retrieval = self._finish(index, state, sources, nodes, mode, branch, info, options)
        t3 = time.perf_counter()
        info["timings_ms"] = {
            "entities": round((t1 - t0) * 1e3, 3),
            "select": round((t2 - t1) * 1e3, 3),
            "format": round((t3 - t2) * 1e3, 3),
        }
        return retrieval

    def _graph_branches(
        self,
        state: E2State,
        sources: IntArray,
        k: int,
        h: int,
        info: dict[str, Any],
        collapsed: Callable[[int], Scored],
    ) -> tuple[str, str, Scored]:
        graph = state.graph
        mapping = op.IndexMapping()
        if self.graph_filter:
            dist = op.hop_distances(graph.adjacency, sources, h, graph.component)
            pairs = op.GraphFilter(h=h)(dist)
        else:
            dist = None
            pairs = np.stack(np.triu_indices(sources.size, 1), axis=1).astype(np.int64)
        info["pairs"] = [[graph.names[sources[a]], graph.names[sources[b]]] for a, b in pairs]
        cands = mapping(graph.entity_chunks, sources, pairs) if pairs.size else np.zeros(0, np.int64)
        info["candidates"] = {str(h): int(cands.size)}
        if pairs.size == 0 or cands.size == 0:
            branch = "no_pair" if pairs.size == 0 else "no_shared_chunk"
            return "global", branch, self._global(state, sources, k, collapsed)
        ranker = op.EntityAwareRanking(k=k)
        if cands.size <= k:
            return (
                "local",
                "mapping",
                op.EntityAwareRanking(k=int(cands.size))(cands, graph.chunk_entities, sources),
            )
        if dist is None:  # w/o Graph Filter: lowering h cannot shrink the set
            return "local", "entity_aware", ranker(cands, graph.chunk_entities, sources)
        prev, hh = cands, h
        while cands.size > k:
            prev, hh = cands, hh - 1
            pairs = op.GraphFilter(h=hh)(dist)
            cands = mapping(graph.entity_chunks, sources, pairs) if pairs.size else np.zeros(0, np.int64)
            info["candidates"][str(hh)] = int(cands.size)
        info["h"] = hh
        if cands.size:
            return (
                "local",
                "shrink",
                op.EntityAwareRanking(k=int(cands.size))(cands, graph.chunk_entities, sources),
            )
        info["h"] = hh + 1  # reverted to the last non-empty set
        if self.entity_aware:
            return "local", "entity_aware", ranker(prev, graph.chunk_entities, sources)
        first = np.sort(prev)[:k]
        return "local", "revert_first_k", Scored(first, _rank_scores(first.size))

    def _global(
        self, state: E2State, sources: IntArray, k: int, collapsed: Callable[[int], Scored]
    ) -> Scored:
        """Global mode with entities: dense top-2k over the tree, then Occurrence Ranking (§3.2)."""
        tree, graph = state.tree, state.graph
        if self.dense and not self.occurrence:
            return collapsed(k)
        if not self.dense and not self.occurrence:
            return Scored.empty("node")
        weights_c = op.chunk_occurrences(graph.entity_chunks, sources)
        if self.dense:
            cands = collapsed(2 * k)
            w = op.node_weights(weights_c, tree.first_row, tree.last_row, cands.ids)
            return op.OccurrenceRanking(k=k)(cands, w)
        allnodes = np.arange(tree.n_nodes, dtype=np.int64)
        w = op.node_weights(weights_c, tree.first_row, tree.last_row, allnodes)
        keep = np.flatnonzero(w > 0)  # without dense scores, a zero-weight node is arbitrary
        return op.OccurrenceRanking(k=k)(
            Scored(allnodes[keep], np.zeros(keep.size, np.float32), "node"), w[keep]
        )

    # -- evidence -----------------------------------------------------------------
    def _finish(
        self,
        index: IndexView,
        state: E2State,
        sources: IntArray,
        nodes: Scored,
        mode: str,
        branch: str,
        info: dict[str, Any],
        options: QueryOptions,
    ) -> Retrieval:
        tree, graph, chunks = state.tree, state.graph, index.chunks
        n = tree.n_chunks
        ids = nodes.ids
        is_chunk = ids < n
        rows = ids[is_chunk]
        scored = Scored(rows, _rank_scores(rows.size))
        info["summaries"] = [int(i) for i in ids[~is_chunk]]
        if ids.size == 0:
            return Retrieval(scored, mode=mode, branch=branch, items=[], context_text="", info=info)
        first, last = tree.first_row[ids], tree.last_row[ids]
        keys = ev.entity_keys(graph.entity_chunks, sources, graph.names, first, last)
        units = ev.evidence_units(chunks, tree.summaries, ids, first, keys)
        rank = {int(node): j for j, node in enumerate(ids)}
        keep, fits = self._within_budget(index, units, options)
        groups = ev.group_evidence(units[:keep])
        items: list[ContextItem] = []
        for _, passages in groups:
            for p in passages:
                j = min(rank[x] for x in p.nodes)
                r0 = p.rows[0]
                if p.is_summary:
                    cid, ntok = (
                        f"{chunks.doc_ids[r0]}#s{p.nodes[0] - n}",
                        int(state.summary_tokens[p.nodes[0] - n]),
                    )
                else:
                    cid, ntok = chunks.ids[r0], int(sum(int(chunks.n_tokens[x]) for x in p.rows))
                items.append(ContextItem(cid, p.doc_id, p.title, p.text, float(1.0 / (1.0 + j)), ntok, r0))
        # a single passage over the budget: let the context packer cut it (numbered format)
        text = ev.format_evidence(groups) if fits else None
        if keep < len(units):
            info["dropped_for_budget"] = len(units) - keep
        return Retrieval(scored, mode=mode, branch=branch, items=items, context_text=text, info=info)

    @staticmethod
    def _within_budget(index: IndexView, units: list[ev.Evidence], options: QueryOptions) -> tuple[int, bool]:
        """How many units (best first) fit the token budget once grouped and formatted.

        Returns the count and whether that many fit (one unit is kept even when it
        does not: the context packer then cuts it).
        """
        limit = options.budget.max_tokens
        if limit is None:
            return len(units), True

        def fits(m: int) -> bool:
            return index.count_tokens(ev.format_evidence(ev.group_evidence(units[:m]))) <= limit

        if fits(len(units)):
            return len(units), True
        lo, hi = 0, len(units)  # fits(lo) (vacuously for 0), not fits(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return (lo, True) if lo else (1, False)


def _variant(name: str, doc: str, **switches: bool) -> type[E2GraphRAG]:
    """A registered E2GraphRAG whose default switches are a Table 3 ablation."""
    base = E2GraphRAG.__init__
    init = types.FunctionType(
        base.__code__, base.__globals__, "__init__", base.__defaults__, base.__closure__
    )
    init.__kwdefaults__ = {**(base.__kwdefaults__ or {}), **switches}
    init.__annotations__ = dict(base.__annotations__)
    cls = type(
        "E2GraphRAG_" + name.split("-", 1)[1].replace("-", "_"),
        (E2GraphRAG,),
        {"name": name, "__init__": init, "__doc__": f"{doc} (E2GraphRAG Table 3 ablation; see E2GraphRAG)."},
    )
    register(cls)
    return cls


ABLATIONS: dict[str, type[E2GraphRAG]] = {
    name: _variant(name, doc, **sw)
    for name, doc, sw in (
        ("e2graphrag-dense-only", "Dense Retrieval Only", {"dense_only": True}),
        ("e2graphrag-no-graph-filter", "w/o Graph Filter", {"graph_filter": False}),
        ("e2graphrag-no-entity-aware", "w/o Entity-Aware Ranking", {"entity_aware": False}),
        (
            "e2graphrag-no-graph-filter-no-entity-aware",
            "w/o Graph Filter & Entity-Aware Ranking",
            {"graph_filter": False, "entity_aware": False},
        ),
        ("e2graphrag-no-dense", "w/o Dense Retrieval", {"dense": False}),
        ("e2graphrag-no-occurrence", "w/o Occurrence Ranking", {"occurrence": False}),
        (
            "e2graphrag-no-dense-no-occurrence",
            "w/o Dense Retrieval & Occurrence Ranking",
            {"dense": False, "occurrence": False},
        ),
    )
}

__all__ = ["ABLATIONS", "E2GraphRAG", "E2State", "load_state"]
