"""The operator framework: the graph value, the operator contract, Pipeline settings,
presets, and the catalogue the CLI prints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from paretorag.cli import app
from paretorag.errors import ConfigError, IndexFormatError
from paretorag.graphs.graph import Communities, Edges, Graph, graph_from_structure, graph_to_structure
from paretorag.retrieval.methods import Pipeline, get_method
from paretorag.retrieval.methods.base import METHODS
from paretorag.retrieval.operators import available_operators, get_operator
from paretorag.retrieval.operators.dense import ChunkVDB
from paretorag.retrieval.query import QueryOptions, State
from paretorag.storage.structures import load_structure, save_structure
from paretorag.types import Scored


def small_graph() -> Graph:
    names = ["Ada", "Lovelace", "engine", "Ada"]  # a repeated name keeps its first row in ids
    adj = sp.csr_matrix(np.array([[0, 2, 1, 0], [2, 0, 0, 0], [1, 0, 0, 3], [0, 0, 3, 0]], np.float32))
    node_chunks = sp.csr_matrix(np.array([[1, 0, 2], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.int32))
    edges = Edges(
        src=np.array([0, 0, 2]),
        dst=np.array([1, 2, 3]),
        weight=np.array([2, 1, 3], np.float32),
        chunks=sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)),
        relation=["named", "designed", "ran on"],
        description=["", "Ada designed programs for the engine", ""],
    )
    comms = Communities(
        level=np.array([0, 0, 1]),
        parent=np.array([2, 2, -1]),
        members=sp.csr_matrix(np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], np.float32)),
        reports=["people", "machines", "all"],
        rating=np.array([5.0, 3.0, 8.0], np.float32),
    )
    return Graph(
        names,
        ["PERSON", "PERSON", "concept", "PERSON"],
        adj,
        node_chunks,
        edges=edges,
        descriptions=["a", "b", "c", "d"],
        node_vectors=np.eye(4, dtype=np.float32),
        edge_vectors=np.ones((3, 2), np.float32),
        communities=comms,
    )


def test_graph_round_trips_through_disk_without_pickle(tmp_path):
    g = small_graph()
    data = graph_to_structure(g, meta={"summary": {"built_by": "test"}}, arrays={"extra": np.arange(3)})
    save_structure(tmp_path, "g-1", data)
    back = graph_from_structure(load_structure(tmp_path, "g-1"))
    assert back.names == g.names and back.kinds == g.kinds and back.descriptions == g.descriptions
    assert (back.adjacency != g.adjacency).nnz == 0 and (back.node_chunks != g.node_chunks).nnz == 0
    assert back.edges is not None and back.edges.relation == ["named", "designed", "ran on"]
    assert back.edges.description == g.edges.description and back.edges.keywords == []
    assert back.edges.text(1, back.names) == "Ada designed engine: Ada designed programs for the engine"
    assert back.communities is not None and back.communities.reports == ["people", "machines", "all"]
    assert back.communities.rating.tolist() == [5.0, 3.0, 8.0]
    assert back.ids["Ada"] == 0 and back.chunk_nodes.shape == (3, 4)
    assert back.component.tolist() == [0, 0, 0, 0] and back.edge_nodes.shape == (3, 4)
    assert data.meta["summary"] == {
        "nodes": 4,
        "edges": 3,
        "edge_records": 3,
        "communities": 3,
        "built_by": "test",
    }
    with pytest.raises(IndexFormatError, match="clashes"):
        graph_to_structure(g, arrays={"adj_data": np.zeros(1)})


def test_graph_checks_its_shapes():
    g = small_graph()
    with pytest.raises(ConfigError, match="kinds"):
        Graph(g.names, g.kinds[:2], g.adjacency, g.node_chunks)
    with pytest.raises(ConfigError, match="node_chunks"):
        Graph(g.names, g.kinds, g.adjacency, g.node_chunks[:2])
    with pytest.raises(ConfigError, match="relation"):
        Edges(np.array([0]), np.array([1]), np.array([1.0]), sp.csr_matrix((1, 3)), relation=["a", "b"])


def test_pipeline_settings_follow_scikit_learn():
    v = get_method("vanilla")
    assert isinstance(v, Pipeline) and v.requires == ("vectors",) and not v.uses_llm
    params = v.get_params()
    assert params["search__k"] == 5 and params["search"] == ChunkVDB(k=5)
    assert v.set_params(search__k=8).get_params()["search__k"] == 8
    assert get_method("vanilla", search__k=3).steps[0][1].k == 3
    with pytest.raises(ConfigError, match="no setting 'serch'"):
        v.set_params(serch__k=1)
    with pytest.raises(ConfigError, match="must be set to an Operator"):
        v.set_params(search=5)
    with pytest.raises(ConfigError, match="repeated"):
        _ = Pipeline(steps=[("a", ChunkVDB()), ("a", ChunkVDB())]).requires
    clone = v.clone()
    assert clone == v and clone.steps[0][1] is not v.steps[0][1]


class _Index:
    """Just enough of an IndexView for a chunk VDB step."""

    def __init__(self) -> None:
        self.vectors = np.eye(6, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([0.9, 0.5, 0.4, 0.3, 0.2, 0.1], np.float32)

    def dense_search(self, q: np.ndarray, k: int) -> Scored:
        s = self.vectors @ q
        order = np.argsort(-s)[:k]
        return Scored(order, s[order])


def test_query_k_sets_the_last_chunk_step_only():
    index = _Index()
    p = Pipeline(steps=[("wide", ChunkVDB(k=4)), ("narrow", ChunkVDB(k=2))])
    r = p.retrieve(index, "q", QueryOptions(k=3))  # type: ignore[arg-type]
    assert r.scored.ids.tolist() == [0, 1, 2]
    assert p.steps[1][1].k == 2  # the setting itself is unchanged
    state = p.run(index, State("q"))  # type: ignore[arg-type]
    assert len(state.get("wide")) == 4 and len(state.get("narrow")) == 2
    assert r.branch == "chunk.vdb -> chunk.vdb"
    with pytest.raises(ConfigError, match="put a step that produces 'entity'"):
        State("q").get("entity")


def test_presets_are_settings_not_classes():
    spec = METHODS["e2graphrag-no-dense"]
    assert spec.cls.__name__ == "E2GraphRAG" and spec.preset == {"dense": False}
    m = get_method("e2graphrag-no-dense")
    assert m.name == "e2graphrag-no-dense" and type(m) is spec.cls and m.dense is False
    assert get_method("e2graphrag").name == "e2graphrag"


def test_every_operator_declares_itself():
    names = available_operators()
    assert {"chunk.vdb", "e2graphrag.local", "g2cons.concepts"} <= set(names)
    for name in names:
        op = get_operator(name)
        assert op.name == name and op.produces and op.kind and op.paper, name
        assert op.clone() == op and op.set_params(**op.get_params(deep=False)) is op
        with pytest.raises(ConfigError, match="no setting"):
            op.set_params(definitely_not_a_setting=1)


def test_cli_lists_operators_and_methods_from_the_code():
    runner = CliRunner()
    r = runner.invoke(app, ["operators", "--json"])
    assert r.exit_code == 0, r.output
    ops = {o["name"]: o for o in json.loads(r.stdout)}
    assert set(ops) == set(available_operators())
    assert ops["chunk.vdb"]["requires"] == ["vectors"] and ops["chunk.vdb"]["uses_llm"] is False
    r = runner.invoke(app, ["methods", "--json"])
    assert r.exit_code == 0, r.output
    methods = {m["name"]: m for m in json.loads(r.stdout)}
    assert methods["vanilla"]["steps"] == ["search=chunk.vdb"]
    assert methods["e2graphrag-dense-only"]["preset_of"] == "e2graphrag"
    assert methods["g2cons"]["requires"] == ["vectors", "concept_graph"]
    r = runner.invoke(app, ["methods"])
    assert r.exit_code == 0 and "vanilla" in r.stdout
