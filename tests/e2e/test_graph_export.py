"""`paretorag graph`: export formats read back by their own readers (igraph's GraphML reader,
json, csv; degrees checked against networkx), entity and relation search, and the errors of
a structure that is not built."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import igraph
import networkx as nx
import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app as cli_app
from paretorag.errors import ConfigError, MissingStructureError
from paretorag.explore.browse import entities, find_entity, open_graph, question_neighborhood, relations

from ..server_util import build_index, write_corpus


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory) -> Path:
    """The six animal passages with the entity graph (entity-walk) and the offline KG (hipporag)."""
    root = tmp_path_factory.mktemp("graph")
    with RAG.open(root / "ix", embedder="hash:64", methods=["entity-walk", "hipporag"]) as rag:
        rag.index(write_corpus(root / "src"))
    return root / "ix"


@pytest.fixture(scope="module")
def plain_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    return build_index(root / "ix", write_corpus(root / "src"))


def run(*args: str):
    return CliRunner().invoke(cli_app, ["graph", *args])


def otters_chunk(index: Path) -> str:
    with RAG.open(index, create=False) as rag:
        chunks = rag.view.chunks
        return next(cid for cid, title in zip(chunks.ids, chunks.titles, strict=True) if title == "otters")


def test_graphml_reads_back_in_igraph(graph_index, tmp_path):
    out = tmp_path / "g.graphml"
    r = run("export", "--index", str(graph_index), "--format", "graphml", "--out", str(out))
    assert r.exit_code == 0, r.output
    g = igraph.Graph.Read_GraphML(str(out))
    with RAG.open(graph_index, create=False) as rag:
        ref = open_graph(rag.view, "entity_graph")
        n, pairs = ref.graph.n_nodes, ref.graph.adjacency.nnz // 2
    assert ref.structure == "entity_graph" and not g.is_directed()
    assert g.vcount() == n and g.ecount() == pairs and g["structure"] == "entity_graph"
    names = g.vs["name"]
    assert "otter" in names and "heron" in " ".join(names)
    otter = g.vs[names.index("otter")]
    assert otter["chunk_ids"].split() == [otters_chunk(graph_index)]
    assert otter["kind"] == "entity" and otter["passages"] == 1
    assert otter["degree"] == g.degree(otter.index)  # the stored degree is the graph's
    assert all(w >= 1 for w in g.es["weight"])


def test_json_on_stdout_matches_networkx_degrees(graph_index):
    r = run("export", "--index", str(graph_index), "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["structure"] == "entity_graph" and data["directed"] is False
    g = nx.Graph()
    g.add_nodes_from(n["id"] for n in data["nodes"])
    g.add_edges_from((e["source"], e["target"]) for e in data["edges"])
    assert g.number_of_edges() == len(data["edges"])  # each pair once
    assert {n["id"]: n["degree"] for n in data["nodes"]} == dict(g.degree())
    # co-occurring entities share the sentence's passage
    assert all(e["passages"] == len(e["chunk_ids"]) >= 1 for e in data["edges"])
    by_name = {n["name"]: n for n in data["nodes"]}
    assert by_name["otter"]["chunk_ids"] == [otters_chunk(graph_index)]
    fish = by_name["fish"]
    assert fish["passages"] == len(fish["chunk_ids"]) == 2  # otters and kingfishers


def test_csv_folder_of_the_kg_holds_its_triples(graph_index, tmp_path):
    out = tmp_path / "kg-csv"
    r = run("export", "-i", str(graph_index), "--structure", "kg", "--format", "csv", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["edges.csv", "nodes.csv"]
    with open(out / "nodes.csv", encoding="utf-8", newline="") as fh:
        nodes = list(csv.DictReader(fh))
    with open(out / "edges.csv", encoding="utf-8", newline="") as fh:
        edges = list(csv.DictReader(fh))
    names = {int(n["id"]): n["name"] for n in nodes}
    triples = {(names[int(e["source"])], e["relation"], names[int(e["target"])]) for e in edges}
    assert ("otter", "eat", "fish") in triples and ("beaver", "build", "dam") in triples
    assert all(e["source_name"] == names[int(e["source"])] for e in edges)
    eat = next(
        e for e in edges if (e["source_name"], e["relation"], e["target_name"]) == ("otter", "eat", "fish")
    )
    assert eat["chunk_ids"] == otters_chunk(graph_index) and int(eat["passages"]) == 1


def test_entities_search_and_listing(graph_index):
    r = run("entities", "--index", str(graph_index), "--q", "OTTER", "--json")
    assert r.exit_code == 0, r.output
    hits = json.loads(r.stdout)
    assert hits[0]["name"] == "otter" and hits[0]["passages"] == 1 and hits[0]["degree"] >= 3
    assert all("otter" in h["name"] for h in hits)
    every = json.loads(run("entities", "--index", str(graph_index), "--json", "--limit", "5").stdout)
    assert len(every) == 5
    keys = [(-e["passages"], -e["degree"]) for e in every]
    assert keys == sorted(keys)  # most passages, then most neighbours, first
    table = run("entities", "--index", str(graph_index), "--q", "heron")
    assert table.exit_code == 0 and "heron" in table.stdout
    kg = json.loads(run("entities", "-i", str(graph_index), "-s", "kg", "--q", "otter", "--json").stdout)
    assert {"otter", "sea otter"} <= {e["name"] for e in kg} and kg[0]["name"] == "otter"
    none = run("entities", "--index", str(graph_index), "--q", "zebra", "--json")
    assert none.exit_code == 0 and json.loads(none.stdout) == []


def test_relations_search(graph_index):
    r = run("relations", "-i", str(graph_index), "-s", "kg", "--q", "otter eat", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert {(x["source_name"], x["relation"], x["target_name"]) for x in rows} >= {
        ("otter", "eat", "fish"),
        ("otter", "eat", "crab"),
    }
    co = json.loads(run("relations", "-i", str(graph_index), "--q", "otter", "--json").stdout)
    assert co and all("otter" in (x["source_name"] + " " + x["target_name"]) for x in co)
    assert all("relation" not in x for x in co)  # a co-occurrence graph has no relation texts


def test_library_neighborhood_and_lookup(graph_index):
    with RAG.open(graph_index, create=False) as rag:
        ref = open_graph(rag.view)  # default: the entity graph
        assert ref.structure == "entity_graph"
        assert ref.graph.names[find_entity(ref, "Otter")] == "otter"
        with pytest.raises(ConfigError, match="no entity 'zebra'"):
            find_entity(ref, "zebra")
        assert entities(ref, "otter", limit=1)[0]["name"] == "otter"
        assert relations(ref, limit=3)[0]["weight"] >= relations(ref, limit=3)[-1]["weight"]
        hood = question_neighborhood(rag, "What do otters eat?", method="vanilla", k=1)
    assert hood["retrieved"] == [otters_chunk(graph_index)]
    names = {n["name"] for n in hood["nodes"]}
    assert {"otter", "fish", "crab"} <= names and "heron" not in " ".join(names)
    ids = {n["id"] for n in hood["nodes"]}
    assert hood["edges"] and all(e["source"] in ids and e["target"] in ids for e in hood["edges"])
    assert set(hood["passages"]) == {p for n in hood["nodes"] for p in n["passage_ids"]}


def test_neighborhood_prints_a_table_like_entities_and_json_with_json(graph_index):
    args = ["neighborhood", "--index", str(graph_index), "--question", "What do otters eat?", "-m", "vanilla"]
    table = run(*args)
    assert table.exit_code == 0, table.output
    head = table.stdout.splitlines()[0]
    assert head.startswith("entity_graph around 'What do otters eat?' (vanilla, ") and " nodes, " in head
    assert "┃ name " in table.stdout and "┃ source_name " in table.stdout and not table.stdout.startswith("{")
    assert "otter" in table.stdout and "[1] otters (" in table.stdout
    data = json.loads(run(*args, "--json").stdout)
    assert {"otter", "fish"} <= {n["name"] for n in data["nodes"]} and data["method"] == "vanilla"
    kg = run("neighborhood", "-i", str(graph_index), "-s", "kg", "--entity", "otter")
    assert kg.exit_code == 0 and kg.stdout.startswith("kg around entity 'otter': "), kg.output
    assert "┃ relation " in kg.stdout and "eat" in kg.stdout  # a KG's edges show their relation
    around = run("neighborhood", "-i", str(graph_index), "--entity", "otter", "--json")
    assert json.loads(around.stdout)["entity"] == "otter"


def test_a_structure_not_built_names_the_command(plain_index, tmp_path):
    r = run("export", "--index", str(plain_index), "--structure", "entity_graph", "--format", "json")
    assert r.exit_code == 2
    assert "no 'entity_graph' structure" in r.output
    assert f"paretorag index --index {plain_index} --methods fusion" in r.output.replace("\n", "")
    default = run("entities", "--index", str(plain_index))
    assert default.exit_code == 2 and "holds no graph yet" in default.output
    with RAG.open(plain_index, create=False) as rag:
        with pytest.raises(MissingStructureError, match="--methods hipporag"):
            open_graph(rag.view, "kg")
        with pytest.raises(ConfigError, match="'tree' is not a node graph"):
            open_graph(rag.view, "tree")
        with pytest.raises(ConfigError, match="'entities' is not a structure"):
            open_graph(rag.view, "entities")


def test_export_argument_errors(graph_index, tmp_path):
    r = run("export", "--index", str(graph_index), "--format", "csv")
    assert r.exit_code == 2 and "give --out FOLDER" in r.output
    r = run("export", "--index", str(graph_index), "--format", "gexf", "--out", str(tmp_path / "g"))
    assert r.exit_code == 2 and "unknown format 'gexf'" in r.output
    r = run("export", "--index", str(graph_index), "--format", "json", "--out", str(tmp_path))
    assert r.exit_code == 2 and "is a folder" in r.output
