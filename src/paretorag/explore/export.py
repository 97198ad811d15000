"""A graph of an index written as GraphML, JSON or CSV (``paretorag graph export``).

Nodes carry ``name``, ``kind``, ``degree`` (distinct neighbours), ``passages`` (how many
chunks the node occurs in), ``chunk_ids`` (those chunks' ids, space-separated in GraphML
and CSV, a list in JSON) and ``description`` where the graph has descriptions (TKG /
RKG). Edges are the graph's edge records when it has them (KG triples with ``relation``;
TKG / RKG relations with ``description`` and ``keywords``), else its weighted adjacency,
once per pair when undirected; each edge carries ``weight``, ``passages`` and
``chunk_ids`` (the chunks its records came from, or the chunks both ends share).

- ``graphml``: written by igraph (``Graph.write_graphml``); node ``row`` is the node's row.
- ``json``: ``{"structure", "directed", "nodes": [{"id", ...}], "edges": [{"source", "target", ...}]}``.
- ``csv``: a folder with ``nodes.csv`` (``id`` first) and ``edges.csv`` (``source``,
  ``target`` as node ids, then the names and attributes).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import ConfigError
from ..storage.diskerrors import disk_errors
from .browse import GraphRef, edge_list

FORMATS = ("graphml", "json", "csv")


def _chunk_ids(ref: GraphRef, matrix: Any, row: int) -> list[str]:
    ids = ref.chunk_ids
    cols = matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]]
    return [ids[int(c)] for c in cols if int(c) < len(ids)]


def graph_tables(ref: GraphRef) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and edge rows (chunk ids as lists) as every format writes them."""
    g = ref.graph
    degree, passages = ref.degree(), ref.passages()
    nodes = []
    for i in range(g.n_nodes):
        row: dict[str, Any] = {
            "id": i,
            "name": g.names[i],
            "kind": g.kinds[i],
            "degree": int(degree[i]),
            "passages": int(passages[i]),
            "chunk_ids": _chunk_ids(ref, g.node_chunks, i),
        }
        if g.descriptions:
            row["description"] = g.descriptions[i]
        nodes.append(row)
    e = edge_list(ref)
    chunks = e["chunks"]
    edges = []
    for j in range(int(e["src"].size)):
        s, d = int(e["src"][j]), int(e["dst"][j])
        row = {
            "source": s,
            "target": d,
            "source_name": g.names[s],
            "target_name": g.names[d],
            "weight": float(e["weight"][j]),
        }
        for key in ("relation", "description", "keywords"):
            if e[key]:
                row[key] = e[key][j]
        ids = _chunk_ids(ref, chunks, j)
        row["passages"] = len(ids)
        row["chunk_ids"] = ids
        edges.append(row)
    return nodes, edges


def to_json(ref: GraphRef) -> dict[str, Any]:
    nodes, edges = graph_tables(ref)
    return {"structure": ref.structure, "directed": ref.graph.directed, "nodes": nodes, "edges": edges}


def write_graphml(ref: GraphRef, path: Path) -> None:
    """GraphML through igraph (attribute types: strings, integers and reals)."""
    import igraph

    nodes, edges = graph_tables(ref)
    g = igraph.Graph(
        n=len(nodes), edges=[(e["source"], e["target"]) for e in edges], directed=ref.graph.directed
    )
    g["structure"] = ref.structure
    for key in nodes[0] if nodes else ():
        if key == "id":
            g.vs["row"] = [n["id"] for n in nodes]
        else:
            g.vs[key] = [_scalar(n[key]) for n in nodes]
    for key in edges[0] if edges else ():
        if key not in ("source", "target"):
            g.es[key] = [_scalar(e[key]) for e in edges]
    g.write_graphml(str(path))


def _scalar(value: Any) -> Any:
    return " ".join(value) if isinstance(value, list) else value


def write_csv(ref: GraphRef, folder: Path) -> list[Path]:
    nodes, edges = graph_tables(ref)
    folder.mkdir(parents=True, exist_ok=True)
    node_cols = ["id", "name", "kind", "degree", "passages", "chunk_ids"]
    if ref.graph.descriptions:
        node_cols.append("description")
    edge_cols = ["source", "target", "source_name", "target_name", "weight"]
    edge_cols += [k for k in ("relation", "description", "keywords") if edges and k in edges[0]]
    edge_cols += ["passages", "chunk_ids"]
    out = []
    for name, cols, rows in (("nodes.csv", node_cols, nodes), ("edges.csv", edge_cols, edges)):
        path = folder / name
        with open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            for r in rows:
                w.writerow({k: _scalar(r.get(k, "")) for k in cols})
        out.append(path)
    return out


def export(ref: GraphRef, fmt: str, out: Path | None, stdout: IO[str] | None = None) -> list[Path]:
    """Write ``ref`` in ``fmt`` to ``out`` (a file; a folder for ``csv``), or to ``stdout``
    when ``out`` is None (``graphml`` and ``json`` only). Returns the files written."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if out is None:
        if fmt == "csv" or stdout is None:
            raise ConfigError("--format csv writes nodes.csv and edges.csv: give --out FOLDER")
        if fmt == "json":
            stdout.write(json.dumps(to_json(ref), ensure_ascii=False) + "\n")
        else:
            import tempfile

            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "graph.graphml"
                write_graphml(ref, path)
                stdout.write(path.read_text(encoding="utf-8"))
        return []
    with disk_errors(out):
        if fmt == "csv":
            if out.exists() and not out.is_dir():
                raise ConfigError(
                    f"--out {out} is a file; --format csv writes a folder (nodes.csv, edges.csv)"
                )
            return write_csv(ref, out)
        if out.is_dir():
            raise ConfigError(f"--out {out} is a folder; give a file name such as {out / ('graph.' + fmt)}")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        if fmt == "json":
            tmp.write_text(json.dumps(to_json(ref), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        else:
            write_graphml(ref, tmp)
        os.replace(tmp, out)
    return [out]


def summary(ref: GraphRef) -> dict[str, Any]:
    """Counts for the export's closing line."""
    e = edge_list(ref)
    return {"nodes": ref.graph.n_nodes, "edges": int(np.asarray(e["src"]).size)}


__all__ = ["FORMATS", "export", "graph_tables", "summary", "to_json", "write_csv", "write_graphml"]
