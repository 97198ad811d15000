"""The index's graphs for people: entity and relation listing and search, and the subgraph
around a question's passages or around one entity (``paretorag graph``, ``GET /graph/...``).

Every node graph an index stores (:func:`~paretorag.graphs.graph.graph_to_structure`: the
entity graph of ``entity-walk`` / ``fusion`` / ``e2graphrag``, the KG / TKG / RKG, the fact,
concept, passage and linear graphs, the communities' graphs) is read the same way, as a
:class:`~paretorag.graphs.graph.Graph`. Rows are node rows; passages are chunk ids. A structure
that is not built raises :class:`~paretorag.errors.MissingStructureError` naming the
``paretorag index`` command that builds it. Export to GraphML / JSON / CSV is in
:mod:`paretorag.explore.export`.

One module (over 400 lines): listing, search and the neighbourhood read every node graph
through the same loaders, shared by the CLI and the HTTP routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, MissingStructureError
from .mentions import PassageWords, mentions, name_stems

if TYPE_CHECKING:
    from ..graphs.graph import Graph
    from ..indexing.loaded import LoadedIndex
    from ..rag import RAG

# the graph shown when none is named: the recommended method's entity graph first
NOT_GRAPHS = ("tree", "bm25")  # structures that hold no node graph
PREFERRED = (
    "entity_graph",
    "kg",
    "fact_graph",
    "rkg",
    "tkg",
    "linear_graph",
    "concept_graph",
    "passage_graph",
)
PER_NODE = 8  # passage ids listed per node in a neighborhood (the node's retrieved ones first)


@dataclass(frozen=True)
class GraphRef:
    """A loaded graph of an index: its structure name, the graph, and the index view."""

    structure: str
    graph: Graph
    view: LoadedIndex

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return self.view.chunks.ids

    def degree(self) -> np.ndarray:
        """Distinct neighbours per node (in or out; self-loops not counted), memoized."""

        def compute() -> np.ndarray:
            a = self.graph.adjacency
            both = (a + a.T).tocsr() if self.graph.directed else a.tocsr()
            both = both.copy()
            both.setdiag(0)
            both.eliminate_zeros()
            return np.diff(both.indptr).astype(np.int64)

        out: np.ndarray = self.view.cached(f"explore:degree:{self.structure}", compute)
        return out

    def passages(self) -> np.ndarray:
        """Passages (chunks) each node occurs in."""
        return np.diff(self.graph.node_chunks.indptr).astype(np.int64)

    def node_chunk_rows(self, node: int) -> np.ndarray:
        nc = self.graph.node_chunks
        rows = nc.indices[nc.indptr[node] : nc.indptr[node + 1]]
        return rows[rows < len(self.chunk_ids)]

    def node_row(self, node: int) -> dict[str, Any]:
        """One node as the listing, the export and the API show it."""
        g = self.graph
        row: dict[str, Any] = {
            "id": int(node),
            "name": g.names[node],
            "kind": g.kinds[node],
            "degree": int(self.degree()[node]),
            "passages": int(self.passages()[node]),
        }
        if g.descriptions:
            row["description"] = g.descriptions[node]
        return row


def builds_hint(structure: str, index: object) -> str:
    """The command that builds ``structure`` (through a method that reads it)."""
    from ..indexing.plan import required_structures
    from ..retrieval import catalog

    rows = catalog.methods()
    needing = [r["name"] for r in rows if structure in required_structures([r["name"]])]
    if not needing:
        return f"no method reads {structure!r}; it cannot be built by `paretorag index`"
    # the recommended method first, then the ones that query without an LLM, presets last
    cheap = {r["name"] for r in rows if not r.get("uses_llm")}
    rec = {r["name"] for r in rows if r.get("recommended")}
    preset = {r["name"] for r in rows if r.get("preset_of")}
    needing.sort(key=lambda m: (m not in rec, m not in cheap, m in preset, len(m), m))
    others = f" (or {', '.join(needing[1:4])})" if len(needing) > 1 else ""
    return f"build it with `paretorag index --index {index} --methods {needing[0]}`{others}"


def graph_structures(view: LoadedIndex) -> list[str]:
    """The built structures of ``view`` that hold a node graph, in :data:`PREFERRED` order."""

    def compute() -> list[str]:
        built = [name for name in view.manifest.structures if _holds_graph(view, name)]
        return sorted(built, key=lambda s: (PREFERRED.index(s) if s in PREFERRED else len(PREFERRED), s))

    return list(view.cached("explore:graphs", compute))


def _holds_graph(view: LoadedIndex, name: str) -> bool:
    info = view.manifest.structures.get(name) or {}
    meta = view.backend.structure_meta(str(info.get("dir", "")))
    return isinstance(meta, dict) and isinstance(meta.get("graph"), dict)


def open_graph(view: LoadedIndex, structure: str | None = None) -> GraphRef:
    """The graph of ``structure`` (default: the first built of :data:`PREFERRED`).

    Raises
    ------
    MissingStructureError
        The structure is not built (the message names the command that builds it), or
        the index holds no graph at all.
    ConfigError
        ``structure`` is not a structure name, or names one that is not a node graph.
    """
    from ..graphs.base import available_builders
    from ..retrieval.operators.base import load_graph

    if structure is None:
        found = graph_structures(view)
        if not found:
            raise MissingStructureError(
                f"the index {view.root} holds no graph yet; {builds_hint('entity_graph', view.root)}"
            )
        structure = found[0]
    graphs = [s for s in available_builders() if s not in NOT_GRAPHS]
    if structure not in graphs:
        what = "is not a node graph" if structure in NOT_GRAPHS else "is not a structure"
        raise ConfigError(f"{structure!r} {what}; the graphs are: {', '.join(graphs)}")
    if structure not in view.manifest.structures:
        raise MissingStructureError(
            f"the index {view.root} has no {structure!r} structure; {builds_hint(structure, view.root)}"
        )
    if structure not in graph_structures(view):
        built = ", ".join(graph_structures(view)) or "none"
        raise ConfigError(f"structure {structure!r} is not a node graph; the graphs built here: {built}")
    return GraphRef(structure, load_graph(view, structure), view)


def _terms(q: str | None) -> list[str]:
    return [t for t in (q or "").lower().split() if t]


def entities(ref: GraphRef, q: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Nodes, best first: those whose name holds every word of ``q`` (an exact name first,
    then names that start with it, then names holding it, then descriptions holding it),
    each group by passages and degree. Without ``q``: every node by passages and degree."""
    if limit < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")
    g = ref.graph
    terms = _terms(q)
    passages, degree = ref.passages(), ref.degree()
    query = " ".join(terms)
    ranked: list[tuple[int, int, int, str, int]] = []
    for i, name in enumerate(g.names):
        low = name.lower()
        if terms:
            if all(t in low for t in terms):
                group = 0 if low == query else 1 if low.startswith(query) else 2
            elif g.descriptions and all(t in g.descriptions[i].lower() for t in terms):
                group = 3
            else:
                continue
        else:
            group = 0
        ranked.append((group, -int(passages[i]), -int(degree[i]), name, i))
    ranked.sort()
    return [ref.node_row(i) for *_, i in ranked[:limit]]


