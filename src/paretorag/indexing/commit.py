"""Committing: the chunk-vector files (stage 3), then the manifest, replaced atomically
(stage 5: the commit point).

Files are written first under names no committed manifest uses yet, so that a run
killed anywhere before :func:`commit_manifest` saves the manifest leaves the previous
commit loadable; the crash tests hold a run at the named points (``before-commit``,
:func:`paretorag.cancel.pause_point`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cancel import pause_point
from ..storage.backend import IndexBackend
from ..storage.manifest import Manifest
from ..storage.store import Store
from ..storage.vectors import VectorIndex
from .plan import vector_stem

CONFIG_KEY = "manifest.config"  # the committed configuration, kept in SQLite too


def write_vectors(
    backend: IndexBackend,
    committed: str | None,
    stem: str,
    vectors: np.ndarray,
    ann: str,
    ids: Sequence[str],
) -> float | None:
    """Save the chunk vectors as ``stem`` unless the ``committed`` stem is the same and all
    of it is there; returns the seconds it took, or None when nothing was written."""
    if committed == stem and backend.has_vectors(stem):
        return None
    t1 = time.perf_counter()
    backend.save_vectors(stem, VectorIndex(vectors, kind=ann), ids)
    return time.perf_counter() - t1


def commit_manifest(
    backend: IndexBackend,
    m: Manifest,
    store: Store,
    *,
    fingerprint: str,
    stem: str,
    structures: dict[str, dict[str, Any]],
    models: dict[str, Any],
    vector_dim: int,
    usage: dict[str, Any],
    model_calls: dict[str, dict[str, int]],
    timings: dict[str, float],
) -> None:
    """Record this run in the manifest ``m`` and save it: the commit point. Then purge the
    documents marked deleted and collect the files no manifest or reader names."""
    if (m.vectors or "").startswith(vector_stem(fingerprint, titles=False)):
        # the chunks are unchanged: structures of methods no longer configured (dropped
        # by replace_methods) stay valid and are kept; the first change of the chunks drops them
        for name, info in m.structures.items():
            if name not in structures and backend.has_structure(info["dir"]):
                structures[name] = info
    m.vectors = stem
    m.structures = structures
    m.counts = {**store.counts(), "vector_dim": vector_dim}
    m.models = models
    m.usage = usage
    # model calls of the stages that ran this time (a cache-only stage keeps its old figures)
    m.model_calls = {**m.model_calls, **model_calls}
    # the latest time each stage did real work (a cache-only pass keeps the old figure)
    m.timings = {**m.timings, **{k: round(v, 4) for k, v in timings.items()}}
    m.generation += 1
    # a second copy of the configuration, for `paretorag repair` if both manifest files are lost
    store.put_kv(CONFIG_KEY, {"config": m.to_json()["config"], "models": m.models})
    pause_point("before-commit")
    backend.save_manifest(m)
    store.purge_deleted()
    backend.collect_garbage(stem, [s["dir"] for s in structures.values()])
