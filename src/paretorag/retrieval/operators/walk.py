"""A walk over the passage-entity graph that starts from a passage ranking (``chunk.entity_walk``).

The graph is bipartite: passages on one side, the entities they mention on the other
(any structure whose :class:`~paretorag.graphs.graph.Graph` has ``node_chunks``; by default
E2GraphRAG's ``entity_graph``, spaCy entities and nouns, no LLM). A passage-to-entity
edge weighs the entity's inverse document frequency ``log((N + 1) / (df + 1))``, so a
walk leaves a passage mostly through its rare names (a person, a film title) rather
than through "film" or "county"; an entity found in a single passage links nothing and
is left out. Personalized PageRank (damping 0.5, HippoRAG 2's) restarts at the best
passages of an earlier ranking, weighted by how far each one's score stands above the
first passage left out, raised to ``prior_power``; passages are ranked by their PPR
mass. A bridge passage that shares a rare entity with two of the restart passages
gathers mass from both, which is how the walk finds the second hop that a dense
ranking misses.

It follows HippoRAG 2's PPR over phrase and passage nodes with a dense passage prior
(EA-GraphRAG §3.4.2, Eq. 6-7), with the seeds taken from the dense ranking itself
instead of from LLM or spaCy facts, which are noisy offline (README, "hipporag2").
Settings were chosen on the musique_train and hotpotqa_train splits only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError
from ...kernels.pagerank import pagerank, transition
from ...kernels.rank import top_k
from ...params import check_nonneg_number
from ...types import Scored
from .base import Operator, check_fraction, check_positive_int, load_graph, register_operator

if TYPE_CHECKING:
    from ...graphs.graph import Graph
    from ..query import IndexView, State


def idf_bipartite(graph: Graph) -> sp.csr_matrix:
    """Passages x entities, ``B[c, e] = idf(e) = log((N + 1) / (df + 1))`` where ``e`` occurs in ``c``.

    Entities in a single passage get weight 0 (they would only send the walk back).
    """
    occ = sp.csr_matrix(graph.node_chunks, dtype=np.float64).T.tocsr()  # passages x entities
    occ.data[:] = 1.0
    n_passages = occ.shape[0]
    df = np.asarray(occ.sum(axis=0)).ravel()
    idf = np.where(df > 1, np.log((n_passages + 1.0) / (df + 1.0)), 0.0)
    b = sp.csr_matrix(occ @ sp.diags(idf))
    b.eliminate_zeros()
    return b


def idf_bipartite_transition(graph: Graph) -> tuple[sp.csr_matrix, np.ndarray]:
    """PPR transition of ``[[0, B], [B^T, 0]]``, passages first (:func:`idf_bipartite`)."""
    b = idf_bipartite(graph)
    return transition(sp.bmat([[None, b], [b.T, None]], format="csr"))


def local_walk(
    b: sp.csr_matrix, b_t: sp.csr_matrix, restart: dict[int, float], damping: float, hub_df: int
) -> tuple[np.ndarray, np.ndarray]:
    """The walk on the neighbourhood of the restart passages only: (passage rows, PPR mass).

    The subgraph holds the restart passages, every passage sharing an entity with them
    (the bridge candidates), and the entities that link two or more of those passages.
    Entities in more than ``hub_df`` passages are left out: each of their passages would
    get a negligible share of the walk, and they would pull in most of the corpus. The
    walk's cost then depends on the restart passages' neighbourhood, not on the corpus.
    """
    df = np.diff(b_t.indptr)
    seeds = np.fromiter(restart, dtype=np.int64)
    e1 = np.unique(b[seeds].indices)
    e1 = e1[df[e1] <= hub_df]
    passages = np.union1d(seeds, b_t[e1].indices)
    ents, counts = np.unique(b[passages].indices, return_counts=True)
    ents = ents[(counts >= 2) & (df[ents] <= hub_df)]
    sub = sp.csr_matrix(b[passages][:, ents])
    t = transition(sp.bmat([[None, sub], [sub.T, None]], format="csr"))
    p = np.zeros(passages.size + ents.size)
    p[np.searchsorted(passages, seeds)] = [restart[int(i)] for i in seeds]
    mass = pagerank(None, damping=damping, personalization=p, transition_t=t)[: passages.size]
    return passages, mass


SOLVERS = ("auto", "exact", "local")
AUTO_LOCAL_NODES = 200_000  # "auto" walks the whole graph below this many nodes


@register_operator
class ChunkEntityWalk(Operator):
    """Passages ranked by a PPR walk over the passage-entity graph from the ``source`` ranking.

    Parameters
    ----------
    graph : str
        A structure with passage occurrences (``entity_graph``).
    source : str
        The result whose best passages restart the walk (a ``chunk.vdb`` step).
    k : int
        Passages returned (5).
    damping : float
        Probability of following an edge (0.5, HippoRAG 2's).
    prior_top : int
        How many of the source's best passages restart the walk (5).
    prior_power : float
        Restart weight = (score - score of passage ``prior_top + 1``) ** ``prior_power`` (2).
    solver : {"auto", "exact", "local"}
        ``exact``: power iteration over the whole graph. ``local``: over the restart
        passages' neighbourhood only (:func:`local_walk`), whose cost does not grow with
        the corpus. ``auto`` (default): exact below ``AUTO_LOCAL_NODES`` graph nodes.
    hub_df : int
        ``local`` leaves out entities found in more than this many passages (1000).
    """

    name = "chunk.entity_walk"
    kind = "chunk"
    produces = "chunk"
    consumes = ("chunk",)
    paper = "ea-graphrag §3.4.2 Eq. 6-7 (PPR with a dense passage prior); restart from the dense ranking, IDF edges"

    def __init__(
        self,
        *,
        graph: str = "entity_graph",
        source: str = "dense",
        k: int = 5,
        damping: float = 0.5,
        prior_top: int = 5,
        prior_power: float = 2.0,
        solver: str = "auto",
        hub_df: int = 1000,
    ) -> None:
        self.graph = graph
        self.source = source
        self.k = k
        self.damping = damping
        self.prior_top = prior_top
        self.prior_power = prior_power
        self.solver = solver
        self.hub_df = hub_df

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        damping = check_fraction(self, "damping", self.damping, closed=False)
        top = check_positive_int(self, "prior_top", self.prior_top)
        p = check_nonneg_number(self, "prior_power", self.prior_power, "default 2")
        ranked = state.get(self.source)
        if not len(ranked):
            return ranked
        graph = load_graph(index, self.graph)
        n_passages = graph.node_chunks.shape[1]
        ids, scores = ranked.ids[:top], np.asarray(ranked.scores[:top], dtype=np.float64)
        floor = float(ranked.scores[top]) if len(ranked) > top else float(scores.min()) - 1e-3
        weights = np.clip(scores - floor, 1e-6, None) ** p
        if self.solver not in SOLVERS:
            raise ConfigError(f"ChunkEntityWalk.solver must be one of {SOLVERS}, got {self.solver!r}")
        hub_df = check_positive_int(self, "hub_df", self.hub_df)
        local = self.solver == "local" or (
            self.solver == "auto" and n_passages + graph.n_nodes >= AUTO_LOCAL_NODES
        )
        if local:
            b = index.cached(f"bipartite:entity_walk:{self.graph}", lambda: idf_bipartite(graph))
            b_t = index.cached(f"bipartite_t:entity_walk:{self.graph}", lambda: sp.csr_matrix(b.T))
            restart = {int(i): float(w) for i, w in zip(ids, weights, strict=True)}
            rows, mass = local_walk(b, b_t, restart, damping, hub_df)
            keep = mass > 0
            return top_k(mass[keep], k, "chunk", rows=rows[keep])
        restart_v = np.zeros(n_passages + graph.n_nodes)
        restart_v[ids] = weights
        t = index.cached(f"transition:entity_walk:{self.graph}", lambda: idf_bipartite_transition(graph))
        full = pagerank(None, damping=damping, personalization=restart_v, transition_t=t)[:n_passages]
        nz = np.flatnonzero(full > 0)
        return top_k(full[nz], k, "chunk", rows=nz)


__all__ = ["ChunkEntityWalk", "idf_bipartite", "idf_bipartite_transition", "local_walk"]