def find_entity(ref: GraphRef, name: str) -> int:
    """The row of the node named ``name`` (exact, then case-insensitive, then the best search hit)."""
    g = ref.graph
    if name in g.ids:
        return g.ids[name]
    low = name.strip().lower()
    for i, n in enumerate(g.names):
        if n.lower() == low:
            return i
    hits = entities(ref, name, limit=1)
    if not hits:
        raise ConfigError(
            f"no entity {name!r} in {ref.structure}; search for one with `paretorag graph entities --q`"
        )
    return int(hits[0]["id"])


def edge_list(ref: GraphRef) -> dict[str, Any]:
    """Every edge: the edge records when the graph has them (KG triples, TKG / RKG relations),
    else the adjacency (once per pair when undirected). Arrays ``src``, ``dst``, ``weight``,
    ``passages`` (chunks of the edge: its records' chunks, or those both ends share) and the
    record texts ``relation``, ``description``, ``keywords`` (empty lists when absent)."""

    def compute() -> dict[str, Any]:
        g = ref.graph
        e = g.edges
        if e is not None:
            return {
                "src": np.asarray(e.src, np.int64),
                "dst": np.asarray(e.dst, np.int64),
                "weight": np.asarray(e.weight, np.float64),
                "chunks": e.chunks,
                "relation": e.relation,
                "description": e.description,
                "keywords": e.keywords,
            }
        a = g.adjacency if g.directed else sp.triu(g.adjacency, k=1).tocsr()
        coo = a.tocoo()
        src, dst = coo.row.astype(np.int64), coo.col.astype(np.int64)
        present = (g.node_chunks > 0).astype(np.float32).tocsr()
        shared = present[src].multiply(present[dst]).tocsr() if src.size else sp.csr_matrix((0, g.n_chunks))
        return {
            "src": src,
            "dst": dst,
            "weight": coo.data.astype(np.float64),
            "chunks": shared,
            "relation": [],
            "description": [],
            "keywords": [],
        }

    out: dict[str, Any] = ref.view.cached(f"explore:edges:{ref.structure}", compute)
    return out


