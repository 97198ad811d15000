"""Community operators of the unified framework (§6.1, Table 3 "Community" column; App. B.1).

Each returns :class:`~paretorag.types.Scored` rows of the ``graph`` setting's
communities (``Graph.communities``, GraphRAG's Leiden hierarchy), kind
``"community"``, stored under ``"community"``, and appends the reports of the kept
communities to ``state.items`` (keyed ``community:ROW``) within the query's token
budget, best first.

Levels follow GraphRAG's convention: level 0 is the top (coarsest) partition and
each level below splits its parent, so ``level=L`` keeps communities of level ``<= L``.

=================  ===============================================  ====================
operator           what it keeps                                    methods
=================  ===============================================  ====================
community.entity   communities containing the seed entities,        LGraphRAG
                   by rating, top-k
community.layer    every community at level <= ``level``            GGraphRAG (RGraphRAG)
community.vdb      top-k communities by report vector similarity    VGraphRAG (App. B.1)
=================  ===============================================  ====================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError, SettingError
from ...graphs.graph import Graph
from ...kernels.rank import top_k, vector_top_k
from ...types import Scored
from .base import GraphOperator, Operator, check_nonneg_int, check_positive_int, load_graph, register_operator
from .common import add_items, communities_of, query_vector, seeds, text_item

if TYPE_CHECKING:
    from ...graphs.graph import Communities
    from ..query import IndexView, State

KIND = "community"


def _level_ok(c: Communities, level: int | None, owner: Operator) -> np.ndarray:
    if level is None:
        return np.ones(len(c), dtype=bool)
    return np.asarray(c.level) <= check_nonneg_int(owner, "level", level)


def _rating(c: Communities) -> np.ndarray:
    return np.zeros(len(c)) if c.rating is None else np.asarray(c.rating, dtype=np.float64)


def emit_reports(index: IndexView, state: State, c: Communities, scored: Scored) -> Scored:
    """Add the reports of ``scored`` communities to ``state.items`` (budgeted) and return it."""
    items = []
    for row, score in zip(scored.ids.tolist(), scored.scores.tolist(), strict=True):
        report = c.reports[row] if c.reports else ""
        if report:
            title = f"Community {row} (level {int(c.level[row])})"
            items.append(text_item(index, f"community:{row}", title, report, score))
    add_items(state, items)
    return scored


@register_operator
class CommunityEntity(Operator):
    """Communities that contain the seed entities, best rated first (§6.1 community Entity).

    LGraphRAG (GraphRAG local search): every community at level ``<= level`` holding
    at least one seed entity is a candidate; ``order="rating"`` ranks them by report
    rating as §6.1 says, ``order="occurrence"`` by the number of seed entities they
    hold, rating breaking ties (GraphRAG's and nano-graphrag's code). Top ``k`` kept.
    """

    name = "community.entity"
    kind = "community"
    produces = "community"
    consumes = ("entity",)
    paper = "unified-framework §6.1 community Entity, Table 3 (LGraphRAG)"

    def __init__(
        self,
        *,
        graph: str = "communities",
        k: int = 4,
        level: int | None = 2,
        order: str = "rating",
        source: str = "entity",
    ) -> None:
        self.graph = graph
        self.k = k
        self.level = level
        self.order = order
        self.source = source

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        if self.order not in ("rating", "occurrence"):
            raise SettingError(type(self).__name__, "order", self.order, "be 'rating' or 'occurrence'")
        graph = load_graph(index, self.graph)
        c = communities_of(graph, self, self.graph)
        ok = _level_ok(c, self.level, self)
        s = seeds(state, self.source, graph.n_nodes, "entity")
        if not len(s):
            return Scored.empty(KIND)
        members = c.members.tocsc()[:, np.unique(s.ids)]
        count = np.asarray((members != 0).sum(axis=1)).ravel().astype(np.float64)
        rows = np.flatnonzero((count > 0) & ok)
        rating = _rating(c)
        if self.order == "rating":
            score = rating if c.rating is not None else count
        else:  # integer counts first; a rating scaled into [0, 1) breaks ties
            span = float(np.abs(rating).max()) + 1.0 if rating.size else 1.0
            score = count + (rating + span) / (2.0 * span + 1.0)
        return emit_reports(index, state, c, top_k(score[rows], k, KIND, rows=rows))


@register_operator
class CommunityLayer(Operator):
    """Every community at level ``<= level`` (§6.1 community Layer; GraphRAG global search).

    Ranked by rating (then row); communities rated below ``min_rating`` are dropped
    and at most ``k`` kept (GraphRAG's ``global_max_consider_community``, 512).
    """

    name = "community.layer"
    kind = "community"
    produces = "community"
    paper = "unified-framework §6.1 community Layer, Table 3 (RGraphRAG / GGraphRAG)"

    def __init__(
        self, *, graph: str = "communities", level: int = 2, k: int = 512, min_rating: float = 0.0
    ) -> None:
        self.graph = graph
        self.level = level
        self.k = k
        self.min_rating = min_rating

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        if isinstance(self.min_rating, bool) or not isinstance(self.min_rating, int | float):
            raise SettingError(type(self).__name__, "min_rating", self.min_rating, "be a number")
        graph = load_graph(index, self.graph)
        c = communities_of(graph, self, self.graph)
        rating = _rating(c)
        rows = np.flatnonzero(_level_ok(c, self.level, self) & (rating >= float(self.min_rating)))
        return emit_reports(index, state, c, top_k(rating[rows], k, KIND, rows=rows))


@register_operator
class CommunityVDB(GraphOperator):
    """Top-k communities by similarity of their report vectors to the query (App. B.1; VGraphRAG).

    The new community operator of the unified framework (§6.2, Exp. 5): vector search
    over ``Communities.vectors`` (each report's embedding), optionally restricted to
    levels ``<= level``.
    """

    name = "community.vdb"
    kind = "community"
    produces = "community"
    paper = "unified-framework App. B.1 (community VDB), §7.3 Exp. 5, Table 9 (VGraphRAG)"

    def __init__(
        self, *, graph: str = "communities", k: int = 4, level: int | None = None, query: str = "question"
    ) -> None:
        self.graph = graph
        self.k = k
        self.level = level
        self.query = query

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        c = communities_of(graph, self, self.graph)
        if c.vectors is None:
            raise ConfigError(
                f"{self.name}: the communities of {self.graph!r} have no report vectors; rebuild it"
            )
        q = query_vector(index, state, self.query, self)
        if q is None:
            return Scored.empty(KIND)
        rows = np.flatnonzero(_level_ok(c, self.level, self))
        return emit_reports(index, state, c, vector_top_k(c.vectors, q, k, KIND, candidates=rows))
