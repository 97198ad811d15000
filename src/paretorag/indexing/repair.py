"""Checking an index against its manifest, and what ``paretorag repair`` removes and rebuilds.

Everything derived can be rebuilt from SQLite: the documents and chunks are there, the
chunk vectors are in the embedding cache and the LLM responses in the LLM cache, so a
rebuild costs no model calls for work already done. :func:`check` lists what is
missing or does not match; :func:`damaged_paths` says which files to remove so that the
next commit writes them again; :func:`recover_manifest` rebuilds a manifest that cannot
be read, from ``manifest.json.bak`` or, failing that, the default configuration.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DamagedIndexError, IndexFormatError
from ..storage.manifest import BACKUP, FILENAME, IndexConfig, Manifest
from ..storage.store import Store
from ..storage.structures import has_structure
from .commit import CONFIG_KEY
from .plan import vector_files


@dataclass
class Problem:
    """One thing wrong with an index, and the files to remove so that a commit rebuilds them."""

    message: str
    remove: list[Path] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


@dataclass
class RepairReport:
    """What :meth:`paretorag.RAG.repair` found and did."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rebuilt: bool = False
    removed: list[str] = field(default_factory=list)
    """Files of earlier generations no manifest or reader names (a writer killed between its
    commit and its garbage collection leaves them), deleted."""


def recover_manifest(root: Path, store: Store | None = None) -> tuple[Manifest, str]:
    """A manifest to replace an unreadable ``manifest.json``, and a note saying where it came
    from: ``manifest.json.bak``, else the configuration the last commit kept in SQLite, else
    the default configuration. Vectors and structures are then rebuilt by a commit."""
    try:
        backup = Manifest.load(root, BACKUP)
    except IndexFormatError:
        backup = None
    if backup is not None:
        return backup, f"{root / FILENAME} was damaged; recovered it from {BACKUP}"
    try:
        kept = store.get_kv(CONFIG_KEY) if store is not None else None
    except IndexFormatError:
        kept = None
    if isinstance(kept, dict) and isinstance(kept.get("config"), dict):
        m = Manifest(IndexConfig.from_json(kept["config"]), models=dict(kept.get("models") or {}))
        return (
            m,
            f"{root / FILENAME} was damaged; recovered its configuration from {store.path if store else ''}",
        )
    return Manifest(IndexConfig()), (
        f"{root / FILENAME} was damaged and has no readable {BACKUP}; rebuilt it with the default "
        "configuration (methods: vanilla, embedder: minilm, chunks 1200/100): pass --methods, "
        "--embedder, --set again if the index used others"
    )


def _check_vectors(root: Path, m: Manifest, store: Store | None, deep: bool) -> list[Problem]:
    vdir = root / "vectors"
    paths = [vdir / f for f in vector_files(m.vectors)]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        return [Problem(f"missing {', '.join(str(p) for p in missing)}", paths)]
    if not deep:
        return []
    try:
        ids = [i for i in paths[2].read_text(encoding="utf-8").split("\n") if i]
        matrix = np.load(paths[0], allow_pickle=False, mmap_mode="r")
        rows = int(matrix.shape[0])
    except (OSError, ValueError) as exc:
        return [Problem(f"cannot read the vectors of {m.vectors} ({exc})", paths)]
    n = int(m.counts.get("chunks", len(ids)))
    if not rows == len(ids) == n:
        return [
            Problem(f"{paths[0]} has {rows} rows, {paths[2]} {len(ids)} ids, the manifest {n} chunks", paths)
        ]
    if store is not None:
        try:
            store.chunk_table(ids)
        except DamagedIndexError as exc:
            return [Problem(str(exc))]
    return []


def _check_structure(root: Path, name: str, dirname: str, deep: bool) -> list[Problem]:
    path = root / "structures" / dirname
    if not has_structure(root / "structures", dirname):
        return [Problem(f"structure {name}: {path} is missing or incomplete", [path])]
    if not deep:
        return []
    try:
        with np.load(path / "arrays.npz", allow_pickle=False) as z:
            for key in z.files:
                z[key]
        json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        return [Problem(f"structure {name}: cannot read {path} ({exc})", [path])]
    return []


def check(root: Path, manifest: Manifest, store: Store | None = None, *, deep: bool = True) -> list[Problem]:
    """What is wrong with a committed index: files the manifest names that are missing or do
    not match its counts, and (``deep``) unreadable files and SQLite's integrity check."""
    problems: list[Problem] = []
    if manifest.vectors:
        problems += _check_vectors(root, manifest, store, deep)
    for name, info in manifest.structures.items():
        problems += _check_structure(root, name, str(info.get("dir", "")), deep)
    if deep and store is not None:
        problems += [Problem(msg) for msg in store.integrity()]
    return problems


def remove(problems: list[Problem]) -> None:
    """Remove the damaged files, so that the next commit writes them again."""
    for p in problems:
        for path in p.remove:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
