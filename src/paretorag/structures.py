"""Built structures on disk: ``structures/<name>-<fingerprint>/{arrays.npz, meta.json}``.

A structure directory is written under a temporary name and renamed when complete,
so it either exists whole or not at all; the manifest names the ones in use.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .diskerrors import disk_errors
from .errors import DamagedIndexError, IndexFormatError
from .graphs.base import StructureData


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
