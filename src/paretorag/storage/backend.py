"""The storage seam: what an index needs from wherever it is kept.

An index is a store (documents, chunks, caches, jobs: :class:`~paretorag.storage.store.Store`),
chunk vectors by *stem*, built structures by *directory name*, a manifest that is the commit
point, one writer lock, and reader leases that keep a loaded generation's objects from
garbage collection. :class:`IndexBackend` names these; two implementations:

- :class:`FolderBackend` (the default): a folder with ``index.sqlite``, ``vectors/`` (``.npy``
  + faiss), ``structures/`` (npz + JSON), ``manifest.json``, a lock file and lease files;
  unchanged on disk from earlier versions.
- :class:`~paretorag.storage.postgres.PostgresBackend`: one PostgreSQL database
  (``postgresql://...``), for many servers on one index.

:func:`open_backend` picks one from what ``--index`` names. Nothing outside ``storage/``
opens a database, reads a vector file or a structure file.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import DamagedIndexError
from .database import is_url
from .diskerrors import disk_errors
from .lock import ReaderLease, WriterLock, collect_garbage
from .manifest import BACKUP, FILENAME, Manifest
from .store import Store
from .structures import StructureData, has_structure, load_structure, save_structure
from .vectors import VectorIndex


class Lease(Protocol):
    def hold(self, vectors: str, structures: Iterable[str]) -> None: ...

    def release(self) -> None: ...


class IndexBackend(Protocol):
    """Where one index is kept (see the module docstring)."""

    location: str  # what messages and commands name: a folder, or a URL without its password
    is_folder: bool

    def exists(self) -> bool:
        """True if an index (a manifest or a store) is there."""
        ...

    def create(self) -> None: ...

    def open_store(self) -> Store: ...

    # -- the commit point -----------------------------------------------------
    def load_manifest(self, backup: bool = False) -> Manifest | None: ...

    def save_manifest(self, m: Manifest) -> None: ...

    def stamp(self) -> Any:
        """A value that changes with every commit (cheap: readers ask before each query)."""
        ...

    # -- chunk vectors ----------------------------------------------------------
    def has_vectors(self, stem: str) -> bool: ...

    def missing_vectors(self, stem: str) -> list[str]:
        """What of the chunk vectors ``stem`` is missing, as messages name it (empty: none)."""
        ...

    def save_vectors(self, stem: str, index: VectorIndex, ids: Sequence[str]) -> None: ...

    def vector_ids(self, stem: str) -> list[str]: ...

    def load_vectors(self, stem: str, kind: str) -> VectorIndex: ...

    def vector_rows(self, stem: str) -> int: ...

    # -- structures -------------------------------------------------------------
    def has_structure(self, dirname: str) -> bool: ...

    def save_structure(self, dirname: str, data: StructureData) -> None: ...

    def load_structure(self, dirname: str) -> StructureData: ...

    def structure_meta(self, dirname: str) -> Any:
        """A structure's JSON metadata alone (None if it is missing or unreadable)."""
        ...

    def structure_place(self, dirname: str) -> str:
        """Where a structure is, as messages name it."""
        ...

    def vector_place(self, stem: str) -> str: ...

    # -- writers and readers ----------------------------------------------------
    def writer_lock(self, wait: bool | float = True, on_wait: Callable[[str], None] | None = None) -> Any: ...

    def reader_lease(self) -> Lease: ...

    def collect_garbage(self, stem: str, structure_dirs: Iterable[str]) -> list[str]: ...

    def discard(self, names: Iterable[str]) -> None:
        """Remove damaged objects (``vectors/STEM``, ``structures/DIR``) so a commit rewrites them."""
        ...

    def remove(self) -> None:
        """Remove the whole index (a failed first build that stored nothing)."""
        ...

    def size_bytes(self) -> dict[str, int]: ...

    def close(self) -> None:
        """Release connections held for this index (readers' leases end first)."""
        ...


def open_backend(index: str | Path) -> IndexBackend:
    """The backend ``index`` names: a ``postgresql://`` URL, else a folder."""
    if is_url(index):
        from .postgres import PostgresBackend

        return PostgresBackend(str(index))
    return FolderBackend(Path(index))


def index_root(backend: IndexBackend) -> Path | str:
    """What ``RAG.root`` is and messages name: the folder, or the URL without its password."""
    return backend.root if isinstance(backend, FolderBackend) else backend.location


