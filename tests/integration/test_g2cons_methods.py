"""The g2cons-concept and g2cons methods end to end through RAG (papers/g2cons.txt §3.2.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paretorag.errors import ConfigError, MissingStructureError
from paretorag.ingest.files import make_document
from paretorag.rag import RAG
from paretorag.retrieval.methods import METHODS, get_method
from paretorag.retrieval.methods.base import IndexView, Method, MethodSpec, QueryOptions, Retrieval
from paretorag.retrieval.methods.g2cons import G2ConS, G2ConSConcept
from paretorag.types import ContextItem, Scored

TOPICS = {
    "Acme Robotics": "Acme Robotics builds welding robots in Ohio. Alice Carter founded Acme Robotics.",
    "Alice Carter": "Alice Carter is an engineer. Alice Carter founded Acme Robotics and studied welding.",
    "Bob Stone": "Bob Stone designs welding robots. Bob Stone works for Acme Robotics in Ohio.",
    "Welding": "Welding joins metals. Welding robots from Acme Robotics weld car frames in Ohio.",
    "River Ouse": "The River Ouse floods every spring. Farmers near the River Ouse plant late barley.",
    "Barley": "Barley is a cereal grain. Farmers plant barley near rivers in spring.",
    "York": "York stands on the River Ouse. York has a minster and a railway museum.",
    "Ohio": "Ohio is a state in the Midwest. Ohio factories build robots and cars.",
}


def _variant(view, **settings):
    """The concept graph variant ``g2cons-concept`` with ``settings`` reads (its concept step's)."""
    return dict(G2ConSConcept(**settings).steps)["concepts"].concept_state(view)


@pytest.fixture(scope="module")
def rag(tmp_path_factory: pytest.TempPathFactory) -> RAG:
    root = tmp_path_factory.mktemp("g2cons") / "index"
    docs = [make_document(t, x, f"test#{i}", presplit=True) for i, (t, x) in enumerate(TOPICS.items())]
    r = RAG.open(root, methods=["g2cons-concept", "g2cons"], embedder="hash:64")
    r.index(docs)
    return r


def tokens(items: list[ContextItem]) -> int:
    return sum(it.n_tokens for it in items)


def test_registered_with_paper_and_requirements() -> None:
    for name, cls in (("g2cons-concept", G2ConSConcept), ("g2cons", G2ConS)):
        m = get_method(name)
        assert isinstance(m, cls) and METHODS[name].cls is cls
        assert "concept_graph" in m.requires and "vectors" in m.requires
        assert not m.uses_llm and "G2ConS" in m.paper
        assert m.clone().get_params() == m.get_params()
    m = get_method("g2cons", lam=0.3)
    m.set_params(rerank="naive", kappa=0.5)
    assert m.get_params()["rerank"] == "naive" and m.get_params()["kappa"] == 0.5


def test_concept_retrieval_under_budget(rag: RAG) -> None:
    for budget in (15, 40, 80, 10_000):
        r, items = rag.retrieve("Who founded Acme Robotics?", method="g2cons-concept", budget=budget)
        assert r.mode == "concept" and items == r.items
        assert tokens(items) <= budget
        assert [it.row for it in items] == r.scored.ids.tolist()
        assert (np.diff(r.scored.scores) < 0).all()  # context order is score order
        assert len(set(r.scored.ids.tolist())) == len(r.scored)
    assert r.info["n_direct"] >= len(r.info["concepts"]) > 0
    assert items[0].title in {"Acme Robotics", "Alice Carter"}
    capped, _ = rag.retrieve("Who founded Acme Robotics?", method="g2cons-concept", k=2)
    assert len(capped.scored) == 2  # a query's k caps the passages, not the concepts
    assert capped.info["n_direct"] == r.info["n_direct"]


def test_default_budget_is_beta(rag: RAG) -> None:
    r, _ = rag.retrieve("welding", method="g2cons-concept", budget=None)
    assert r.info["tokens"] <= 12000
    small = get_method("g2cons-concept", budget=20)
    res = small.retrieve(rag.view, "welding", QueryOptions())
    assert res.info["tokens"] <= 20


@pytest.mark.parametrize(
    "params",
    [
        {"cooccurrence": "sentence"},
        {"similarity_filter": False},
        {"concept_vectors": "chunk"},
        {"rerank": "naive"},
        {"theta_sem": 0.0, "theta_co": 1},
    ],
)
def test_ablation_variants_run(rag: RAG, params: dict[str, object]) -> None:
    _, items = rag.retrieve("Which river floods York?", method="g2cons-concept", budget=60, **params)
    assert tokens(items) <= 60 and len(items) > 0


def test_ablation_graphs_differ(rag: RAG) -> None:
    view: IndexView = rag.view
    base = _variant(view, theta_sem=0.0, theta_co=1)
    sentence = _variant(view, theta_sem=0.0, theta_co=1, cooccurrence="sentence")
    loose = _variant(view, theta_sem=0.0, theta_co=1, similarity_filter=False)
    chunkvec = _variant(view, concept_vectors="chunk")
    assert sentence.graph.adjacency.nnz < base.graph.adjacency.nnz <= loose.graph.adjacency.nnz
    assert not np.allclose(chunkvec.graph.node_vectors, base.graph.node_vectors)
    assert _variant(view) is _variant(view)  # memoized per index


def test_dual_path_budget_and_quotas(rag: RAG) -> None:
    for budget in (30, 60, 200):
        r, items = rag.retrieve("Who founded Acme Robotics in Ohio?", method="g2cons", budget=budget)
        assert r.mode == "dual" and r.branch == "concept+vanilla@core"
        assert tokens(items) <= budget
        assert len({it.row for it in items}) == len(items)
        info = r.info
        assert info["both"] + info["second"] + info["concept"] == len(items)


class _Summaries(Method):
    """A second path returning one non-chunk item then chunks 0 and 1."""

    name = "test-summaries"
    structures = ("vectors",)

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        summary = ContextItem("summary:0", "", "summary", "A summary of robots.", 1.0, 4, -1)
        items = [summary, index.chunk_item(0, 0.9), index.chunk_item(1, 0.8)]
        return Retrieval(Scored(np.array([0, 1]), np.array([0.9, 0.8])), mode="tree", items=items)


def test_dual_path_with_any_second_method(rag: RAG, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METHODS, "test-summaries", MethodSpec(_Summaries))
    m = G2ConS(second="test-summaries", core_only=False, lam=0.5)
    r = m.retrieve(rag.view, "Who founded Acme Robotics?", QueryOptions())
    assert r.items is not None
    rows = [it.row for it in r.items]
    assert -1 in rows and -1 not in r.scored.ids.tolist()
    shared = r.info["both"]
    assert shared >= 1 and set(rows[:shared]) <= {0, 1}  # chunks found by both come first


def test_errors_name_the_fix(rag: RAG, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="recurse"):
        G2ConS(second="g2cons").retrieve(rag.view, "x", QueryOptions())
    with pytest.raises(ConfigError, match="cooccurrence"):
        G2ConSConcept(cooccurrence="word").retrieve(rag.view, "x", QueryOptions())  # type: ignore[arg-type]
    plain = RAG.open(tmp_path / "plain", embedder="hash:64")
    plain.index([make_document("A", "Alpha beta gamma.", "t#0", presplit=True)])
    with pytest.raises(MissingStructureError, match="g2cons-concept"):
        plain.retrieve("alpha", method="g2cons-concept")
