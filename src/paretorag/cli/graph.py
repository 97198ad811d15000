"""``paretorag graph``: export an index's graph, list and search its entities and relations,
and show the subgraph around a question (:mod:`paretorag.explore.browse`, :mod:`paretorag.explore.export`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import ParetoragError
from .common import IndexOpt  # the default from paretorag.toml / $PARETORAG_INDEX, as elsewhere

if TYPE_CHECKING:
    from ..explore.browse import GraphRef
    from ..rag import RAG

graph_app = typer.Typer(
    no_args_is_help=True,
    help="The index's graphs: export (GraphML, JSON, CSV), entities, relations, the subgraph of a question.",
)
out = Console(soft_wrap=True, emoji=False)
err = Console(stderr=True, soft_wrap=True, emoji=False)

StructureOpt = typer.Option(
    None,
    "--structure",
    "-s",
    help="The graph: entity_graph, kg, tkg, rkg, fact_graph, concept_graph, passage_graph, linear_graph, "
    "communities... (default: the first built of entity_graph, kg, fact_graph, rkg, tkg, ...).",
)
JsonOpt = typer.Option(False, "--json", help="Print JSON.")


@contextmanager
def _graph(index_dir: Path, structure: str | None) -> Iterator[tuple[RAG, GraphRef]]:
    from ..explore.browse import open_graph
    from ..rag import RAG

    try:
        with RAG.open(index_dir, create=False) as rag:
            yield rag, open_graph(rag.view, structure)
    except ParetoragError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from None


@graph_app.command("export")
def export_command(
    index_dir: Path = IndexOpt,
    structure: str | None = StructureOpt,
    fmt: str = typer.Option("graphml", "--format", "-f", help="graphml, json or csv (a folder)."),
    out_path: Path | None = typer.Option(
        None, "--out", "-o", help="The file to write (a folder for csv); default: stdout (graphml, json)."
    ),
) -> None:
    """Write a graph with its passages: GraphML (igraph), JSON, or CSV (nodes.csv + edges.csv)."""
    from ..explore.export import export, summary

    with _graph(index_dir, structure) as (_, ref):
        written = export(ref, fmt.lower(), out_path, stdout=sys.stdout)
        if written:
            counts = summary(ref)
            err.print(
                f"{ref.structure}: {counts['nodes']} nodes, {counts['edges']} edges -> "
                + ", ".join(escape(str(p)) for p in written)
            )


def _print_rows(rows: list[dict[str, Any]], cols: list[str], as_json: bool, what: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
        return
    if not rows:
        err.print(f"no {what} found")
        return
    t = Table(*cols)
    for r in rows:
        t.add_row(*(escape(str(r.get(c, "")))[:80] for c in cols))
    out.print(t)


def _relation_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The columns of a relation table: ``relation`` only for a graph whose edges carry one (a KG)."""
    cols = ["source_name", "relation", "target_name", "weight", "passages"]
    if rows and "relation" not in rows[0]:
        cols.remove("relation")
    return cols


def _print_neighborhood(data: dict[str, Any]) -> None:
    """A neighborhood as the other ``graph`` commands print: a line saying around what, the
    nodes, the edges among them and, for a question, the passages it retrieved."""
    nodes, edges = data["nodes"], data["edges"]
    around = (
        f"entity {data['entity']!r}"
        if "entity" in data
        else f"{data['question']!r} ({data['method']}, {len(data['retrieved'])} passage(s) retrieved)"
    )
    more = "; more nodes than --max-nodes" if data.get("truncated") else ""
    out.print(
        f"{escape(data['structure'])} around {escape(around)}: {len(nodes)} nodes, {len(edges)} edges{more}"
    )
    node_cols = ["name", "kind", "degree", "passages", "id"] + (["score"] if "question" in data else [])
    _print_rows(nodes, node_cols, False, "nodes")
    if edges:
        _print_rows(edges, _relation_columns(edges), False, "edges")
    passages = data.get("passages", {})
    for i, chunk_id in enumerate(data.get("retrieved", []), start=1):
        p = passages.get(chunk_id)
        title = f"{p['title']} " if p else ""
        out.print(f"[cyan]\\[{i}][/] {escape(title)}({escape(chunk_id)})")


@graph_app.command("entities")
def entities_command(
    index_dir: Path = IndexOpt,
    q: str | None = typer.Option(None, "--q", "-q", help="Words the entity's name holds (case-insensitive)."),
    limit: int = typer.Option(50, "--limit", "-n", help="Rows to show."),
    structure: str | None = StructureOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List or search entities (nodes) with their degree and passage counts, best first."""
    from ..explore.browse import entities

    with _graph(index_dir, structure) as (_, ref):
        rows = entities(ref, q, limit)
        _print_rows(rows, ["name", "kind", "degree", "passages", "id"], as_json, "entities")


@graph_app.command("relations")
def relations_command(
    index_dir: Path = IndexOpt,
    q: str | None = typer.Option(
        None, "--q", "-q", help="Words the relation holds (names, relation, description)."
    ),
    limit: int = typer.Option(50, "--limit", "-n", help="Rows to show."),
    structure: str | None = StructureOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List or search relations (edges) by weight: KG triples, or co-occurrence pairs."""
    from ..explore.browse import relations

    with _graph(index_dir, structure) as (_, ref):
        rows = relations(ref, q, limit)
        _print_rows(rows, _relation_columns(rows), as_json, "relations")


@graph_app.command("neighborhood")
def neighborhood_command(
    index_dir: Path = IndexOpt,
    question: str | None = typer.Option(None, "--question", help="The entities of this question's passages."),
    entity: str | None = typer.Option(None, "--entity", help="This entity and its neighbours."),
    method: str | None = typer.Option(None, "--method", "-m", help="Retrieval method (for --question)."),
    max_nodes: int = typer.Option(40, "--max-nodes", help="Nodes at most."),
    structure: str | None = StructureOpt,
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: nodes with their passages and mentions, edges, passages."
    ),
) -> None:
    """The subgraph around a question's retrieved passages, or around one entity: its nodes and edges."""
    from ..explore.browse import entity_neighborhood, question_neighborhood

    if (question is None) == (entity is None):
        err.print("[bold red]error:[/] give exactly one of --question and --entity")
        raise typer.Exit(code=2)
    with _graph(index_dir, structure) as (rag, ref):
        if entity is not None:
            data = entity_neighborhood(ref, entity, max_nodes=max_nodes)
        else:
            data = question_neighborhood(
                rag, question or "", structure=ref.structure, method=method, max_nodes=max_nodes
            )
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        return
    _print_neighborhood(data)


__all__ = ["graph_app"]
