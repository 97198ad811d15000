"""One conformance suite over every registered method and builder (scikit-learn style)."""

from __future__ import annotations

import pytest

from paretorag import RAG, available_methods, get_method
from paretorag.graphs.base import available_builders
from paretorag.providers.embedders import HashEmbedder
from paretorag.retrieval.methods.base import Method

METHODS = available_methods()
# methods with Agent steps need a generative LLM: they get the scripted one of tests/unified_world.py
AGENT_METHODS = [m for m in METHODS if get_method(m).needs_generative]
OFFLINE_METHODS = [m for m in METHODS if m not in AGENT_METHODS]
QUESTIONS = ["What is the occupation of the person?", "In what city was he born?"]


@pytest.fixture(scope="module")
def offline_index(tmp_path_factory, popqa_slice):
    docs, _ = popqa_slice
    rag = RAG.open(tmp_path_factory.mktemp("conf") / "ix", embedder=HashEmbedder(64), methods=OFFLINE_METHODS)
    rag.index(docs)
    return rag


@pytest.fixture(scope="module")
def agent_index(tmp_path_factory):
    from tests.unified_world import documents, scripted_llm

    rag = RAG.open(
        tmp_path_factory.mktemp("conf-agents") / "ix",
        embedder=HashEmbedder(64),
        llm=scripted_llm(),
        methods=AGENT_METHODS,
    )
    rag.index(documents())
    return rag


@pytest.mark.parametrize("name", METHODS)
def test_method_declares_itself(name):
    m = get_method(name)
    assert isinstance(m, Method) and m.name == name and m.paper
    for s in m.requires:
        assert s == "vectors" or s in available_builders(), f"{name} requires unknown structure {s}"
    params = m.get_params()
    clone = m.clone()
    assert clone.get_params() == params and clone is not m
    assert m.set_params(**params) is m
    with pytest.raises(ValueError, match="no setting"):
        m.set_params(definitely_not_a_setting=1)


@pytest.mark.parametrize("name", METHODS)
def test_method_retrieves_valid_rows(request, name):
    rag = request.getfixturevalue("agent_index" if name in AGENT_METHODS else "offline_index")
    n = len(rag.view.chunks)
    for q in QUESTIONS:
        r, _items = rag.retrieve(q, name)
        ids = r.scored.ids.tolist()
        assert all(0 <= i < n for i in ids) and len(set(ids)) == len(ids)
        assert isinstance(r.mode, str) and r.mode
        assert len(r.scored.scores) == len(ids)
        ans = rag.query(q, method=name)
        assert ans.method == name and ans.mode == r.mode
        if ans.answered_by == "reader":  # the offline reader answers without an LLM call
            assert ans.usage.stage("query.answer").calls == 0 and isinstance(ans.found, bool)
        elif get_method(name).generation == "direct":
            assert ans.usage.stage("query.answer").calls == 1  # one answer call, counted
        else:  # map-reduce: a call per batch of reports, then the reduce call
            assert ans.usage.stage("query.answer").calls >= 2
        chunk_ids = set(rag.view.chunks.ids)
        for c in ans.contexts:
            assert c.text
            if c.chunk_id in chunk_ids:
                assert c.doc_id == rag.view.chunks.doc_ids[rag.view.chunks.ids.index(c.chunk_id)]


def test_index_built_every_required_structure(offline_index, agent_index):
    for rag, names in ((offline_index, OFFLINE_METHODS), (agent_index, AGENT_METHODS)):
        built = set(rag.manifest.structures)
        for name in names:
            assert {s for s in get_method(name).requires if s != "vectors"} <= built


@pytest.mark.parametrize("name", METHODS)
def test_method_is_a_composition_of_registered_operators(name):
    """Every method is a Pipeline of registered operators; none runs its own control flow."""
    from paretorag.retrieval.methods.pipeline import Pipeline
    from paretorag.retrieval.operators import available_operators

    m = get_method(name)
    assert isinstance(m, Pipeline) and (m.steps or name == "zeroshot")  # zeroshot: no retrieval
    for cls in type(m).__mro__[: type(m).__mro__.index(Pipeline)]:
        assert "retrieve" not in vars(cls) and "run" not in vars(cls), (
            f"{cls.__name__} overrides the Pipeline"
        )
    registered = set(available_operators())
    assert {op.name for op in m.operators()} <= registered
