"""RAPTOR's tree (RAPTOR §3; unified framework §4 "Tree"): layers, soft clusters, coverage, storage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.graphs.base import get_builder
from paretorag.graphs.graph import graph_from_structure
from paretorag.graphs.raptor import cluster_layer
from paretorag.graphs.tree import SUMMARY_PROMPT
from paretorag.providers.base import Request
from paretorag.providers.llm import ExtractiveLLM, FakeLLM

from ..builders_util import Ctx, round_trip, table

TOPICS = {
    "sea": "The sea ship sailed across the ocean waves with sailors and fish.",
    "war": "The army soldiers fought the battle with swords and cannons.",
    "food": "The cook baked bread and soup with butter and salt in the kitchen.",
}
TEXTS = [f"{TOPICS[t]} Part {i} of the {t} story." for i in range(10) for t in TOPICS]


def summarizer() -> FakeLLM:
    def reply(req: Request) -> str:
        words = req.task.texts[0].split()[:6]
        return "Summary: " + " ".join(words) + f" ({len(req.task.texts)} parts)."

    return FakeLLM(reply)


def test_layers_coverage_and_vectors(tmp_path: Path) -> None:
    llm = summarizer()
    data = get_builder("raptor_tree", max_clusters=8, stop_size=3).build(Ctx(table(TEXTS), llm))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    n = len(TEXTS)
    layer = data.arrays["node_layer"]
    n_sum = g.n_nodes - n
    assert n_sum == len(llm.requests) == data.meta["summary"]["llm_calls"] > 0
    assert g.kinds == ["chunk"] * n + ["summary"] * n_sum and g.names[n].startswith("raptor:L1:")
    assert g.descriptions[:n] == TEXTS and g.node_vectors is not None and g.node_vectors.shape[0] == g.n_nodes
    assert np.array_equal(g.node_chunks[:n].toarray(), np.eye(n))
    # a summary covers exactly the union of its children's chunks; children sit one layer down
    adj = g.adjacency.tocsr()
    for v in range(n, g.n_nodes):
        kids = [int(u) for u in adj[v].indices if layer[u] == layer[v] - 1]
        assert kids
        want = set().union(*(set(g.node_chunks[u].indices.tolist()) for u in kids))
        assert set(g.node_chunks[v].indices.tolist()) == want
    # the shared prompt of the summary tree
    assert llm.requests[0].messages[-1].content.startswith(SUMMARY_PROMPT.split("{text}")[0])
    assert data.meta["summary"]["layers"] == int(layer.max()) <= 5


def test_stop_size_and_max_layers() -> None:
    d = get_builder("raptor_tree", max_clusters=8, stop_size=len(TEXTS)).build(
        Ctx(table(TEXTS), summarizer())
    )  # type: ignore[arg-type]
    assert d.meta["summary"]["summaries"] == 0
    d1 = get_builder("raptor_tree", max_clusters=8, stop_size=1, max_layers=1).build(
        Ctx(table(TEXTS), summarizer())
    )  # type: ignore[arg-type]
    assert int(d1.arrays["node_layer"].max()) == 1


def test_offline_extractive_summaries_and_determinism() -> None:
    a = get_builder("raptor_tree", max_clusters=8, stop_size=3).build(Ctx(table(TEXTS), ExtractiveLLM()))  # type: ignore[arg-type]
    b = get_builder("raptor_tree", max_clusters=8, stop_size=3).build(Ctx(table(TEXTS), ExtractiveLLM()))  # type: ignore[arg-type]
    assert a.meta["summary"] == b.meta["summary"]
    assert np.array_equal(a.arrays["adj_indices"], b.arrays["adj_indices"])
    g = graph_from_structure(a)
    assert a.meta["summary"]["summaries"] > 0 and all(g.descriptions[len(TEXTS) :])


def test_soft_clusters_separate_topics() -> None:
    rng = np.random.default_rng(0)
    centers = np.eye(3, 16) * 5
    x = np.vstack([c + 0.1 * rng.normal(size=(20, 16)) for c in centers]).astype(np.float32)
    clusters = cluster_layer(x, dim=10, max_clusters=10, threshold=0.1)
    groups = sorted(tuple(sorted({int(i) // 20 for i in c})) for c in clusters)
    assert all(len(g) == 1 for g in groups) and {g[0] for g in groups} == {0, 1, 2}


@pytest.mark.parametrize(
    ("params", "word"), [({"threshold": 2}, "threshold"), ({"max_layers": 0}, "max_layers")]
)
def test_bad_settings(params: dict[str, object], word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        get_builder("raptor_tree", max_clusters=8, **params).build(Ctx(table(TEXTS), summarizer()))  # type: ignore[arg-type]
