"""Built structures on disk: ``structures/<name>-<fingerprint>/{arrays.npz, meta.json}``.

A structure directory is written under a temporary name and renamed when complete,
so it either exists whole or not at all; the manifest names the ones in use.

Every node graph is stored the same way (:func:`graph_to_structure` /
:func:`graph_from_structure`): CSR arrays, strings packed as UTF-8 bytes plus offsets,
and JSON metadata; no object arrays, loaded with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .diskerrors import disk_errors
from .errors import DamagedIndexError, IndexFormatError
from .graph import Communities, Edges, Graph, csr


@dataclass
class StructureData:
    """A built structure: named arrays plus JSON metadata (id maps, settings, stats)."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def pack_texts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 byte array plus offsets (safe to store: no object arrays)."""
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        offsets[1:] = np.cumsum([len(b) for b in encoded])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def unpack_texts(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Inverse of :func:`pack_texts`."""
    raw = np.asarray(blob, dtype=np.uint8).tobytes()
    o = np.asarray(offsets, dtype=np.int64)
    return [raw[o[i] : o[i + 1]].decode("utf-8") for i in range(len(o) - 1)]


def _put_texts(arrays: dict[str, np.ndarray], key: str, texts: Sequence[str]) -> None:
    arrays[f"{key}_utf8"], arrays[f"{key}_offsets"] = pack_texts(texts)


def _get_texts(arrays: dict[str, np.ndarray], key: str) -> list[str]:
    if f"{key}_utf8" not in arrays:
        return []
    return unpack_texts(arrays[f"{key}_utf8"], arrays[f"{key}_offsets"])


def _put_csr(arrays: dict[str, np.ndarray], key: str, m: sp.csr_matrix) -> None:
    arrays[f"{key}_indptr"] = m.indptr.astype(np.int64)
    arrays[f"{key}_indices"] = m.indices.astype(np.int32)
    arrays[f"{key}_data"] = np.asarray(m.data)


def _get_csr(arrays: dict[str, np.ndarray], key: str, shape: tuple[int, int]) -> sp.csr_matrix:
    return sp.csr_matrix(
        (arrays[f"{key}_data"], arrays[f"{key}_indices"], arrays[f"{key}_indptr"]), shape=shape
    )


def graph_to_structure(
    graph: Graph, *, meta: dict[str, Any] | None = None, arrays: dict[str, np.ndarray] | None = None
) -> StructureData:
    """A :class:`~paretorag.graph.Graph` as a structure (plus a builder's own arrays and meta).

    The graph's arrays take the keys ``names``, ``kinds``, ``adj``, ``node_chunks``,
    ``node_desc``, ``node_vectors``, ``edge_*`` and ``comm_*``; ``meta["graph"]`` holds
    the shape information and the kind vocabulary. Builder arrays must not reuse them.
    """
    out: dict[str, np.ndarray] = {}
    _put_texts(out, "names", graph.names)
    kind_names = sorted(set(graph.kinds))
    code = {k: i for i, k in enumerate(kind_names)}
    out["kinds"] = np.asarray([code[k] for k in graph.kinds], dtype=np.int16)
    _put_csr(out, "adj", csr(graph.adjacency))
    _put_csr(out, "node_chunks", csr(graph.node_chunks))
    if graph.descriptions:
        _put_texts(out, "node_desc", graph.descriptions)
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
        _put_csr(out, "edge_chunks", csr(e.chunks))
        for key in ("relation", "description", "keywords"):
            if getattr(e, key):
                _put_texts(out, f"edge_{key}", getattr(e, key))
        if graph.edge_vectors is not None:
            out["edge_vectors"] = np.asarray(graph.edge_vectors, dtype=np.float32)
    c = graph.communities
    if c is not None:
        info["n_communities"] = len(c)
        out["comm_level"] = np.asarray(c.level, dtype=np.int64)
        out["comm_parent"] = np.asarray(c.parent, dtype=np.int64)
        _put_csr(out, "comm_members", csr(c.members))
        if c.reports:
            _put_texts(out, "comm_reports", c.reports)
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
    """The :class:`~paretorag.graph.Graph` stored by :func:`graph_to_structure`."""
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
            chunks=_get_csr(a, "edge_chunks", (m, n_chunks)),
            relation=_get_texts(a, "edge_relation"),
            description=_get_texts(a, "edge_description"),
            keywords=_get_texts(a, "edge_keywords"),
        )
        edge_vectors = a.get("edge_vectors")
    communities = None
    if info.get("n_communities") is not None:
        level = np.asarray(a["comm_level"], dtype=np.int64)
        communities = Communities(
            level=level,
            parent=np.asarray(a["comm_parent"], dtype=np.int64),
            members=_get_csr(a, "comm_members", (level.size, n)),
            reports=_get_texts(a, "comm_reports"),
            rating=a.get("comm_rating"),
            vectors=a.get("comm_vectors"),
        )
    return Graph(
        names=_get_texts(a, "names"),
        kinds=[kind_names[int(k)] for k in a["kinds"]],
        adjacency=_get_csr(a, "adj", (n, n)),
        node_chunks=_get_csr(a, "node_chunks", (n, n_chunks)),
        edges=edges,
        descriptions=_get_texts(a, "node_desc"),
        node_vectors=a.get("node_vectors"),
        edge_vectors=edge_vectors,
        communities=communities,
        directed=bool(info.get("directed", False)),
    )


def structure_dirname(
    name: str, fingerprint: str, settings: dict[str, Any] | None = None, version: int = 1
) -> str:
    """Directory of a structure: its name plus a hash of everything it was built from.

    ``fingerprint`` identifies the chunk set; ``settings`` (the builder's parameters and
    the directories of the structures it reads) and the builder's ``version`` make a
    structure built with other settings or older code a different directory, never reused.
    """
    key = json.dumps(
        {"chunks": fingerprint, "settings": settings or {}, "version": version}, sort_keys=True, default=str
    )
    return f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def save_structure(root: Path, dirname: str, data: StructureData) -> Path:
    """Write a structure atomically (temporary directory, then rename)."""
    for key, arr in data.arrays.items():
        if np.asarray(arr).dtype == object:
            raise IndexFormatError(
                f"structure array {key!r} has dtype object; store strings in meta or as fixed-width"
            )
    final = root / dirname
    tmp = root / f".{dirname}.tmp"
    try:
        with disk_errors(final):
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            with open(tmp / "arrays.npz", "wb") as fh:
                arrays: dict[str, Any] = {k: np.asarray(v) for k, v in data.arrays.items()}
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            (tmp / "meta.json").write_text(json.dumps(data.meta, ensure_ascii=False), encoding="utf-8")
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename; a half-written one is removed
    return final


def load_structure(root: Path, dirname: str) -> StructureData:
    path = root / dirname
    try:
        with np.load(path / "arrays.npz", allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise DamagedIndexError(
            f"cannot read structure {path} ({exc}); run `paretorag repair --index {root.parent}`"
        ) from exc
    return StructureData(arrays, meta)


def has_structure(root: Path, dirname: str) -> bool:
    """True if the structure's directory holds both of its files."""
    return (root / dirname / "meta.json").is_file() and (root / dirname / "arrays.npz").is_file()
