"""Chunk vectors on disk (``.npy``) with an exact inner-product faiss index.

Vectors are L2-normalized, so inner product is cosine similarity.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from .diskerrors import disk_errors
from .errors import DamagedIndexError, MissingDependencyError
from .types import FloatArray, Scored


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise MissingDependencyError("vector search needs faiss: pip install faiss-cpu") from exc
    return faiss


class VectorIndex:
    """Exact top-k inner-product search over a float32 matrix (faiss ``IndexFlatIP``)."""

    def __init__(self, matrix: np.ndarray, faiss_index: Any = None) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if faiss_index is None:
            faiss = _faiss()
            faiss_index = faiss.IndexFlatIP(self.matrix.shape[1] if self.matrix.ndim == 2 else 1)
            if len(self.matrix):
                faiss_index.add(self.matrix)
        self._index = faiss_index
        # one query at a time: a single thread avoids OpenMP spin-waits (p95 12.8 ms -> < 1 ms
        # for 6,119 x 384 when the other core is busy)
        _faiss().omp_set_num_threads(1)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def search(self, query: FloatArray, k: int) -> Scored:
        """The ``k`` most similar rows, best first (fewer if the index is smaller)."""
        k = min(k, len(self))
        if k <= 0:
            return Scored.empty()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        scores, rows = self._index.search(q, k)
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
                    _faiss().write_index(self._index, str(tmpf))
                except RuntimeError as exc:  # faiss reports a failed write (e.g. disk full) this way
                    raise OSError(errno.EIO, str(exc).splitlines()[0], str(tmpf)) from exc
                os.replace(tmpf, directory / f"{stem}.faiss")
        finally:
            tmp.unlink(missing_ok=True)
            tmpf.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, stem: str) -> VectorIndex:
        npy = directory / f"{stem}.npy"
        try:
            matrix = np.load(npy, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DamagedIndexError(
                f"cannot read vectors {npy} ({exc}); run `paretorag repair --index {directory.parent}`"
            ) from exc
        fpath = directory / f"{stem}.faiss"
        try:
            faiss_index = _faiss().read_index(str(fpath)) if fpath.exists() else None
        except RuntimeError as exc:  # damaged, or removed while reading
            raise DamagedIndexError(
                f"cannot read {fpath}; run `paretorag repair --index {directory.parent}`"
            ) from exc
        if faiss_index is not None and faiss_index.ntotal != len(matrix):
            faiss_index = None  # out of step with the vectors: rebuild it in memory
        return cls(matrix, faiss_index)
