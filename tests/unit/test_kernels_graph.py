"""Graph kernels against trusted references: networkx (PageRank, Steiner trees, paths), scikit-learn (TF-IDF)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from networkx.algorithms.approximation import steiner_tree as nx_steiner_tree

from paretorag.errors import ConfigError
from paretorag.kernels import (
    cover_paths,
    fit_tfidf,
    k_hop_paths,
    merge_paths,
    pagerank,
    shortest_path,
    steiner_tree,
    transform,
    transition,
    tree_weight,
)


def _random_graph(
    seed: int, n_lo: int = 5, n_hi: int = 40, p: float = 0.15, directed: bool = False
) -> nx.Graph:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_lo, n_hi))
    g = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    for u, v in g.edges:
        g[u][v]["weight"] = float(rng.uniform(0.1, 10.0))
    return g


# -- personalized PageRank ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("directed", [False, True])
def test_personalized_pagerank_matches_networkx(seed: int, directed: bool) -> None:
    g = _random_graph(seed, 6, 30, 0.2, directed)
    n = g.number_of_nodes()
    rng = np.random.default_rng(100 + seed)
    pers = np.zeros(n)
    pers[rng.choice(n, size=3, replace=False)] = rng.uniform(0.1, 2.0, size=3)
    adj = nx.to_scipy_sparse_array(g, nodelist=range(n), weight="weight")
    for damping in (0.5, 0.85):
        ref = nx.pagerank(
            g, alpha=damping, personalization=dict(enumerate(pers)), weight="weight", tol=1e-13, max_iter=5000
        )
        ours = pagerank(adj, damping=damping, personalization=pers, tol=1e-14, max_iter=5000)
        np.testing.assert_allclose(ours, [ref[i] for i in range(n)], atol=1e-8)
        # the precomputed transition gives the same scores
        again = pagerank(
            None,
            damping=damping,
            personalization=pers,
            tol=1e-14,
            max_iter=5000,
            transition_t=transition(adj),
        )
        np.testing.assert_allclose(again, ours, atol=1e-12)


def test_personalized_pagerank_rejects_bad_seeds() -> None:
    adj = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    with pytest.raises(ConfigError, match="all zero"):
        pagerank(adj, personalization=[0, 0])
    with pytest.raises(ConfigError, match="non-negative"):
        pagerank(adj, personalization=[1, -1])


# -- Steiner trees ---------------------------------------------------------------------
@pytest.mark.parametrize("method", ["kou", "mehlhorn"])
@pytest.mark.parametrize("seed", range(40))
def test_steiner_tree_matches_networkx_weight(seed: int, method: str) -> None:
    g = _random_graph(seed)
    n = g.number_of_nodes()
    comp = max(nx.connected_components(g), key=len)
    if len(comp) < 3:
        pytest.skip("graph too sparse for this seed")
    rng = np.random.default_rng(seed)
    terms = rng.choice(sorted(comp), size=min(len(comp), int(rng.integers(2, 7))), replace=False)
    adj = nx.to_scipy_sparse_array(g, nodelist=range(n), weight="weight")
    ours = steiner_tree(adj, terms, method=method)  # type: ignore[arg-type]
    ref = nx_steiner_tree(g.subgraph(comp), [int(t) for t in terms], weight="weight", method=method)
    assert tree_weight(adj, ours) == pytest.approx(ref.size(weight="weight"), abs=1e-9)
    # a tree that spans every terminal, whose leaves are terminals
    tree = nx.Graph([tuple(e) for e in ours.tolist()])
    assert nx.is_tree(tree) and set(terms.tolist()) <= set(tree.nodes)
    assert all(tree.degree(x) > 1 or x in set(terms.tolist()) for x in tree.nodes)
    assert all(g.has_edge(u, v) for u, v in ours.tolist())


def test_steiner_tree_small_cases() -> None:
    # a star: centre 0 joins the leaves 1, 2, 3 more cheaply than the ring 1-2-3
    w = {(0, 1): 1.0, (0, 2): 1.0, (0, 3): 1.0, (1, 2): 3.0, (2, 3): 3.0, (1, 3): 3.0}
    rows, cols = zip(*w, strict=True)
    adj = sp.csr_matrix((list(w.values()), (rows, cols)), shape=(4, 4))
    for method in ("kou", "mehlhorn"):
        assert steiner_tree(adj, [1, 2, 3], method=method).tolist() in (
            [[0, 1], [0, 2], [0, 3]],
            [[1, 2], [2, 3]],
        )
    assert steiner_tree(adj, [2]).shape == (0, 2)
    # two components: a forest
    adj2 = sp.csr_matrix(([1.0, 1.0], ([0, 2], [1, 3])), shape=(4, 4))
    assert steiner_tree(adj2, [0, 1, 2, 3]).tolist() == [[0, 1], [2, 3]]
    with pytest.raises(ConfigError, match="method"):
        steiner_tree(adj, [1, 2], method="prim")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="terminals"):
        steiner_tree(adj, [1, 9])


# -- paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(30))
def test_paths_match_networkx(seed: int) -> None:
    g = _random_graph(seed, 4, 20, 0.2)
    n = g.number_of_nodes()
    adj = nx.to_scipy_sparse_array(g, nodelist=range(n))
    rng = np.random.default_rng(seed)
    s, t = (int(x) for x in rng.choice(n, 2, replace=False))
    d = nx.shortest_path_length(g, s, t) if nx.has_path(g, s, t) else None
    for hops in range(5):
        path = shortest_path(adj, s, t, hops)
        if d is None or d > hops:
            assert path is None
        else:
            assert path is not None and len(path) - 1 == d and (path[0], path[-1]) == (s, t)
            assert all(g.has_edge(a, b) for a, b in itertools.pairwise(path))
    nodes = [int(x) for x in rng.choice(n, min(n, 4), replace=False)]
    for hops in (1, 2, 3):
        ours = k_hop_paths(adj, nodes, hops, max_paths=10**6)
        ref = [
            p
            for i, a in enumerate(nodes)
            for b in nodes[i + 1 :]
            for p in nx.all_simple_paths(g, a, b, cutoff=hops)
        ]
        assert sorted(map(tuple, ours)) == sorted(map(tuple, ref))
    assert len(k_hop_paths(adj, nodes, 3, max_paths=2)) <= 2


def test_merge_paths_example_of_the_paper() -> None:
    a, b, c, d = 0, 1, 2, 3
    assert merge_paths([[a, b, c], [a, b, c, d]]) == [[a, b, c, d]]
    assert merge_paths([[c, b], [a, b, c, d], [5, 6], [6, 5]]) == [[a, b, c, d], [5, 6]]
    assert merge_paths([]) == []


def test_cover_paths_joins_entities_and_merges() -> None:
    # chain 0-1-2-3-4 and an isolated 5
    adj = sp.csr_matrix(([1.0] * 4, ([0, 1, 2, 3], [1, 2, 3, 4])), shape=(6, 6))
    assert cover_paths(adj, [0, 2, 4, 5], 2) == [[0, 1, 2]]  # 4 then has no partner left; 5 none
    assert cover_paths(adj, [0, 4], 3) == []
    assert cover_paths(adj, [0, 4], 4) == [[0, 1, 2, 3, 4]]
    assert cover_paths(adj, [0, 3, 2], 3) == [[0, 1, 2]]  # nearest partner first: 2 (2 hops), not 3
    with pytest.raises(ConfigError, match="max_hops"):
        cover_paths(adj, [0], -1)


# -- TF-IDF ------------------------------------------------------------------------------
def test_tfidf_matches_scikit_learn() -> None:
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    docs = [
        "The cat sat on the mat.",
        "Dogs and cats, living together!",
        "Ünïcode wörds and the cat",
        "a b c",
    ]
    matrix, vocab, idf = fit_tfidf(docs)
    ref = sklearn_text.TfidfVectorizer()
    x = ref.fit_transform(docs)
    assert vocab == list(ref.get_feature_names_out())
    np.testing.assert_allclose(matrix.toarray(), x.toarray(), atol=1e-12)
    q = transform(["cat on the mat, zebra"], {t: j for j, t in enumerate(vocab)}, idf)
    np.testing.assert_allclose(q.toarray(), ref.transform(["cat on the mat, zebra"]).toarray(), atol=1e-12)
    assert transform(["zebra"], {t: j for j, t in enumerate(vocab)}, idf).nnz == 0


def test_rrf_weighted_fusion_by_hand():
    from paretorag.kernels import rrf
    from paretorag.types import Scored

    a = Scored(np.array([3, 1, 2]), np.array([0.9, 0.5, 0.1]))
    b = Scored(np.array([2, 3]), np.array([5.0, 4.0]))
    fused = rrf([a, b], weights=[0.25, 0.75], k=1)
    expected = {3: 0.25 / 2 + 0.75 / 3, 1: 0.25 / 3, 2: 0.25 / 4 + 0.75 / 2}
    assert fused.ids.tolist() == sorted(expected, key=lambda r: -expected[r])
    np.testing.assert_allclose(fused.scores, [expected[r] for r in fused.ids.tolist()], rtol=1e-6)
    # a zero weight drops that ranking; equal weights are plain RRF
    assert rrf([a, b], weights=[1.0, 0.0]).ids.tolist() == [3, 1, 2]
    assert rrf([a, b]).ids.tolist()[0] == 3
    with pytest.raises(ValueError):
        rrf([a, Scored(np.array([1]), np.array([1.0]), "node")])
