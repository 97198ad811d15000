"""G2ConS operators (papers/g2cons.txt §3.2, §3.2.1): PageRank, core chunks, local
search, token budget, dual-path ensemble."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from paretorag.errors import ConfigError
from paretorag.graphs.concepts import chunk_scores, select_core
from paretorag.graphs.graph import Graph
from paretorag.kernels import pagerank
from paretorag.retrieval.operators.concepts import (
    Pick,
    concept_expansion,
    concept_local_search,
    concept_search,
    dual_path_ensemble,
    global_rerank,
    local_rerank,
    take_within_budget,
)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("directed", [False, True])
def test_pagerank_matches_networkx(seed: int, directed: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.15)
    np.fill_diagonal(dense, 0)
    if not directed:
        dense = np.triu(dense) + np.triu(dense).T
    dense[rng.integers(0, n, 2)] = 0  # dangling / isolated nodes
    if not directed:
        dense[:, :] = np.minimum(dense, dense.T)
    adj = sp.csr_matrix(dense)
    graph = nx.from_scipy_sparse_array(adj, create_using=nx.DiGraph)
    ref = nx.pagerank(graph, alpha=0.85, weight="weight", tol=1e-12, max_iter=2000)
    ours = pagerank(adj, damping=0.85)
    np.testing.assert_allclose(ours, [ref[i] for i in range(n)], atol=1e-9)
    assert ours.sum() == pytest.approx(1.0)


def test_pagerank_edge_cases() -> None:
    assert pagerank(sp.csr_matrix((0, 0))).size == 0
    np.testing.assert_allclose(pagerank(sp.csr_matrix((3, 3))), [1 / 3] * 3)
    with pytest.raises(ConfigError, match="damping"):
        pagerank(sp.csr_matrix((2, 2)), damping=1.0)


def test_chunk_scores_and_core_selection() -> None:
    chunk_concepts = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]], dtype=np.float32))
    pr = np.array([0.5, 0.3, 0.2])
    np.testing.assert_allclose(chunk_scores(chunk_concepts, pr, "sum"), [0.8, 0.3, 0.0, 0.2])
    np.testing.assert_allclose(chunk_scores(chunk_concepts, pr, "max"), [0.5, 0.3, 0.0, 0.2])
    np.testing.assert_allclose(chunk_scores(chunk_concepts, pr, "mean"), [0.4, 0.3, 0.0, 0.2])
    scores = chunk_scores(chunk_concepts, pr)
    assert select_core(scores, 0.8).tolist() == [0, 1, 3, 2]  # ceil(0.8 * 4) = 4
    assert select_core(scores, 0.5).tolist() == [0, 1]
    assert select_core(scores, 0.0).tolist() == []
    with pytest.raises(ConfigError, match="kappa"):
        select_core(scores, 1.5)
    assert select_core(scores, 0.75).tolist() == [0, 1, 3]


def graph() -> Graph:
    # concepts 0..4 in 2-d; chain 0-1-2-3 and isolated 4
    vectors = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0], [0.6, 0.8]], dtype=np.float32)
    adjacency = sp.csr_matrix(
        (np.ones(6, np.float32), ([0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2])), shape=(5, 5)
    )
    # concept -> chunks (6 chunks)
    concept_chunks = sp.csr_matrix(
        np.array(
            [
                [1, 1, 0, 0, 0, 0],
                [0, 1, 1, 0, 0, 0],
                [0, 0, 0, 1, 0, 0],
                [0, 0, 0, 0, 1, 0],
                [0, 0, 0, 0, 0, 1],
            ],
            dtype=np.float32,
        )
    )
    names = [f"c{i}" for i in range(5)]
    return Graph(names, ["concept"] * 5, adjacency, concept_chunks, node_vectors=vectors)


def test_concept_search_and_bfs() -> None:
    g = graph()
    top = concept_search(np.array([1, 0], np.float32), g.node_vectors, 2)
    assert top.ids.tolist() == [0, 1] and top.kind == "concept"
    exp = concept_expansion(top.ids, g.adjacency, 2)
    assert exp.ids.tolist() == [2, 3] and exp.scores.tolist() == [1.0, 0.5]
    assert concept_expansion(np.array([4]), g.adjacency, 1).ids.size == 0
    assert len(concept_expansion(top.ids, g.adjacency, 0)) == 0
    assert concept_search(np.array([1, 0], np.float32), g.node_vectors, 10).ids.size == 5


def test_local_then_global_rerank_order() -> None:
    g = graph()
    sims = np.array([0.1, 0.5, 0.9, 0.2, 0.95, 0.3], np.float32)
    # local: concept 1 first (chunks 2 then 1), then concept 0 (chunk 1 seen, chunk 0)
    assert local_rerank(np.array([1, 0]), g.node_chunks, sims).tolist() == [2, 1, 0]
    assert global_rerank(np.array([0, 1, 2, 3]), g.node_chunks, sims).tolist() == [4, 2, 1, 3, 0]
    assert global_rerank(np.array([0, 3]), g.node_chunks, sims, exclude=np.array([0])).tolist() == [4, 1]
    tokens = np.full(6, 10, np.int64)
    rows, direct, expanded = concept_local_search(
        np.array([1, 0], np.float32), g, sims, tokens, 1000, k=2, hops=2
    )
    # direct concepts 0, 1 -> local: concept 0 first (cos 1): chunks 1 (0.5), 0 (0.1);
    # concept 1: chunk 2; then global over chunks of 0..3 not yet placed: 4 (0.95), 3 (0.2)
    assert direct.ids.tolist() == [0, 1] and expanded.ids.tolist() == [2, 3]
    assert rows.tolist() == [1, 0, 2, 4, 3]
    naive, _, _ = concept_local_search(
        np.array([1, 0], np.float32), g, sims, tokens, None, k=2, hops=2, rerank="naive"
    )
    assert naive.tolist() == [4, 2, 1, 3, 0]
    with pytest.raises(ConfigError, match="rerank"):
        concept_local_search(np.array([1, 0], np.float32), g, sims, tokens, None, rerank="bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(20))
def test_budget_never_exceeded(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 50
    tokens = rng.integers(1, 400, n).astype(np.int64)
    rows = rng.permutation(n)
    budget = int(rng.integers(1, 5000))
    kept = take_within_budget(rows, tokens, budget)
    assert tokens[kept].sum() <= budget
    assert kept.tolist() == rows[: kept.size].tolist()  # a prefix: retrieval stops (§3.2.1)
    if kept.size < n:
        assert tokens[kept].sum() + tokens[rows[kept.size]] > budget
    # the full local search too
    g = graph()
    sims = rng.random(6).astype(np.float32)
    t6 = rng.integers(1, 50, 6).astype(np.int64)
    found, _, _ = concept_local_search(
        rng.normal(size=2).astype(np.float32), g, sims, t6, int(rng.integers(1, 120)), k=3
    )
    assert len(set(found.tolist())) == found.size


def test_ensemble_order_with_overlaps() -> None:
    concept = [10, 11, 12, 13, 14]
    second = [20, 12, 21, 10, -1, 22]
    picks = dual_path_ensemble(concept, [10] * 5, second, [10] * 6, budget=1000, lam=0.6)
    # shared: 10 (ranks 0 + 3 = 3) and 12 (2 + 1 = 3, second rank 1 first) -> 12, 10
    assert picks[:2] == [Pick("both", 1), Pick("both", 3)]
    assert [p.index for p in picks if p.path == "second"] == [0, 2, 4, 5]
    assert [p.index for p in picks if p.path == "concept"] == [1, 3, 4]
    assert len(picks) == 9  # every distinct entry once


@pytest.mark.parametrize("seed", range(20))
def test_ensemble_quotas_and_budget(seed: int) -> None:
    rng = np.random.default_rng(seed)
    concept = rng.choice(40, 15, replace=False).tolist()
    second = [*rng.choice(40, 15, replace=False).tolist(), -1, -1]
    tokens = {r: int(rng.integers(1, 300)) for r in range(40)}
    ct = [tokens[r] for r in concept]
    st = [tokens[r] if r >= 0 else 50 for r in second]
    budget = int(rng.integers(100, 3000))
    lam = float(rng.uniform(0.1, 0.9))
    picks = dual_path_ensemble(concept, ct, second, st, budget, lam=lam)
    cost = {"both": 0, "second": 0, "concept": 0}
    rows: list[int] = []
    for p in picks:
        t = ct[p.index] if p.path == "concept" else st[p.index]
        cost[p.path] += t
        r = concept[p.index] if p.path == "concept" else second[p.index]
        if r >= 0:
            rows.append(r)
    assert sum(cost.values()) <= budget
    rest = budget - cost["both"]
    assert cost["second"] <= lam * rest + 1e-9
    assert cost["concept"] <= (1 - lam) * rest + 1e-9
    assert len(rows) == len(set(rows))
    order = [p.path for p in picks]
    assert order == sorted(order, key=["both", "second", "concept"].index)


def test_ensemble_validates() -> None:
    with pytest.raises(ConfigError, match="lam"):
        dual_path_ensemble([], [], [], [], 10, lam=2.0)
    with pytest.raises(ConfigError, match="token count"):
        dual_path_ensemble([1], [], [], [], 10)