class FolderBackend:
    """An index folder (the default backend; see the module docstring)."""

    is_folder = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.location = str(self.root)

    def exists(self) -> bool:
        return (self.root / FILENAME).exists() or (self.root / Store.FILENAME).exists()

    def create(self) -> None:
        with disk_errors(self.root):
            self.root.mkdir(parents=True, exist_ok=True)

    def open_store(self) -> Store:
        return Store(self.root)

    def load_manifest(self, backup: bool = False) -> Manifest | None:
        return Manifest.load(self.root, BACKUP if backup else FILENAME)

    def save_manifest(self, m: Manifest) -> None:
        m.save(self.root)

    def stamp(self) -> tuple[int, int, int] | None:
        """Identity of the manifest file: a commit replaces it (new inode, mtime, size)."""
        try:
            st = os.stat(self.root / FILENAME)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    # -- vectors ----------------------------------------------------------------
    @property
    def _vdir(self) -> Path:
        return self.root / "vectors"

    def _vector_paths(self, stem: str) -> list[Path]:
        return [self._vdir / f"{stem}{ext}" for ext in (".npy", ".faiss", ".ids.txt")]

    def has_vectors(self, stem: str) -> bool:
        return all(p.is_file() for p in self._vector_paths(stem))

    def missing_vectors(self, stem: str) -> list[str]:
        return [str(p) for p in self._vector_paths(stem) if not p.is_file()]

    def save_vectors(self, stem: str, index: VectorIndex, ids: Sequence[str]) -> None:
        index.save(self._vdir, stem)
        path = self._vdir / f"{stem}.ids.txt"
        tmp = self._vdir / f".{stem}.ids.txt.tmp"
        with disk_errors(path):
            tmp.write_text("\n".join(ids), encoding="utf-8")
            os.replace(tmp, path)

    def vector_ids(self, stem: str) -> list[str]:
        path = self._vdir / f"{stem}.ids.txt"
        try:
            return [i for i in path.read_text(encoding="utf-8").split("\n") if i]
        except (OSError, ValueError) as exc:
            raise DamagedIndexError(
                f"cannot read {path} ({exc}); run `paretorag repair --index {self.root}`"
            ) from exc

    def load_vectors(self, stem: str, kind: str) -> VectorIndex:
        return VectorIndex.load(self._vdir, stem, kind=kind)

    def vector_rows(self, stem: str) -> int:
        path = self._vdir / f"{stem}.npy"
        try:
            return int(np.load(path, allow_pickle=False, mmap_mode="r").shape[0])
        except (OSError, ValueError) as exc:
            raise DamagedIndexError(f"cannot read the vectors {path} ({exc})") from exc

    def vector_place(self, stem: str) -> str:
        return str(self._vdir / f"{stem}.npy")

    # -- structures -------------------------------------------------------------
    @property
    def _sdir(self) -> Path:
        return self.root / "structures"

    def has_structure(self, dirname: str) -> bool:
        return has_structure(self._sdir, dirname)

    def save_structure(self, dirname: str, data: StructureData) -> None:
        save_structure(self._sdir, dirname, data)

    def load_structure(self, dirname: str) -> StructureData:
        return load_structure(self._sdir, dirname)

    def structure_meta(self, dirname: str) -> Any:
        try:
            return json.loads((self._sdir / dirname / "meta.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None

    def structure_place(self, dirname: str) -> str:
        return str(self._sdir / dirname)

    # -- writers and readers ----------------------------------------------------
    def writer_lock(
        self, wait: bool | float = True, on_wait: Callable[[str], None] | None = None
    ) -> WriterLock:
        return WriterLock(self.root, wait=wait, on_wait=on_wait)

    def reader_lease(self) -> ReaderLease:
        return ReaderLease(self.root)

    def collect_garbage(self, stem: str, structure_dirs: Iterable[str]) -> list[str]:
        return collect_garbage(self.root, stem, structure_dirs)

    def discard(self, names: Iterable[str]) -> None:
        for name in names:
            kind, _, item = name.partition("/")
            if kind == "vectors":
                for p in self._vector_paths(item):
                    p.unlink(missing_ok=True)
            elif kind == "structures":
                shutil.rmtree(self._sdir / item, ignore_errors=True)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def close(self) -> None:
        """Nothing held: files are opened per read."""

    def size_bytes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for sub in ("vectors", "structures"):
            d = self.root / sub
            sizes[sub] = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.exists() else 0
        db = self.root / Store.FILENAME
        sizes["sqlite"] = (
            sum(p.stat().st_size for p in self.root.glob(Store.FILENAME + "*")) if db.exists() else 0
        )
        return sizes
