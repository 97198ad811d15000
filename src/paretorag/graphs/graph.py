"""One graph value for every node graph (unified framework §4, Table 2).

The entity graph (E2GraphRAG), the concept graph (G2ConS), the passage graph (KGP), the
knowledge graphs KG / TKG / RKG (HippoRAG, GraphRAG, LightRAG) and their communities
are all a :class:`Graph`: node names and kinds, a weighted adjacency, a node -> chunk
incidence, optional edge records with their own edge -> chunk incidence, optional node,
edge and community vectors, and node descriptions. Operators read graphs through this
one shape, so a node operator written once serves every graph type.

Rows are integers: node ``i`` is row ``i`` of ``adjacency`` and ``node_chunks``; edge
``j`` is row ``j`` of every :class:`Edges` array; chunk columns index the index's chunk
table. Saved with :func:`graph_to_structure` as plain arrays
(``.npz``, no pickle) and JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, IndexFormatError
from ..storage.structures import StructureData, get_csr, get_texts, put_csr, put_texts
from ..types import FloatArray, IntArray


def csr(matrix: sp.spmatrix | sp.sparray | np.ndarray, shape: tuple[int, int] | None = None) -> sp.csr_matrix:
    """A canonical CSR matrix (sorted indices, duplicates summed)."""
    m = sp.csr_matrix(matrix, shape=shape)
    m.sum_duplicates()
    m.sort_indices()
    return m


@dataclass(frozen=True)
class Edges:
    """Edge records of a graph: one row per (source, target) relation.

    ``relation`` is the relation text of a KG triple (empty for co-occurrence graphs),
    ``description`` the TKG/RKG description, ``keywords`` the RKG keywords, ``weight`` the
    edge weight and ``chunks`` the edge -> chunk incidence (the chunks it was extracted
    from; Table 3's chunk Aggregator and FromRel read it).
    """

    src: IntArray
    dst: IntArray
    weight: FloatArray
    chunks: sp.csr_matrix
    relation: list[str] = field(default_factory=list)
    description: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = int(np.asarray(self.src).size)
        for name in ("dst", "weight"):
            if int(np.asarray(getattr(self, name)).size) != n:
                raise ConfigError(
                    f"Edges.{name} has {np.asarray(getattr(self, name)).size} rows, src has {n}"
                )
        if self.chunks.shape[0] != n:
            raise ConfigError(f"Edges.chunks has {self.chunks.shape[0]} rows, src has {n}")
        for name in ("relation", "description", "keywords"):
            value = getattr(self, name)
            if value and len(value) != n:
                raise ConfigError(f"Edges.{name} has {len(value)} entries for {n} edges")

    def __len__(self) -> int:
        return int(self.src.size)

    def text(self, j: int, names: list[str]) -> str:
        """What an edge says, for vectors and prompts: "src relation dst: description"."""
        rel = self.relation[j] if self.relation else ""
        head = " ".join(p for p in (names[int(self.src[j])], rel, names[int(self.dst[j])]) if p)
        desc = self.description[j] if self.description else ""
        return f"{head}: {desc}" if desc else head


@dataclass(frozen=True)
class Communities:
    """Hierarchical communities of a graph's nodes (GraphRAG, Leiden; §5 community index).

    ``level[c]`` is community ``c``'s level (0 = finest... as the builder documents),
    ``parent[c]`` its parent community (-1 at the top), ``members`` the community x node
    incidence, ``reports`` their reports, ``rating`` the report ratings and ``vectors``
    the report vectors (optional).
    """

    level: IntArray
    parent: IntArray
    members: sp.csr_matrix
    reports: list[str] = field(default_factory=list)
    rating: FloatArray | None = None
    vectors: FloatArray | None = None

    def __len__(self) -> int:
        return int(self.level.size)


@dataclass(frozen=True)
class Graph:
    """A node graph with its chunk links (see the module docstring).

    Attributes
    ----------
    names : list of str
        Node names; row ``i`` of every node matrix.
    kinds : list of str
        Node kind per node (``"entity"``, ``"concept"``, ``"passage"``, an entity type
        such as ``"PERSON"``...).
    adjacency : scipy.sparse.csr_matrix, shape (n, n)
        Edge weights; symmetric unless ``directed``.
    node_chunks : scipy.sparse.csr_matrix, shape (n, n_chunks)
        Node -> chunk incidence (occurrence counts or 1).
    edges : Edges, optional
        Edge records (relation texts, descriptions, edge -> chunk incidence).
    descriptions : list of str
        Node descriptions (TKG/RKG); empty when the graph has none.
    node_vectors : ndarray, optional
        L2-normalized node vectors (the node index of §5).
    edge_vectors : ndarray, optional
        L2-normalized edge vectors (the relationship index of §5).
    communities : Communities, optional
        Hierarchical communities and their reports (the community index of §5).
    directed : bool
        Whether ``adjacency`` is directed.
    """

    names: list[str]
    kinds: list[str]
    adjacency: sp.csr_matrix
    node_chunks: sp.csr_matrix
    edges: Edges | None = None
    descriptions: list[str] = field(default_factory=list)
    node_vectors: FloatArray | None = None
    edge_vectors: FloatArray | None = None
    communities: Communities | None = None
    directed: bool = False

    def __post_init__(self) -> None:
        n = len(self.names)
        if len(self.kinds) != n:
            raise ConfigError(f"Graph has {n} names but {len(self.kinds)} kinds")
        if self.adjacency.shape != (n, n):
            raise ConfigError(f"Graph adjacency has shape {self.adjacency.shape}, expected ({n}, {n})")
        if self.node_chunks.shape[0] != n:
            raise ConfigError(f"Graph node_chunks has {self.node_chunks.shape[0]} rows, expected {n}")
        if self.descriptions and len(self.descriptions) != n:
            raise ConfigError(f"Graph has {len(self.descriptions)} descriptions for {n} nodes")
        if self.node_vectors is not None and self.node_vectors.shape[0] != n:
            raise ConfigError(f"Graph node_vectors has {self.node_vectors.shape[0]} rows, expected {n}")
        if self.edge_vectors is not None and (
            self.edges is None or self.edge_vectors.shape[0] != len(self.edges)
        ):
            raise ConfigError("Graph edge_vectors needs one row per edge record")

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @property
    def n_chunks(self) -> int:
        return int(self.node_chunks.shape[1])

    @cached_property
    def ids(self) -> dict[str, int]:
        """Node name -> row (the first row when names repeat)."""
        out: dict[str, int] = {}
        for i, name in enumerate(self.names):
            out.setdefault(name, i)
        return out

    @cached_property
    def chunk_nodes(self) -> sp.csr_matrix:
        """Chunk -> node incidence (the transpose of ``node_chunks``)."""
        return csr(self.node_chunks.T)

    @cached_property
    def edge_nodes(self) -> sp.csr_matrix:
        """Edge x node incidence (1 for each endpoint)."""
        if self.edges is None:
            raise ConfigError("this graph has no edge records")
        e = self.edges
        m = len(e)
        data = np.ones(2 * m, dtype=np.float32)
        rows = np.concatenate([np.arange(m), np.arange(m)])
        return csr(sp.csr_matrix((data, (rows, np.concatenate([e.src, e.dst]))), shape=(m, self.n_nodes)))

    @cached_property
    def component(self) -> np.ndarray:
        """Weakly connected component label per node."""
        from scipy.sparse.csgraph import connected_components  # scipy.linalg with it: 0.1 s a query

        _, labels = connected_components(self.adjacency, directed=self.directed, connection="weak")
        return np.asarray(labels, dtype=np.int32)

    def summary(self) -> dict[str, Any]:
        """One line for ``paretorag inspect``."""
        out: dict[str, Any] = {
            "nodes": self.n_nodes,
            "edges": int(self.adjacency.nnz // (1 if self.directed else 2)),
        }
        if self.edges is not None:
            out["edge_records"] = len(self.edges)
        if self.communities is not None:
            out["communities"] = len(self.communities)
        return out


def graph_to_structure(
    graph: Graph, *, meta: dict[str, Any] | None = None, arrays: dict[str, np.ndarray] | None = None
) -> StructureData:
    """A :class:`~paretorag.graphs.graph.Graph` as a structure (plus a builder's own arrays and meta).

    The graph's arrays take the keys ``names``, ``kinds``, ``adj``, ``node_chunks``,
    ``node_desc``, ``node_vectors``, ``edge_*`` and ``comm_*``; ``meta["graph"]`` holds
    the shape information and the kind vocabulary. Builder arrays must not reuse them.
    """
    out: dict[str, np.ndarray] = {}
    put_texts(out, "names", graph.names)
    kind_names = sorted(set(graph.kinds))
    code = {k: i for i, k in enumerate(kind_names)}
    out["kinds"] = np.asarray([code[k] for k in graph.kinds], dtype=np.int16)
    put_csr(out, "adj", csr(graph.adjacency))
    put_csr(out, "node_chunks", csr(graph.node_chunks))
    if graph.descriptions:
        put_texts(out, "node_desc", graph.descriptions)
    if graph.node_vectors is not None:
        out["node_vectors"] = np.asarray(graph.node_vectors, dtype=np.float32)
    info: dict[str, Any] = {
        "n_nodes": graph.n_nodes,
        "n_chunks": graph.n_chunks,
        "kind_names": kind_names,
        "directed": graph.directed,
        "n_edges": None,
        "n_communities": None,
    }
    e = graph.edges
    if e is not None:
        info["n_edges"] = len(e)
        out["edge_src"] = np.asarray(e.src, dtype=np.int64)
        out["edge_dst"] = np.asarray(e.dst, dtype=np.int64)
        out["edge_weight"] = np.asarray(e.weight, dtype=np.float32)
        put_csr(out, "edge_chunks", csr(e.chunks))
        for key in ("relation", "description", "keywords"):
            if getattr(e, key):
                put_texts(out, f"edge_{key}", getattr(e, key))
        if graph.edge_vectors is not None:
            out["edge_vectors"] = np.asarray(graph.edge_vectors, dtype=np.float32)
    c = graph.communities
    if c is not None:
        info["n_communities"] = len(c)
        out["comm_level"] = np.asarray(c.level, dtype=np.int64)
        out["comm_parent"] = np.asarray(c.parent, dtype=np.int64)
        put_csr(out, "comm_members", csr(c.members))
        if c.reports:
            put_texts(out, "comm_reports", c.reports)
        if c.rating is not None:
            out["comm_rating"] = np.asarray(c.rating, dtype=np.float32)
        if c.vectors is not None:
            out["comm_vectors"] = np.asarray(c.vectors, dtype=np.float32)
    for key in arrays or {}:
        if key in out:
            raise IndexFormatError(f"structure array {key!r} clashes with a graph array; rename it")
    summary = {**graph.summary(), **(meta or {}).get("summary", {})}
    return StructureData({**out, **(arrays or {})}, {**(meta or {}), "graph": info, "summary": summary})


def graph_from_structure(data: StructureData) -> Graph:
    """The :class:`~paretorag.graphs.graph.Graph` stored by :func:`graph_to_structure`."""
    a, info = data.arrays, data.meta.get("graph")
    if not isinstance(info, dict):
        raise IndexFormatError(
            "this structure holds no graph (no meta['graph']); rebuild it with `paretorag index`"
        )
    n, n_chunks = int(info["n_nodes"]), int(info["n_chunks"])
    kind_names = list(info["kind_names"])
    edges = None
    edge_vectors = None
    if info.get("n_edges") is not None:
        m = int(info["n_edges"])
        edges = Edges(
            src=np.asarray(a["edge_src"], dtype=np.int64),
            dst=np.asarray(a["edge_dst"], dtype=np.int64),
            weight=np.asarray(a["edge_weight"], dtype=np.float32),
            chunks=get_csr(a, "edge_chunks", (m, n_chunks)),
            relation=get_texts(a, "edge_relation"),
            description=get_texts(a, "edge_description"),
            keywords=get_texts(a, "edge_keywords"),
        )
        edge_vectors = a.get("edge_vectors")
    communities = None
    if info.get("n_communities") is not None:
        level = np.asarray(a["comm_level"], dtype=np.int64)
        communities = Communities(
            level=level,
            parent=np.asarray(a["comm_parent"], dtype=np.int64),
            members=get_csr(a, "comm_members", (level.size, n)),
            reports=get_texts(a, "comm_reports"),
            rating=a.get("comm_rating"),
            vectors=a.get("comm_vectors"),
        )
    return Graph(
        names=get_texts(a, "names"),
        kinds=[kind_names[int(k)] for k in a["kinds"]],
        adjacency=get_csr(a, "adj", (n, n)),
        node_chunks=get_csr(a, "node_chunks", (n, n_chunks)),
        edges=edges,
        descriptions=get_texts(a, "node_desc"),
        node_vectors=a.get("node_vectors"),
        edge_vectors=edge_vectors,
        communities=communities,
        directed=bool(info.get("directed", False)),
    )


__all__ = ["Communities", "Edges", "Graph", "csr", "graph_from_structure", "graph_to_structure"]
