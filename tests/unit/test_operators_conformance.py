"""One conformance suite over every registered operator (scikit-learn style), on a hand-made index."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import paretorag.retrieval.methods.steps  # noqa: F401  (steps that run whole methods register as operators)
from paretorag.errors import ConfigError
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.operators import available_operators, get_operator, operator_class
from paretorag.retrieval.operators.base import Operator
from paretorag.retrieval.query import QueryOptions
from paretorag.types import Budget, Scored
from tests.operator_world import (
    N_CHUNKS,
    N_COMMUNITIES,
    N_EDGES,
    N_NODES,
    StubIndex,
    extractive_index,
    prepared_state,
    structures,
)

ALL_OPERATORS = available_operators()
# E2GraphRAG's and G2ConS's own operators read their papers' structures, and EA-GraphRAG's
# routing and fusion steps read the shipped router and two rankings; they are checked on a
# real index built by the builders (test_family_operator_* below), the pool here
OWN_FAMILIES = {"e2graphrag", "g2cons", "ea-graphrag"}
OPERATORS = [n for n in ALL_OPERATORS if get_operator(n).kind not in OWN_FAMILIES]
FAMILY = [n for n in ALL_OPERATORS if get_operator(n).kind in OWN_FAMILIES]
KNOWN_STRUCTURES = {"vectors", "tree", "entity_graph", "concept_graph", *structures()}
ROWS = {
    "entity": N_NODES,
    "relation": N_EDGES,
    "subgraph": N_EDGES,
    "chunk": N_CHUNKS,
    "community": N_COMMUNITIES,
}
# operators that choose with an LLM and cannot run on the extractive backend
AGENTS = {"node.agent", "relation.agent", "subgraph.agentpath", "subgraph.beam"}
# operators added to §6.1's pool: chunk FromNode (RAPTOR, KGP), chunk fusion (HLightRAG),
# graph elements as context (§6.3)
ADDED = {"chunk.fromnode", "chunk.fuse", "context.graph"}


def _run(name: str, index: StubIndex | None = None, options: QueryOptions | None = None, **params: object):
    index = index or StubIndex()
    state = prepared_state(options=options)
    op = get_operator(name, **params)
    out = op(index, state)
    return out, state, index


def test_the_pool_is_complete() -> None:
    pool = {
        "node.vdb",
        "node.relnode",
        "node.ppr",
        "node.agent",
        "node.onehop",
        "node.link",
        "node.tfidf",
        "relation.vdb",
        "relation.onehop",
        "relation.aggregator",
        "relation.agent",
        "chunk.aggregator",
        "chunk.fromrel",
        "chunk.occurrence",
        "subgraph.khoppath",
        "subgraph.steiner",
        "subgraph.agentpath",
        "community.entity",
        "community.layer",
    }
    assert len(pool) == 19  # §6.1's operator pool
    assert pool | {"chunk.vdb", "community.vdb", "question.terms", "question.keywords"} | ADDED <= set(
        OPERATORS
    )


@pytest.mark.parametrize("name", ALL_OPERATORS)
def test_operator_declares_itself(name: str) -> None:
    cls = operator_class(name)
    op = get_operator(name)
    assert isinstance(op, Operator) and op.name == name
    assert name.startswith(f"{name.split('.')[0]}.") and op.kind and op.produces and op.paper
    assert cls.__doc__ and cls.__doc__.strip()
    assert set(op.requires) <= KNOWN_STRUCTURES, f"{name} requires unknown structures {op.requires}"
    params = inspect.signature(cls.__init__).parameters
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "self"), (
        "settings are keyword-only"
    )
    settings = op.get_params()
    clone = op.clone()
    assert clone is not op and clone.get_params() == settings
    assert op.set_params(**settings) is op and op.get_params() == settings
    with pytest.raises(ConfigError, match="no setting"):
        op.set_params(definitely_not_a_setting=1)
    if "graph" in settings:
        assert settings["graph"] in op.requires


@pytest.mark.parametrize("name", OPERATORS)
def test_operator_returns_valid_rows_and_stores_them(name: str) -> None:
    out, state, _ = _run(name)
    op = get_operator(name)
    assert isinstance(out, Scored) and state.results[op.produces] is out
    assert len(out) > 0, f"{name} found nothing on the hand-made world"
    if op.produces == "terms":
        n = len(state.terms or [])
    elif op.produces == "context":  # positions of the items it added
        n = len(state.items or [])
    else:
        n = ROWS[op.produces]
    assert out.ids.min() >= 0 and out.ids.max() < n
    assert len(set(out.ids.tolist())) == len(out), "rows are distinct"
    assert np.all(np.diff(out.scores) <= 1e-6), "best first"
    for item in state.items or []:
        assert item.text and item.n_tokens > 0


@pytest.mark.parametrize("name", [n for n in OPERATORS if "k" in get_operator(n).get_params()])
def test_operator_respects_k(name: str) -> None:
    default = get_operator(name).get_params()["k"]
    out, _, _ = _run(name)
    if default is not None:
        assert len(out) <= default
    for k in (1, 2):
        out, _, _ = _run(name, k=k)
        assert 1 <= len(out) <= k
    with pytest.raises(ConfigError, match="k"):
        _run(name, k=0)


@pytest.mark.parametrize("name", OPERATORS)
def test_operator_respects_the_token_budget(name: str) -> None:
    for limit in (1, 12):
        _, state, _ = _run(name, options=QueryOptions(budget=Budget(max_tokens=limit)))
        assert sum(it.n_tokens for it in state.items or []) <= limit


@pytest.mark.parametrize("name", OPERATORS)
def test_operator_is_deterministic(name: str) -> None:
    a, sa, _ = _run(name)
    b, sb, _ = _run(name)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.kind == b.kind
    assert sa.items == sb.items and sa.terms == sb.terms and sa.info == sb.info


@pytest.mark.parametrize("name", OPERATORS)
def test_operator_declares_its_llm_use_truthfully(name: str) -> None:
    _, _, index = _run(name)  # a generative fake LLM
    calls = index.usage.llm_calls
    if get_operator(name).uses_llm:
        assert calls >= 1, f"{name} declares uses_llm but made no call"
    else:
        assert calls == 0, f"{name} made {calls} LLM calls but declares uses_llm=False"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_agents_refuse_the_extractive_backend(name: str) -> None:
    assert get_operator(name).uses_llm
    with pytest.raises(ConfigError, match="--llm openai:MODEL"):
        _run(name, index=extractive_index())


@pytest.mark.parametrize("name", [n for n in OPERATORS if n not in AGENTS])
def test_non_agents_run_offline(name: str) -> None:
    out, _, index = _run(name, index=extractive_index())
    assert isinstance(out, Scored) and index.usage.llm_calls == 0


@pytest.mark.parametrize("name", [n for n in OPERATORS if "graph" in get_operator(n).get_params()])
def test_missing_structure_names_the_fix(name: str) -> None:
    from paretorag.errors import MissingStructureError

    op = get_operator(name)
    with pytest.raises(MissingStructureError):
        _run(name, index=StubIndex(missing=tuple(op.requires)))


# -- E2GraphRAG's and G2ConS's operators, on a real index ------------------------------------
# the steps each one needs before it, as its method runs them
PREREQUISITES = {
    "e2graphrag.local": ["e2graphrag.entities"],
    "e2graphrag.global": ["e2graphrag.entities"],
    "e2graphrag.evidence": ["e2graphrag.entities", "e2graphrag.collapsed_tree"],
    "e2graphrag.fill": ["e2graphrag.entities", "e2graphrag.collapsed_tree", "chunk.vdb"],
    "e2graphrag.select": ["e2graphrag.entities"],
    "g2cons.ensemble": ["g2cons.concepts", "g2cons.second"],
    "ea-graphrag.wrrf": ["ea-graphrag.complexity"],
}


@pytest.fixture(scope="module")
def family_index(tmp_path_factory: pytest.TempPathFactory):
    from paretorag import RAG
    from paretorag.ingest.files import make_document
    from tests.operator_world import TEXTS

    rag = RAG.open(
        tmp_path_factory.mktemp("family") / "ix", embedder="hash:32", methods=["e2graphrag", "g2cons"]
    )
    rag.index([make_document(f"doc {i}", t, f"w#{i}", presplit=True) for i, t in enumerate(TEXTS)])
    return rag


def _run_family(rag, name: str, options: QueryOptions | None = None):
    from paretorag.retrieval.query import State

    state = State("Where did Marie Curie and Pierre Curie marry?", options or QueryOptions())
    for pre in PREREQUISITES.get(name, []):
        get_operator(pre)(rag.view, state)
    if name in ("ea-graphrag.path", "ea-graphrag.merge"):  # on the route that runs both paths
        get_operator("ea-graphrag.route", route="fusion")(rag.view, state)
        if name == "ea-graphrag.merge":
            for path in ("dense", "graph"):
                get_operator("ea-graphrag.path", path=path)(rag.view, state)
    if name == "ea-graphrag.wrrf":  # the two rankings its method puts under "dense" and "graph"
        for path, method in (("dense", "vanilla"), ("graph", "entity-walk")):
            state.put(path, get_method(method).retrieve(rag.view, state.question, QueryOptions(k=10)).scored)
    before = rag.usage.llm_calls
    out = get_operator(name)(rag.view, state)
    return out, state, rag.usage.llm_calls - before


def test_every_family_operator_is_covered() -> None:
    assert set(FAMILY) == {
        "e2graphrag.entities",
        "e2graphrag.collapsed_tree",
        "e2graphrag.local",
        "e2graphrag.global",
        "e2graphrag.evidence",
        "e2graphrag.fill",
        "e2graphrag.select",
        "g2cons.concepts",
        "g2cons.core",
        "g2cons.second",
        "g2cons.ensemble",
        "ea-graphrag.complexity",
        "ea-graphrag.wrrf",
        "ea-graphrag.route",
        "ea-graphrag.path",
        "ea-graphrag.merge",
    }


@pytest.mark.parametrize("name", FAMILY)
def test_family_operator_runs_deterministically_offline(family_index, name: str) -> None:
    a, state, calls = _run_family(family_index, name)
    b, _, _ = _run_family(family_index, name)
    op = get_operator(name)
    assert not op.uses_llm and calls == 0
    assert state.results[op.produces] is a and a.ids.tolist() == b.ids.tolist()
    assert len(set(a.ids.tolist())) == len(a)
    if name != "e2graphrag.local":  # the local route may find no pair: then it is empty by design
        assert len(a) > 0, f"{name} found nothing"
    # k tree nodes (g2cons: k concepts); a step that reworks its own input kind is not re-run alone
    if "k" in op.get_params() and op.kind == "e2graphrag" and op.produces not in op.consumes:
        _, state1, _ = _run_family(family_index, name)
        state1.results.pop(op.produces)
        assert len(get_operator(name, k=1)(family_index.view, state1)) <= 1