def edge_row(ref: GraphRef, edges: dict[str, Any], j: int) -> dict[str, Any]:
    names = ref.graph.names
    s, d = int(edges["src"][j]), int(edges["dst"][j])
    row: dict[str, Any] = {
        "source": s,
        "target": d,
        "source_name": names[s],
        "target_name": names[d],
        "weight": round(float(edges["weight"][j]), 6),
        "passages": int(edges["chunks"].indptr[j + 1] - edges["chunks"].indptr[j]),
    }
    for key in ("relation", "description", "keywords"):
        if edges[key]:
            row[key] = edges[key][j]
    return row


def relations(ref: GraphRef, q: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """Edges whose ``source relation target description`` holds every word of ``q``, by
    weight then passages (every edge without ``q``)."""
    if limit < 1:
        raise ConfigError(f"limit must be at least 1, got {limit}")
    edges = edge_list(ref)
    names = ref.graph.names
    terms = _terms(q)
    counts = np.diff(edges["chunks"].indptr)
    weight = np.asarray(edges["weight"], np.float64)
    if not terms:  # every edge: one sort, no loop
        order = np.lexsort((np.arange(weight.size), -counts, -weight))[:limit]
        return [edge_row(ref, edges, int(j)) for j in order]
    keep: list[int] = []
    for j in range(int(edges["src"].size)):
        text = " ".join(
            (
                names[int(edges["src"][j])],
                edges["relation"][j] if edges["relation"] else "",
                names[int(edges["dst"][j])],
                edges["description"][j] if edges["description"] else "",
            )
        ).lower()
        if all(t in text for t in terms):
            keep.append(j)
    keep.sort(key=lambda j: (-float(weight[j]), -int(counts[j]), j))
    return [edge_row(ref, edges, j) for j in keep[:limit]]


def aliases(ref: GraphRef) -> dict[int, list[str]]:
    """The other names of each node that has some: the nodes its ``synonym`` edges join it to
    (the KG's), memoized."""

    def compute() -> dict[int, list[str]]:
        edges = edge_list(ref)
        out: dict[int, list[str]] = {}
        names = ref.graph.names
        for j, relation in enumerate(edges["relation"]):
            if relation == "synonym":
                s, d = int(edges["src"][j]), int(edges["dst"][j])
                if s != d:
                    out.setdefault(s, []).append(names[d])
                    out.setdefault(d, []).append(names[s])
        return {i: list(dict.fromkeys(found)) for i, found in out.items()}

    found: dict[int, list[str]] = ref.view.cached(f"explore:aliases:{ref.structure}", compute)
    return found


def _subgraph(
    ref: GraphRef, nodes: list[int], seeds: dict[int, float], retrieved: dict[int, float], max_edges: int
) -> dict[str, Any]:
    """Nodes (with their passage ids, retrieved first, their other names and the sentences of
    those passages that name them), the edges among them, and the passages."""
    chunks = ref.view.chunks
    other_names = aliases(ref)
    read: dict[int, PassageWords] = {}
    edges = edge_list(ref)
    src, dst, w = edges["src"], edges["dst"], edges["weight"]
    inside = np.flatnonzero(np.isin(src, nodes) & np.isin(dst, nodes)) if nodes else np.zeros(0, np.int64)
    inside = inside[np.argsort(-w[inside], kind="stable")][:max_edges]
    out_nodes = []
    shown: dict[int, None] = {}
    for i in nodes:
        rows = ref.node_chunk_rows(i)
        order = sorted(rows.tolist(), key=lambda r: (r not in retrieved, -retrieved.get(r, 0.0), r))
        listed = order[:PER_NODE]
        shown.update(dict.fromkeys(listed))
        row = ref.node_row(i)
        row["passage_ids"] = [chunks.ids[r] for r in listed]
        row["seed"] = i in seeds
        row["score"] = round(float(seeds.get(i, 0.0)), 6)
        row["aliases"] = list(other_names.get(i, []))
        wanted = name_stems([ref.graph.names[i], *row["aliases"]])
        row["mentions"] = []
        for r in listed:
            passage = read.get(r) or read.setdefault(r, PassageWords(chunks.texts[r]))
            for m in mentions(passage, wanted):
                row["mentions"].append({"chunk_id": chunks.ids[r], **m})
        out_nodes.append(row)
    out_edges = [edge_row(ref, edges, int(j)) for j in inside]
    passages = {
        chunks.ids[r]: {
            "chunk_id": chunks.ids[r],
            "doc_id": chunks.doc_ids[r],
            "title": chunks.titles[r],
            "text": chunks.texts[r],
            "retrieved": r in retrieved,
            "score": round(retrieved[r], 6) if r in retrieved else None,
        }
        for r in shown
    }
    return {"structure": ref.structure, "nodes": out_nodes, "edges": out_edges, "passages": passages}


def entity_neighborhood(
    ref: GraphRef, name: str, max_nodes: int = 40, max_edges: int = 400
) -> dict[str, Any]:
    """The node named ``name`` and its heaviest neighbours (at most ``max_nodes`` in all)."""
    _check_sizes(max_nodes, max_edges)
    i = find_entity(ref, name)
    a = ref.graph.adjacency
    both = (a + a.T).tocsr() if ref.graph.directed else a
    cols = both.indices[both.indptr[i] : both.indptr[i + 1]]
    weights = both.data[both.indptr[i] : both.indptr[i + 1]]
    order = [int(c) for c in cols[np.argsort(-weights, kind="stable")] if int(c) != i]
    nodes = [i, *order[: max_nodes - 1]]
    out = _subgraph(ref, nodes, {i: 1.0}, {}, max_edges)
    out["entity"] = ref.graph.names[i]
    out["truncated"] = len(order) > max_nodes - 1
    return out


def question_neighborhood(
    rag: RAG,
    question: str,
    *,
    structure: str | None = None,
    method: str | None = None,
    k: int | None = None,
    max_nodes: int = 40,
    max_edges: int = 400,
) -> dict[str, Any]:
    """The nodes found in the passages ``method`` retrieves for ``question`` (no LLM answer),
    ranked by how many of those passages hold them and their retrieval scores, and the edges
    among them."""
    _check_sizes(max_nodes, max_edges)
    ref = open_graph(rag.view, structure)
    method = method or rag.default_method()
    retrieval, items = rag.retrieve(question, method, k=k)
    retrieved: dict[int, float] = {}
    for item in items:
        if 0 <= item.row < len(ref.chunk_ids):
            retrieved.setdefault(item.row, float(item.score))
    hits = ref.graph.chunk_nodes  # chunk -> node
    mass: dict[int, list[float]] = {}
    for rank, row in enumerate(retrieved):
        if row >= hits.shape[0]:
            continue
        for node in hits.indices[hits.indptr[row] : hits.indptr[row + 1]]:
            m = mass.setdefault(int(node), [0.0, 0.0])
            m[0] += 1.0
            m[1] += 1.0 / (rank + 1)  # a node in the best passage counts most
    degree = ref.degree()
    ranked = sorted(mass, key=lambda n: (-mass[n][0], -mass[n][1], -int(degree[n]), n))
    nodes = ranked[:max_nodes]
    out = _subgraph(ref, nodes, {n: mass[n][1] for n in nodes}, retrieved, max_edges)
    out.update(
        question=question,
        method=method,
        mode=retrieval.mode,
        retrieved=[ref.chunk_ids[r] for r in retrieved],
        truncated=len(ranked) > max_nodes,
    )
    return out


def _check_sizes(max_nodes: int, max_edges: int) -> None:
    if max_nodes < 1:
        raise ConfigError(f"max_nodes must be at least 1, got {max_nodes}")
    if max_edges < 0:
        raise ConfigError(f"max_edges must be at least 0, got {max_edges}")


__all__ = [
    "PREFERRED",
    "GraphRef",
    "aliases",
    "builds_hint",
    "edge_list",
    "entities",
    "entity_neighborhood",
    "find_entity",
    "graph_structures",
    "open_graph",
    "question_neighborhood",
    "relations",
]
