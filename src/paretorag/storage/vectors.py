"""Chunk vectors on disk (``.npy``) with an inner-product faiss index.

Vectors are L2-normalized, so inner product is cosine similarity. The faiss index is
exact (``IndexFlatIP``) by default; an approximate one (HNSW graph or IVF lists) is
chosen at ``index`` time (``paretorag index --ann hnsw|ivf|exact|auto``; ``auto`` is
exact below :data:`AUTO_EXACT_BELOW` vectors and HNSW from there) and stored in the
``.faiss`` file, so a query loads what the build chose. ``bench/bench_ann.py``
measures recall@10 against exact search and query latency.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, DamagedIndexError, MissingDependencyError
from ..types import FloatArray, Scored
from .diskerrors import disk_errors


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError("vector search needs faiss: pip install faiss-cpu") from exc
    return faiss


ANN_CHOICES = ("auto", "exact", "hnsw", "ivf")
AUTO_EXACT_BELOW = 1_000_000  # exact search is fast enough (and exact) below this many vectors
HNSW_M = 32  # graph degree
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128  # candidates per query (stored in the .faiss file)
IVF_PROBE_FRACTION = 1 / 16  # lists searched per query, as a fraction of the lists


def resolve_ann(ann: str, n: int) -> str:
    """The faiss index kind for ``n`` vectors: ``ann`` itself, or for ``"auto"`` exact
    below :data:`AUTO_EXACT_BELOW` and HNSW from there."""
    if ann not in ANN_CHOICES:
        raise ConfigError(f"ann must be one of {', '.join(ANN_CHOICES)}, got {ann!r}")
    if ann == "auto":
        return "exact" if n < AUTO_EXACT_BELOW else "hnsw"
    return ann


def ivf_lists(n: int) -> int:
    """IVF list count: about 4 sqrt(n), and at least 39 training vectors per list (faiss's minimum)."""
    return max(1, min(int(4 * np.sqrt(max(n, 1))), n // 39))


def build_faiss(matrix: np.ndarray, kind: str = "exact", *, seed: int = 0) -> Any:
    """A faiss inner-product index of ``kind`` (``exact``, ``hnsw``, ``ivf``) over ``matrix``.

    HNSW: ``IndexHNSWFlat`` with M = 32, efConstruction 80, efSearch 128. IVF:
    ``IndexIVFFlat`` with :func:`ivf_lists` lists trained by k-means on at most 256
    vectors per list, searching 1/16 of the lists per query. Both keep the full
    vectors, so scores are exact inner products of the candidates they find.
    """
    faiss = _faiss()
    x = np.ascontiguousarray(matrix, dtype=np.float32)
    d = x.shape[1] if x.ndim == 2 else 1
    kind = resolve_ann(kind, len(x))
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
    elif kind == "ivf" and len(x) >= 39:
        nlist = ivf_lists(len(x))
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(seed)
        sample = x if len(x) <= 256 * nlist else x[np.sort(rng.choice(len(x), 256 * nlist, replace=False))]
        index.cp.seed = seed
        index.train(sample)
        index.nprobe = max(1, round(nlist * IVF_PROBE_FRACTION))
    else:  # exact, or too few vectors to train IVF lists
        index = faiss.IndexFlatIP(d)
    if len(x):
        index.add(x)
    return index


def faiss_kind(index: Any) -> str:
    """``"exact"``, ``"hnsw"`` or ``"ivf"``: the kind of a faiss index."""
    faiss = _faiss()
    if isinstance(index, faiss.IndexHNSW):
        return "hnsw"
    if isinstance(index, faiss.IndexIVF):
        return "ivf"
    return "exact"


class VectorIndex:
    """Top-k inner-product search over a float32 matrix: exact (faiss ``IndexFlatIP``,
    the default) or approximate (``kind="hnsw"`` / ``"ivf"``, see :func:`build_faiss`).

    The faiss index (given, read from ``faiss_path``, or built as ``kind``) is made at the
    first search, so reading an index's chunk list (``inspect``) does not import faiss.
    """

    def __init__(
        self,
        matrix: np.ndarray,
        faiss_index: Any = None,
        *,
        kind: str = "exact",
        faiss_path: Path | None = None,
    ) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._index = faiss_index
        self._path = faiss_path
        self._wanted = kind
        self._lock = threading.Lock()

    @property
    def index(self) -> Any:
        """The faiss index (read or built on first use)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._open()
        return self._index

    @property
    def kind(self) -> str:
        return faiss_kind(self.index)

    def _open(self) -> Any:
        faiss = _faiss()
        # one query at a time: a single thread avoids OpenMP spin-waits (p95 12.8 ms -> < 1 ms
        # for 6,119 x 384 when the other core is busy)
        faiss.omp_set_num_threads(1)
        found = None
        if self._path is not None and self._path.exists():
            try:
                found = faiss.read_index(str(self._path))
            except RuntimeError as exc:  # damaged, or removed while reading
                raise DamagedIndexError(
                    f"cannot read {self._path}; run `paretorag repair --index {self._path.parent.parent}`"
                ) from exc
            if found.ntotal != len(self.matrix):
                found = None  # out of step with the vectors: rebuild it in memory
        return found if found is not None else build_faiss(self.matrix, self._wanted)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def search(self, query: FloatArray, k: int) -> Scored:
        """The ``k`` most similar rows, best first (fewer if the index is smaller)."""
        k = min(k, len(self))
        if k <= 0:
            return Scored.empty()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        scores, rows = self.index.search(q, k)
        keep = rows[0] >= 0
        return Scored(rows[0][keep], scores[0][keep])

    def save(self, directory: Path, stem: str) -> None:
        """Write ``stem.npy`` and ``stem.faiss`` (each via a temporary file and rename)."""
        tmp = directory / f".{stem}.npy.tmp"
        tmpf = directory / f".{stem}.faiss.tmp"
        try:
            with disk_errors(directory / f"{stem}.npy"):
                directory.mkdir(parents=True, exist_ok=True)
                with open(tmp, "wb") as fh:
                    np.save(fh, self.matrix, allow_pickle=False)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, directory / f"{stem}.npy")
                try:
                    _faiss().write_index(self.index, str(tmpf))
                except RuntimeError as exc:  # faiss reports a failed write (e.g. disk full) this way
                    raise OSError(errno.EIO, str(exc).splitlines()[0], str(tmpf)) from exc
                os.replace(tmpf, directory / f"{stem}.faiss")
        finally:
            tmp.unlink(missing_ok=True)
            tmpf.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, stem: str, *, kind: str = "exact") -> VectorIndex:
        """The vectors and faiss index saved by :meth:`save` (a missing or stale faiss
        file is rebuilt in memory as ``kind``)."""
        npy = directory / f"{stem}.npy"
        try:
            matrix = np.load(npy, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DamagedIndexError(
                f"cannot read vectors {npy} ({exc}); run `paretorag repair --index {directory.parent}`"
            ) from exc
        return cls(matrix, kind=kind, faiss_path=directory / f"{stem}.faiss")
