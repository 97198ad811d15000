"""RAPTOR's tree updated with the chunk set (paretorag.graphs.raptor_update): an insert joins
the nearest clusters and re-summarizes only the touched branches, a delete leaves its clusters,
drift past the limit and ``rebuild`` build afresh, exactly as a fresh build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paretorag import RAG
from paretorag.errors import ConfigError
from paretorag.graphs.base import get_builder
from paretorag.graphs.graph import graph_from_structure
from paretorag.graphs.raptor_update import DRIFT_LIMIT
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.store import ChunkTable
from paretorag.storage.structures import StructureData
from paretorag.types import Chunk, Document

from ..builders_util import Ctx
from .test_builders_raptor_tree import TEXTS, summarizer

SETTINGS: dict[str, Any] = {"max_clusters": 8, "stop_size": 3}


def _table(rows: list[int]) -> ChunkTable:
    """Chunks of TEXTS by index, with ids that stay the same whatever the other rows are."""
    return ChunkTable.from_chunks(
        [Chunk(f"c{i}", f"d{i}", 0, 0, len(TEXTS[i]), TEXTS[i], len(TEXTS[i].split()), "") for i in rows]
    )


class PrevCtx(Ctx):
    def __init__(self, chunks: ChunkTable, llm: Any, prev: StructureData | None) -> None:
        super().__init__(chunks, llm)
        self.prev = prev

    def previous(self, name: str) -> StructureData | None:
        return self.prev


def _build(rows: list[int], prev: StructureData | None = None) -> tuple[StructureData, Any]:
    llm = summarizer()
    return get_builder("raptor_tree", **SETTINGS).build(PrevCtx(_table(rows), llm, prev)), llm  # type: ignore[arg-type]


def _check_tree(data: StructureData, rows: list[int]) -> None:
    """Every chunk is a leaf, every summary has children one layer down and covers exactly
    the union of their chunks, and every chunk is covered by a top-layer node."""
    g = graph_from_structure(data)
    layer = data.arrays["node_layer"]
    n = len(rows)
    assert g.names[:n] == [f"c{i}" for i in rows] and list(layer[:n]) == [0] * n
    assert g.node_vectors is not None and g.node_vectors.shape[0] == g.n_nodes
    adj, cov = g.adjacency.tocsr(), g.node_chunks.tocsr()
    for v in range(n, g.n_nodes):
        kids = [int(u) for u in adj[v].indices if layer[u] == layer[v] - 1]
        assert kids, f"summary {g.names[v]} has no children"
        want = set().union(*(set(cov[u].indices.tolist()) for u in kids))
        assert set(cov[v].indices.tolist()) == want
    top = np.flatnonzero(layer == layer.max())
    assert set(cov[top].indices.tolist()) >= set(range(n)) - _orphans(data)


def _orphans(data: StructureData) -> set[int]:
    """Chunks no layer-1 cluster took (soft assignment below the threshold), as in RAPTOR."""
    g = graph_from_structure(data)
    layer = data.arrays["node_layer"]
    cov = g.node_chunks.tocsr()
    covered = set(cov[np.flatnonzero(layer == 1)].indices.tolist())
    return set(range(int((layer == 0).sum()))) - covered


def test_insert_joins_nearest_clusters_and_resummarizes_only_touched_branches() -> None:
    base, fresh_llm = _build(list(range(27)))
    grown, llm = _build(list(range(30)), base)
    info = grown.meta["summary"]
    assert info["mode"] == "incremental" and info["added_leaves"] == 3 and info["removed_leaves"] == 0
    assert 0 < info["llm_calls"] == len(llm.requests) < len(fresh_llm.requests)
    _check_tree(grown, list(range(30)))
    g = graph_from_structure(grown)
    layer = grown.arrays["node_layer"]
    cov = g.node_chunks.tocsr()
    top = np.flatnonzero(layer == layer.max())
    for new in (27, 28, 29):  # the new chunks are reachable from the top of the tree
        assert new in set(cov[top].indices.tolist())
    assert grown.meta["drift"] == {"base_leaves": 27, "changed_leaves": 3}
    # untouched summaries keep their text; each re-summarized one was asked with its new members
    before = graph_from_structure(base)
    assert len(set(g.descriptions[30:]) & set(before.descriptions[27:])) > 0


def test_delete_removes_the_chunks_contributions() -> None:
    rows = list(range(30))
    base, _ = _build(rows)
    gone = {4, 17}
    kept = [i for i in rows if i not in gone]
    shrunk, llm = _build(kept, base)
    assert shrunk.meta["summary"]["mode"] == "incremental"
    assert shrunk.meta["summary"]["removed_leaves"] == 2
    _check_tree(shrunk, kept)
    g = graph_from_structure(shrunk)
    assert not {f"c{i}" for i in gone} & set(g.names)
    assert g.node_chunks.shape[1] == len(kept)
    # no summary written now read a deleted chunk's text
    asked = [t for r in llm.requests for t in r.task.texts]
    assert asked and not any(TEXTS[i] in t for i in gone for t in asked)


def test_drift_past_the_limit_builds_afresh_like_a_fresh_build() -> None:
    base, _ = _build(list(range(20)))
    n_new = int(DRIFT_LIMIT * 20) + 1
    rows = list(range(20 + n_new))
    rebuilt, _ = _build(rows, base)
    fresh, _ = _build(rows)
    assert rebuilt.meta["summary"]["mode"] == "full"
    assert rebuilt.meta == fresh.meta
    assert rebuilt.arrays.keys() == fresh.arrays.keys()
    for k in fresh.arrays:
        np.testing.assert_array_equal(rebuilt.arrays[k], fresh.arrays[k], err_msg=k)


def test_drift_accumulates_across_updates() -> None:
    base, _ = _build(list(range(24)))
    one, _ = _build(list(range(27)), base)  # 3 of 24: 12.5%
    assert one.meta["summary"]["mode"] == "incremental"
    two, _ = _build(list(range(30)), one)  # 6 of 24 since the full build: 25%
    assert two.meta["summary"]["mode"] == "full" and two.meta["drift"] == {
        "base_leaves": 30,
        "changed_leaves": 0,
    }


def test_other_settings_build_afresh() -> None:
    base, _ = _build(list(range(27)))
    llm = summarizer()
    other = get_builder("raptor_tree", **{**SETTINGS, "threshold": 0.2})
    data = other.build(PrevCtx(_table(list(range(28))), llm, base))  # type: ignore[arg-type]
    assert data.meta["summary"]["mode"] == "full"


def _docs(lo: int, hi: int) -> list[Document]:
    return [Document(f"d{i}", f"doc {i}", TEXTS[i], "test", presplit=True) for i in range(lo, hi)]


def test_rag_insert_updates_and_rebuild_forces_a_fresh_tree(tmp_path: Path) -> None:
    opts: dict[str, Any] = {
        "methods": ["raptor"],
        "embedder": HashEmbedder(32),
        "builders": {"raptor_tree": SETTINGS},
    }
    with RAG.open(tmp_path / "grown", **opts) as rag:
        rag.index(_docs(0, 27))
        rag.insert(_docs(27, 29))
        assert rag.manifest.structures["raptor_tree"]["mode"] == "incremental"
        with pytest.raises(ConfigError, match="cannot rebuild 'nope'"):
            rag.build(rebuild=["nope"])
        rag.build(rebuild=["raptor_tree"])  # same chunks: built afresh all the same
        assert rag.manifest.structures["raptor_tree"]["mode"] == "full"
        rebuilt = rag.manifest.structures["raptor_tree"]
    with RAG.open(tmp_path / "fresh", **opts) as fresh:
        fresh.index(_docs(0, 29))
        info = fresh.manifest.structures["raptor_tree"]
    assert {k: v for k, v in rebuilt.items() if k != "seconds"} == {
        k: v for k, v in info.items() if k != "seconds"
    }
