"""Checking an index against its manifest, and what ``paretorag repair`` removes and rebuilds.

Everything derived can be rebuilt from SQLite: the documents and chunks are there, the
chunk vectors are in the embedding cache and the LLM responses in the LLM cache, so a
rebuild costs no model calls for work already done. :func:`check` lists what is
missing or does not match; :func:`damaged_paths` says which files to remove so that the
next commit writes them again; :func:`recover_manifest` rebuilds a manifest that cannot
be read, from ``manifest.json.bak`` or, failing that, the default configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DamagedIndexError, IndexFormatError
from ..storage.backend import IndexBackend
from ..storage.manifest import BACKUP, IndexConfig, Manifest
from ..storage.store import Store
from .commit import CONFIG_KEY


@dataclass
class Problem:
    """One thing wrong with an index, and the objects to discard so that a commit rebuilds
    them (``vectors/STEM``, ``structures/DIR``: :meth:`IndexBackend.discard`)."""

    message: str
    remove: list[str] = field(default_factory=list)
    fatal: bool = False  # the database itself: nothing to rebuild it from

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


def recover_manifest(backend: IndexBackend, store: Store | None = None) -> tuple[Manifest, str]:
    """A manifest to replace an unreadable one, and a note saying where it came from: the
    backup copy, else the configuration the last commit kept in the store, else the default
    configuration. Vectors and structures are then rebuilt by a commit."""
    where = backend.location
    try:
        backup = backend.load_manifest(backup=True)
    except IndexFormatError:
        backup = None
    if backup is not None:
        return backup, f"the manifest of {where} was damaged; recovered it from its backup copy ({BACKUP})"
    try:
        kept = store.get_kv(CONFIG_KEY) if store is not None else None
    except IndexFormatError:
        kept = None
    if isinstance(kept, dict) and isinstance(kept.get("config"), dict):
        m = Manifest(IndexConfig.from_json(kept["config"]), models=dict(kept.get("models") or {}))
        return (
            m,
            f"the manifest of {where} was damaged; recovered its configuration from "
            f"{store.location if store else ''}",
        )
    return Manifest(IndexConfig()), (
        f"the manifest of {where} was damaged and has no readable backup; rebuilt it with the default "
        "configuration (methods: vanilla, embedder: minilm, chunks 1200/100): pass --methods, "
        "--embedder, --set again if the index used others"
    )


def _check_vectors(backend: IndexBackend, m: Manifest, store: Store | None, deep: bool) -> list[Problem]:
    stem = m.vectors
    discard = [f"vectors/{stem}"]
    missing = backend.missing_vectors(stem)
    if missing:
        return [Problem(f"missing {', '.join(missing)}", discard)]
    if not deep:
        return []
    try:
        ids = backend.vector_ids(stem)
        rows = backend.vector_rows(stem)
    except DamagedIndexError as exc:
        return [Problem(f"cannot read the vectors of {stem} ({exc})", discard)]
    n = int(m.counts.get("chunks", len(ids)))
    if not rows == len(ids) == n:
        return [
            Problem(
                f"{backend.vector_place(stem)} has {rows} rows for {len(ids)} ids, the manifest {n} chunks",
                discard,
            )
        ]
    if store is not None:
        try:
            store.chunk_table(ids)
        except DamagedIndexError as exc:
            return [Problem(str(exc))]
    return []


def _check_structure(backend: IndexBackend, name: str, dirname: str, deep: bool) -> list[Problem]:
    place = backend.structure_place(dirname)
    if not backend.has_structure(dirname):
        return [Problem(f"structure {name}: {place} is missing or incomplete", [f"structures/{dirname}"])]
    if not deep:
        return []
    try:
        backend.load_structure(dirname)
    except DamagedIndexError as exc:
        return [Problem(f"structure {name}: cannot read {place} ({exc})", [f"structures/{dirname}"])]
    return []


def check(
    backend: IndexBackend, manifest: Manifest, store: Store | None = None, *, deep: bool = True
) -> list[Problem]:
    """What is wrong with a committed index: objects the manifest names that are missing or do
    not match its counts, and (``deep``) unreadable ones and the database's integrity check."""
    problems: list[Problem] = []
    if manifest.vectors:
        problems += _check_vectors(backend, manifest, store, deep)
    for name, info in manifest.structures.items():
        problems += _check_structure(backend, name, str(info.get("dir", "")), deep)
    if deep and store is not None:
        problems += [Problem(msg, fatal=True) for msg in store.integrity()]
    return problems


def remove(backend: IndexBackend, problems: list[Problem]) -> None:
    """Discard the damaged objects, so that the next commit writes them again."""
    backend.discard(name for p in problems for name in p.remove)
