"""Node operators of the unified framework (§6.1, Table 3 "Node" column).

Each returns :class:`~paretorag.types.Scored` rows of its ``graph`` setting's nodes,
kind ``"entity"``, stored under ``"entity"``. Seeds are read from the state's
``source`` result (default ``"entity"``, what an earlier node step produced).

=============  ==================================================  =====================
operator       what it keeps                                       Table 3 methods
=============  ==================================================  =====================
node.vdb       top-k nodes by vector similarity                    RAPTOR, G-retriever,
                                                                   FastGraphRAG, LGraphRAG,
                                                                   L/HLightRAG
node.relnode   the nodes of the given relations                    G/HLightRAG (FromRel)
node.ppr       personalized PageRank from the seeds, top-k         HippoRAG, FastGraphRAG
node.agent     the nodes an LLM chooses among the seeds            ToG, DALK
node.onehop    one-hop neighbours of the seeds                     ToG, DALK
node.link      the nearest node of each question term              HippoRAG, ToG, DALK,
                                                                   FastGraphRAG
node.tfidf     top-k passages by TF-IDF of the question            KGP
=============  ==================================================  =====================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError, SettingError
from ...kernels.bfs import bfs_levels
from ...kernels.pagerank import pagerank, transition
from ...kernels.rank import top_k, vector_top_k
from ...kernels.tfidf import transform
from ...storage.structures import unpack_texts
from ...types import FloatArray, Scored
from .agent import Agent
from .base import (
    GraphOperator,
    Operator,
    check_fraction,
    check_k,
    check_positive_int,
    load_graph,
    register_operator,
)
from .common import (
    best,
    edges_of,
    node_text,
    query_vector,
    seed_vector,
    seeds,
)

if TYPE_CHECKING:
    from ...graphs.graph import Graph
    from ..query import IndexView, State

KIND = "entity"


def _node_vectors(graph: Graph, op: Operator, name: str) -> FloatArray:
    if graph.node_vectors is None:
        raise ConfigError(
            f"{op.name}: structure {name!r} has no node vectors (the node index of §5); rebuild it"
        )
    return graph.node_vectors


@register_operator
class NodeVDB(GraphOperator):
    """Top-k nodes by inner product with the query vector (§6.1 node VDB; Table 3).

    Parameters
    ----------
    graph : str
        Structure whose ``node_vectors`` are searched ("tkg"; "raptor_tree" for RAPTOR).
    k : int
        Nodes kept (4).
    query : {"question", "terms", "keywords"}
        What is embedded: the question (default), or the extracted terms joined
        (LightRAG's low-level keywords) or the high-level keywords.
    """

    name = "node.vdb"
    kind = "node"
    produces = "entity"
    paper = "unified-framework §5 (node index), §6.1 node VDB, Table 3"

    def __init__(self, *, graph: str = "tkg", k: int = 4, query: str = "question") -> None:
        self.graph = graph
        self.k = k
        self.query = query

    def search(self, index: IndexView, state: State, graph: Graph, k: int) -> Scored:
        vectors = _node_vectors(graph, self, self.graph)
        q = query_vector(index, state, self.query, self)
        return Scored.empty(KIND) if q is None else vector_top_k(vectors, q, k, KIND)


@register_operator
class NodeRelNode(GraphOperator):
    """The nodes of the given relations (§6.1 node RelNode; LightRAG global's entities).

    A node scores the best score of the relations it belongs to; all are kept unless
    ``k`` is set.
    """

    name = "node.relnode"
    kind = "node"
    produces = "entity"
    consumes = ("relation",)
    paper = "unified-framework §6.1 node RelNode, Table 3 (GLightRAG, HLightRAG)"

    all_k = True

    def __init__(self, *, graph: str = "rkg", k: int | None = None, source: str = "relation") -> None:
        self.graph = graph
        self.k = k
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int | None) -> Scored:
        e = edges_of(graph, self, self.graph)
        rel = seeds(state, self.source, len(e), "relation")
        if not len(rel):
            return Scored.empty(KIND)
        score = np.full(graph.n_nodes, -np.inf)
        np.maximum.at(score, e.src[rel.ids], rel.scores.astype(np.float64))
        np.maximum.at(score, e.dst[rel.ids], rel.scores.astype(np.float64))
        rows = np.flatnonzero(np.isfinite(score))
        return best(score[rows], rows, k, KIND)


@register_operator
class NodePPR(Operator):
    """Personalized PageRank seeded from the seed scores, top-k (§6.1 node PPR).

    HippoRAG and FastGraphRAG: the restart probability of each node is its seed
    score (negative scores count as zero); damping 0.5 as in HippoRAG's released
    code. ``k=None`` keeps every node with a positive score (what the relation
    Aggregator sums over). ``source`` may name several results, whose scores are
    summed into one restart vector (FastGraphRAG: Link and VDB).

    With ``specificity`` (HippoRAG §3.2, "node specificity"), each seed's restart
    probability is multiplied by ``s_i = 1 / |P_i|``, ``P_i`` the chunks the node occurs
    in, so a question term linked to a hub ("film", "director") restarts little and a
    rare name restarts much: HippoRAG's IDF-like signal, computed from the graph alone.
    """

    name = "node.ppr"
    kind = "node"
    produces = "entity"
    consumes = ("entity",)
    paper = "unified-framework §6.1 node PPR, Table 3 (HippoRAG, FastGraphRAG); HippoRAG §3.2"

    def __init__(
        self,
        *,
        graph: str = "kg",
        k: int | None = 4,
        damping: float = 0.5,
        source: str | Sequence[str] = "entity",
        specificity: bool = False,
    ) -> None:
        self.graph = graph
        self.k = k
        self.damping = damping
        self.source = source
        self.specificity = specificity

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_k(self, "k", self.k)
        damping = check_fraction(self, "damping", self.damping, closed=False)
        if not isinstance(self.specificity, bool):
            raise SettingError(type(self).__name__, "specificity", self.specificity, "be True or False")
        graph = load_graph(index, self.graph)
        p = np.clip(seed_vector(state, self.source, graph.n_nodes, KIND), 0.0, None)
        if self.specificity:
            p = p * index.cached(f"specificity:{self.graph}", lambda: _specificity(graph))
        if not p.sum() > 0:
            return Scored.empty(KIND)
        t = index.cached(f"transition:{self.graph}", lambda: transition(graph.adjacency))
        scores = pagerank(None, damping=damping, personalization=p, transition_t=t)
        rows = np.flatnonzero(scores > 0)
        return best(scores[rows], rows, k, KIND)


def _specificity(graph: Graph) -> FloatArray:
    """HippoRAG's node specificity ``1 / |P_i|`` (HippoRAG §3.2); 1 for a node in no chunk."""
    n_chunks = np.diff(graph.node_chunks.indptr).astype(np.float64)
    out: FloatArray = 1.0 / np.maximum(n_chunks, 1.0)
    return out


@register_operator
class NodeAgent(Agent):
    """The seed nodes an LLM chooses as useful for the question (§6.1 node Agent; ToG).

    The best ``max_candidates`` seeds are listed (name and description) and the LLM
    names up to ``k`` of them (ToG's beam width, 3); scores follow its order.
    """

    name = "node.agent"
    kind = "node"
    produces = "entity"
    consumes = ("entity",)
    paper = "unified-framework §6.1 node Agent, Table 3 (ToG, DALK); ToG §2.2 (entity pruning)"

    def __init__(
        self, *, graph: str = "kg", k: int = 3, max_candidates: int = 30, source: str = "entity"
    ) -> None:
        self.graph = graph
        self.k = k
        self.max_candidates = max_candidates
        self.source = source

    def count(self, graph: Graph) -> int:
        return graph.n_nodes

    def listing(self, index: IndexView, graph: Graph, rows: np.ndarray) -> tuple[list[str], str]:
        texts = [
            f"{index.chunks.titles[int(r)]}: {index.chunks.texts[int(r)][:600]}"
            if graph.kinds[int(r)] == "passage"  # a passage-graph node is its chunk (KGP)
            else node_text(graph, int(r))
            for r in rows
        ]
        return texts, "passages" if texts and graph.kinds[int(rows[0])] == "passage" else "entities"


@register_operator
class NodeOneHop(GraphOperator):
    """One-hop neighbours of the seed nodes (§6.1 node Onehop; ToG, DALK).

    A neighbour scores the summed edge weight to the seeds; seeds are left out
    unless ``include_seeds``. All are kept unless ``k`` is set.
    """

    name = "node.onehop"
    kind = "node"
    produces = "entity"
    consumes = ("entity",)
    paper = "unified-framework §6.1 node Onehop, Table 3 (ToG, DALK)"

    all_k = True

    def __init__(
        self, *, graph: str = "kg", k: int | None = None, include_seeds: bool = False, source: str = "entity"
    ) -> None:
        self.graph = graph
        self.k = k
        self.include_seeds = include_seeds
        self.source = source

    def search(self, index: IndexView, state: State, graph: Graph, k: int | None) -> Scored:
        s = seeds(state, self.source, graph.n_nodes, KIND)
        if not len(s):
            return Scored.empty(KIND)
        adj = sp.csr_matrix(graph.adjacency)
        sym = adj if not graph.directed else sp.csr_matrix(adj + adj.T)
        rows, _ = bfs_levels(sym, s.ids, 1)
        if self.include_seeds:
            rows = np.unique(np.concatenate([rows, s.ids]))
        weight = np.asarray(abs(sym[np.unique(s.ids)]).sum(axis=0)).ravel()
        return best(weight[rows], rows, k, KIND)


@register_operator
class NodeLink(Operator):
    """The most similar node of each question term (§6.1 node Link; HippoRAG's query linking).

    Embeds ``state.terms`` (from a ``question.terms`` or ``question.keywords`` step)
    and keeps, for each term, the top-1 node by cosine over ``node_vectors``; a node
    linked by several terms keeps its best similarity.
    """

    name = "node.link"
    kind = "node"
    produces = "entity"
    paper = "unified-framework §6.1 node Link, Table 3 (HippoRAG, ToG, DALK, FastGraphRAG); HippoRAG §3.2"

    def __init__(self, *, graph: str = "kg") -> None:
        self.graph = graph

    def run(self, index: IndexView, state: State) -> Scored:
        graph = load_graph(index, self.graph)
        vectors = _node_vectors(graph, self, self.graph)
        if state.terms is None:
            raise ConfigError(f"{self.name} links the question's terms: put a question.terms step before it")
        if not state.terms or vectors.shape[0] == 0:
            return Scored.empty(KIND)
        sims = np.asarray(index.embed(list(state.terms)), dtype=np.float32) @ vectors.T
        top = np.argmax(sims, axis=1)  # first best row on ties
        score: dict[int, float] = {}
        for t, row in enumerate(top.tolist()):
            score[row] = max(score.get(row, -np.inf), float(sims[t, row]))
        rows = np.fromiter(score, dtype=np.int64, count=len(score))
        return top_k(
            np.fromiter(score.values(), dtype=np.float64, count=len(score)), rows.size, KIND, rows=rows
        )


def _tfidf(index: IndexView, name: str) -> tuple[sp.csr_matrix, dict[str, int], np.ndarray]:
    """The passage graph's TF-IDF matrix (nodes x terms), vocabulary map and idf, loaded once."""

    def load() -> tuple[sp.csr_matrix, dict[str, int], np.ndarray]:
        a = index.structure(name).arrays
        need = (
            "tfidf_indptr",
            "tfidf_indices",
            "tfidf_data",
            "tfidf_vocab_utf8",
            "tfidf_vocab_offsets",
            "tfidf_idf",
        )
        missing = [x for x in need if x not in a]
        if missing:
            raise ConfigError(
                f"node.tfidf: structure {name!r} has no TF-IDF matrix (missing {', '.join(missing)}); "
                "use graph='passage_graph' or rebuild it"
            )
        vocab = unpack_texts(a["tfidf_vocab_utf8"], a["tfidf_vocab_offsets"])
        idf = np.asarray(a["tfidf_idf"], dtype=np.float64)
        indptr = np.asarray(a["tfidf_indptr"], dtype=np.int64)
        m = sp.csr_matrix((a["tfidf_data"], a["tfidf_indices"], indptr), shape=(indptr.size - 1, len(vocab)))
        return m, {t: j for j, t in enumerate(vocab)}, idf

    out: tuple[sp.csr_matrix, dict[str, int], np.ndarray] = index.cached(f"tfidf:{name}", load)
    return out


@register_operator
class NodeTFIDF(Operator):
    """Top-k passage-graph nodes by TF-IDF cosine with the question (§6.1 node TF-IDF; KGP).

    Reads the passage graph's arrays ``tfidf_indptr/indices/data`` (nodes x terms,
    rows L2-normalized), ``tfidf_vocab_utf8/offsets`` and ``tfidf_idf``, as written
    from :func:`paretorag.kernels.tfidf.fit_tfidf`; nodes with no shared term are
    never returned.
    """

    name = "node.tfidf"
    kind = "node"
    produces = "entity"
    paper = "unified-framework §5 (TF-IDF node index), §6.1 node TF-IDF, Table 3 (KGP)"

    def __init__(self, *, graph: str = "passage_graph", k: int = 4) -> None:
        self.graph = graph
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        k = check_positive_int(self, "k", self.k)
        m, vocab, idf = _tfidf(index, self.graph)
        q = transform([state.question], vocab, idf)
        scores = np.asarray((m @ q.T).toarray()).ravel()
        rows = np.flatnonzero(scores > 0)
        return top_k(scores[rows], k, KIND, rows=rows)
