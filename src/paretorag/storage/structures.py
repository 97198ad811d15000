"""Built structures on disk: ``structures/<name>-<fingerprint>/{arrays.npz, meta.json}``.

A structure directory is written under a temporary name and renamed when complete,
so it either exists whole or not at all; the manifest names the ones in use.

Every structure is stored the same way: CSR arrays (:func:`put_csr`), strings packed as
UTF-8 bytes plus offsets (:func:`put_texts`), and JSON metadata; no object arrays, loaded
with ``allow_pickle=False``. Node graphs use these through
:func:`paretorag.graphs.graph.graph_to_structure`.
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

from ..errors import DamagedIndexError, IndexFormatError
from .diskerrors import disk_errors


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


def put_texts(arrays: dict[str, np.ndarray], key: str, texts: Sequence[str]) -> None:
    arrays[f"{key}_utf8"], arrays[f"{key}_offsets"] = pack_texts(texts)


def get_texts(arrays: dict[str, np.ndarray], key: str) -> list[str]:
    if f"{key}_utf8" not in arrays:
        return []
    return unpack_texts(arrays[f"{key}_utf8"], arrays[f"{key}_offsets"])


def put_csr(arrays: dict[str, np.ndarray], key: str, m: sp.csr_matrix) -> None:
    arrays[f"{key}_indptr"] = m.indptr.astype(np.int64)
    arrays[f"{key}_indices"] = m.indices.astype(np.int32)
    arrays[f"{key}_data"] = np.asarray(m.data)


def get_csr(arrays: dict[str, np.ndarray], key: str, shape: tuple[int, int]) -> sp.csr_matrix:
    return sp.csr_matrix(
        (arrays[f"{key}_data"], arrays[f"{key}_indices"], arrays[f"{key}_indptr"]), shape=shape
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
