"""Subgraph operators of the unified framework (§6.1, Table 3 "Subgraph" column).

A subgraph result is :class:`~paretorag.types.Scored` over the ``graph`` setting's
edge records (kind ``"subgraph"``, stored under ``"subgraph"``), scored by the rank of
the path that first uses the edge. The paths themselves (lists of node rows) go to
``state.info["paths"]`` and their texts ("A -[relation]-> B <-[relation]- C") to
``state.items``, within the query's token budget. A path step over an adjacency edge
with no edge record (a synonym link) is written ``A -- B`` and adds no edge row.

- ``subgraph.khoppath``: paths of at most ``max_hops`` edges joining the seed
  entities (DALK);
- ``subgraph.steiner``: an approximate Steiner tree over the seed entities (G-retriever);
- ``subgraph.agentpath``: the paths an LLM chooses among ``state.info["paths"]`` (DALK).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError, SettingError
from ...kernels.paths import cover_paths, k_hop_paths, merge_paths
from ...kernels.steiner import steiner_tree
from ...types import Scored
from .base import Operator, check_nonneg_int, check_positive_int, load_graph, register_operator
from .common import add_items, choose, edges_of, generative_llm, seeds, text_item

if TYPE_CHECKING:
    from ...graphs.graph import Edges, Graph
    from ..query import IndexView, State

KIND = "subgraph"


def _pair_rows(index: IndexView, name: str, e: Edges) -> dict[tuple[int, int], int]:
    """Unordered node pair -> its first edge record, built once per index and graph."""

    def build() -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        for j, (a, b) in enumerate(zip(e.src.tolist(), e.dst.tolist(), strict=True)):
            out.setdefault((min(a, b), max(a, b)), j)
        return out

    rows: dict[tuple[int, int], int] = index.cached(f"edge_pairs:{name}", build)
    return rows


def _step(graph: Graph, e: Edges, pairs: dict[tuple[int, int], int], a: int, b: int) -> tuple[int, str]:
    j = pairs.get((min(a, b), max(a, b)), -1)
    if j < 0:
        return -1, " -- "
    rel = (e.relation[j] if e.relation else "") or "related to"
    return j, (f" -[{rel}]-> " if int(e.src[j]) == a else f" <-[{rel}]- ")


def path_text(graph: Graph, e: Edges, pairs: dict[tuple[int, int], int], path: list[int]) -> str:
    """A path as one line: ``A -[relation]-> B <-[relation]- C``."""
    parts = [graph.names[path[0]]]
    for a, b in itertools.pairwise(path):
        parts += [_step(graph, e, pairs, a, b)[1], graph.names[b]]
    return "".join(parts)


def emit_paths(
    index: IndexView, state: State, op: Operator, graph: Graph, paths: list[list[int]], *, ranked: bool = True
) -> Scored:
    """Record ``paths`` in the state and return their edge rows.

    An edge scores ``1 / (1 + p)`` for the first path ``p`` that uses it (``ranked``)
    or 1 (the edges of a tree, in row order). The paths replace those of an earlier
    subgraph step, in ``state.info["paths"]`` and among ``state.items`` (items keyed
    ``path:N``).
    """
    name = str(getattr(op, "graph", ""))
    e = edges_of(graph, op, name)
    pairs = _pair_rows(index, name, e)
    ids: list[int] = []
    scores: list[float] = []
    seen: set[int] = set()
    items = []
    for p, path in enumerate(paths):
        score = 1.0 / (1.0 + p) if ranked else 1.0
        for a, b in itertools.pairwise(path):
            j = _step(graph, e, pairs, a, b)[0]
            if j >= 0 and j not in seen:
                seen.add(j)
                ids.append(j)
                scores.append(score)
        items.append(text_item(index, f"path:{p}", "Path", path_text(graph, e, pairs, path), score))
    state.info["paths"] = [list(p) for p in paths]
    state.info["paths_graph"] = name
    if state.items:
        state.items = [it for it in state.items if not it.chunk_id.startswith("path:")]
    add_items(state, items)
    out = Scored(np.asarray(ids, dtype=np.int64), np.asarray(scores, dtype=np.float32), KIND)
    return out if ranked else out.sorted()


def _undirected(graph: Graph) -> sp.csr_matrix:
    a = sp.csr_matrix(graph.adjacency)
    return a if not graph.directed else sp.csr_matrix(a + a.T)


@register_operator
class SubgraphKHopPath(Operator):
    """Paths of at most ``max_hops`` edges joining the seed entities (§6.1 subgraph KhopPath; DALK).

    ``mode="cover"`` is §6.1's loop (:func:`paretorag.kernels.paths.cover_paths`):
    join the first entity left to its nearest other within reach, drop the entities
    on the path, repeat, merge paths contained in longer ones. ``mode="all"`` keeps
    every simple path of at most ``max_hops`` edges between two seeds (DALK's path
    search), at most ``max_paths``, merged the same way.
    """

    name = "subgraph.khoppath"
    kind = "subgraph"
    produces = "subgraph"
    consumes = ("entity",)
    paper = "unified-framework §6.1 subgraph KhopPath, Table 3 (DALK)"

    def __init__(
        self,
        *,
        graph: str = "kg",
        max_hops: int = 2,
        mode: str = "cover",
        max_paths: int = 32,
        source: str = "entity",
    ) -> None:
        self.graph = graph
        self.max_hops = max_hops
        self.mode = mode
        self.max_paths = max_paths
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        hops = check_nonneg_int(self, "max_hops", self.max_hops)
        cap = check_positive_int(self, "max_paths", self.max_paths)
        if self.mode not in ("cover", "all"):
            raise SettingError(type(self).__name__, "mode", self.mode, "be 'cover' or 'all'")
        graph = load_graph(index, self.graph)
        edges_of(graph, self, self.graph)
        s = seeds(state, self.source, graph.n_nodes, "entity").sorted()
        adj = _undirected(graph)
        if self.mode == "cover":
            paths = cover_paths(adj, s.ids, hops)[:cap]
        else:
            paths = merge_paths(k_hop_paths(adj, s.ids, hops, max_paths=cap))
        return emit_paths(index, state, self, graph, paths)


@register_operator
class SubgraphSteiner(Operator):
    """An approximate Steiner tree over the seed entities (§6.1 subgraph Steiner; G-retriever).

    Terminals are the seed entities and, when the state has a ``relations`` result
    (G-retriever retrieves both), the endpoints of those relations. Each edge costs 1
    (``cost="hop"``) or its inverse weight (``cost="inverse_weight"``: strong links
    are short). Each tree edge is one two-node path in ``state.info["paths"]``.
    """

    name = "subgraph.steiner"
    kind = "subgraph"
    produces = "subgraph"
    consumes = ("entity",)
    paper = "unified-framework §6.1 subgraph Steiner, Table 3 (G-retriever); Kou et al. 1981"

    def __init__(
        self,
        *,
        graph: str = "kg",
        method: str = "kou",
        cost: str = "hop",
        source: str = "entity",
        relations: str | None = "relation",
    ) -> None:
        self.graph = graph
        self.method = method
        self.cost = cost
        self.source = source
        self.relations = relations

    def run(self, index: IndexView, state: State) -> Scored:
        if self.method not in ("kou", "mehlhorn"):
            raise SettingError(type(self).__name__, "method", self.method, "be 'kou' or 'mehlhorn'")
        if self.cost not in ("hop", "inverse_weight"):
            raise SettingError(type(self).__name__, "cost", self.cost, "be 'hop' or 'inverse_weight'")
        graph = load_graph(index, self.graph)
        e = edges_of(graph, self, self.graph)
        terminals = [seeds(state, self.source, graph.n_nodes, "entity").ids]
        if self.relations and self.relations in state.results:
            rel = seeds(state, self.relations, len(e), "relation")
            terminals += [e.src[rel.ids], e.dst[rel.ids]]
        adj = sp.csr_matrix(_undirected(graph), dtype=np.float64, copy=True)
        adj.data = np.abs(adj.data)
        adj.eliminate_zeros()
        adj.data = np.ones_like(adj.data) if self.cost == "hop" else 1.0 / adj.data
        tree = steiner_tree(adj, np.concatenate(terminals), method=self.method)  # type: ignore[arg-type]
        return emit_paths(
            index, state, self, graph, [[int(u), int(v)] for u, v in tree.tolist()], ranked=False
        )


@register_operator
class SubgraphAgentPath(Operator):
    """The paths an LLM chooses as relevant (§6.1 subgraph AgentPath; DALK's path reranking).

    Reads ``state.info["paths"]`` (from ``subgraph.khoppath`` or ``subgraph.steiner``
    on the same graph), lists their texts and keeps up to ``n_paths`` the LLM names,
    in its order; replaces ``state.info["paths"]`` and adds the kept paths' texts.
    """

    name = "subgraph.agentpath"
    kind = "subgraph"
    produces = "subgraph"
    consumes = ("subgraph",)
    uses_llm = True
    generative_only = True
    paper = "unified-framework §6.1 subgraph AgentPath, Table 3 (DALK)"

    def __init__(self, *, graph: str = "kg", n_paths: int = 4, max_candidates: int = 30) -> None:
        self.graph = graph
        self.n_paths = n_paths
        self.max_candidates = max_candidates

    def run(self, index: IndexView, state: State) -> Scored:
        n = check_positive_int(self, "n_paths", self.n_paths)
        m = check_positive_int(self, "max_candidates", self.max_candidates)
        if "paths" not in state.info:
            raise ConfigError(
                f"{self.name} filters paths: put subgraph.khoppath (or subgraph.steiner) before it"
            )
        if state.info.get("paths_graph", self.graph) != self.graph:
            raise ConfigError(
                f"{self.name}: the paths come from graph {state.info['paths_graph']!r}, not {self.graph!r}"
            )
        graph = load_graph(index, self.graph)
        e = edges_of(graph, self, self.graph)
        paths = [list(p) for p in state.info["paths"]][:m]
        if not paths:
            return emit_paths(index, state, self, graph, [])
        llm = generative_llm(index, self)
        pairs = _pair_rows(index, self.graph, e)
        picked = choose(
            llm, state.question, "knowledge-graph paths", [path_text(graph, e, pairs, p) for p in paths], n
        )
        return emit_paths(index, state, self, graph, [paths[i] for i in picked])
