"""Routing thresholds (Eq. 2), complexity-aware wRRF by hand (Eq. 8-9), threshold tuning, subset slices."""

from __future__ import annotations

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.retrieval.operators import get_operator
from paretorag.retrieval.query import State
from paretorag.retrieval.router.model import route_for
from paretorag.training.router import Case, SubsetSpec, TrainSettings, fused_docs, tune_thresholds
from paretorag.types import Scored


@pytest.mark.parametrize(
    ("score", "route"),
    [
        (0.0, "dense"),
        (0.299, "dense"),
        (0.3, "fusion"),
        (0.5, "fusion"),
        (0.699, "fusion"),
        (0.7, "graph"),
        (1.0, "graph"),
    ],
)
def test_thresholds_pick_the_path(score: float, route: str) -> None:
    assert route_for(score, 0.3, 0.7) == route  # s < tau_L dense, s >= tau_H graph, fusion between


def test_without_fusion_one_threshold_splits() -> None:
    assert route_for(0.39, 0.3, 0.7, fusion=False, tau_single=0.4) == "dense"
    assert route_for(0.4, 0.3, 0.7, fusion=False, tau_single=0.4) == "graph"
    assert route_for(0.5, 0.5, 0.5) == "graph"  # tau_L == tau_H: no fusion region


def _state(s: float) -> State:
    state = State("q")
    state.put("dense", Scored(np.array([3, 1, 2]), np.array([0.9, 0.8, 0.7])))
    state.put("graph", Scored(np.array([2, 4]), np.array([0.5, 0.4])))
    state.put("complexity", Scored(np.array([0]), np.array([s]), "complexity"))
    return state


def test_wrrf_by_hand() -> None:
    out = get_operator("ea-graphrag.wrrf", k=10)(None, _state(0.25))  # type: ignore[arg-type]
    # dense weight 0.75, graph weight 0.25, k = 60, 1-based ranks
    expect = {
        3: 0.75 / 61,
        1: 0.75 / 62,
        2: 0.75 / 63 + 0.25 / 61,
        4: 0.25 / 62,
    }
    assert out.ids.tolist() == [2, 3, 1, 4]
    np.testing.assert_allclose(out.scores, [expect[i] for i in out.ids.tolist()], rtol=1e-6)
    # a complex question: graph weight 0.9 puts the graph list first
    assert get_operator("ea-graphrag.wrrf", k=2)(None, _state(0.9)).ids.tolist() == [2, 4]  # type: ignore[arg-type]
    # a fixed weight overrides s(q); s = 0 is dense alone
    assert get_operator("ea-graphrag.wrrf", weight=0.0)(None, _state(0.9)).ids.tolist() == [3, 1, 2]  # type: ignore[arg-type]


def test_wrrf_needs_its_inputs() -> None:
    state = State("q")
    state.put("dense", Scored(np.array([1]), np.array([1.0])))
    with pytest.raises(ConfigError, match="complexity"):
        get_operator("ea-graphrag.wrrf")(None, state)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="weight"):
        get_operator("ea-graphrag.wrrf", weight=1.5)(None, _state(0.5))  # type: ignore[arg-type]


def test_offline_fusion_equals_the_operator() -> None:
    docs = {0: "a", 1: "b", 2: "c", 3: "d", 4: "e"}
    out = get_operator("ea-graphrag.wrrf", k=10)(None, _state(0.25))  # type: ignore[arg-type]
    assert fused_docs(["d", "b", "c"], ["c", "e"], 0.25) == [docs[i] for i in out.ids.tolist()]


def _case(qid: str, z_dense: float, z_graph: float) -> Case:
    return Case("toy", qid, "q", ["g1"], ["x"], ["g1"] if z_dense else ["n1"], ["g1"] if z_graph else ["n2"],
                z_dense, z_graph, "recall@5", 0.01, 0.1, val=True)  # fmt: skip


def test_thresholds_are_tuned_for_quality_then_latency() -> None:
    # low scores: dense is right; high scores: graph is right
    cases = [_case(f"d{i}", 1.0, 0.0) for i in range(6)] + [_case(f"g{i}", 0.0, 1.0) for i in range(4)]
    scores = np.array([0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.8, 0.85, 0.9, 0.95])
    tuned = tune_thresholds(scores, cases, {}, TrainSettings(latency_weight=0.02))
    assert 0.35 < tuned.tau_low <= tuned.tau_high <= 0.8 and 0.35 < tuned.tau_single <= 0.8
    assert tuned.table["quality"]["router"] == 1.0 == tuned.table["quality"]["oracle"]
    assert tuned.table["quality"]["dense_only"] == 0.6 and tuned.table["route_share"]["graph"] == 0.4
    # when graph never helps, the latency term sends everything to dense
    flat = [_case(f"d{i}", 1.0, 1.0) for i in range(10)]
    tuned = tune_thresholds(scores, flat, {}, TrainSettings())
    assert tuned.table["route_share"]["dense"] == 1.0


def test_subset_slices() -> None:
    assert SubsetSpec.parse("popqa[400:]") == SubsetSpec("popqa", 400, None)
    assert SubsetSpec.parse("musique_train") == SubsetSpec("musique_train")
    assert str(SubsetSpec.parse("popqa[:200]")) == "popqa[:200]"
    with pytest.raises(ConfigError, match="NAME"):
        SubsetSpec.parse("popqa[1:2")


def test_mutual_information_picks_the_informative_features() -> None:
    from paretorag.training.router import discretize, select_features

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6))
    y = (x[:, 4] > 0.2).astype(np.int64)
    x[:, 1] = 3.0  # constant: no information
    cols, mi = select_features(x, y, 2, seed=0)
    assert int(np.argmax(mi)) == 4 and 4 in cols and 1 not in cols and mi[1] == 0.0
    assert discretize(x).max() <= 7 and len(set(discretize(x)[:, 1].tolist())) == 1
