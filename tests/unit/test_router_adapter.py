"""The MLP adapter (EA-GraphRAG §3.3): it learns, its numpy pass equals torch's, and a saved router reloads bit for bit."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.retrieval.router.adapter import Adapter
from paretorag.retrieval.router.features import FEATURE_NAMES
from paretorag.retrieval.router.model import Router, load_router
from paretorag.training.router_fit import FitSettings, fit, torch_logits

pytest.importorskip("torch")


def _toy(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3 * n, 12))
    margin = x[:, 0] - 0.8 * x[:, 3]
    x = x[np.abs(margin) > 0.5][:n]  # separable with a margin
    return x, (x[:, 0] - 0.8 * x[:, 3] > 0).astype(np.int64)


@pytest.fixture(scope="module")
def trained() -> tuple[Adapter, dict]:
    x, y = _toy(240, 0)
    xv, yv = _toy(80, 1)
    return fit(x, y, xv, yv, FitSettings(epochs=80, patience=20, seed=3))


def test_learns_a_separable_set(trained: tuple[Adapter, dict]) -> None:
    adapter, log = trained
    x, y = _toy(400, 2)  # unseen
    acc = float(((adapter.scores(x) >= 0.5) == (y == 1)).mean())
    assert acc >= 0.9, acc  # chance is 0.5
    assert log["epochs_run"] >= log["best_epoch"] + 1 and log["best_val_loss"] < 0.6


def test_training_is_seeded() -> None:
    x, y = _toy(60, 0)
    s = FitSettings(epochs=5, seed=7)
    a, _ = fit(x, y, x[:10], y[:10], s)
    b, _ = fit(x, y, x[:10], y[:10], s)
    c, _ = fit(x, y, x[:10], y[:10], replace(s, seed=8))
    assert all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert not np.array_equal(a.weights["head.weight"], c.weights["head.weight"])


def test_architecture_and_numpy_forward_match_torch(trained: tuple[Adapter, dict]) -> None:
    adapter, _ = trained
    w = adapter.weights
    assert w["attn.weight"].shape == (12, 12)  # feature attention
    assert [w[f"layers.{i}.weight"].shape[0] for i in range(3)] == [256, 128, 64]
    assert [w[f"blocks.{i}.weight"].shape for i in range(3)] == [(256, 256), (128, 128), (64, 64)]
    assert w["out_attn.weight"].shape == (64, 64) and w["head.weight"].shape == (1, 64)
    x, _ = _toy(50, 4)
    np.testing.assert_allclose(adapter.logits(x), torch_logits(w, x), rtol=1e-4, atol=1e-5)
    s = adapter.scores(x)
    assert np.all((s > 0) & (s < 1))


def _router(adapter: Adapter) -> Router:
    names = list(FEATURE_NAMES[:12])
    rng = np.random.default_rng(0)
    return Router(names, rng.normal(size=12), rng.uniform(0.5, 2, size=12), adapter, 0.3, 0.7, 0.5,
                  {"router_version": 1, "trained_on": [{"subset": "toy"}]})  # fmt: skip


def test_saved_router_reloads_bit_identically(tmp_path, trained: tuple[Adapter, dict]) -> None:
    router = _router(trained[0])
    router.save(tmp_path / "r")
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["router.json", "weights.safetensors"]
    again = Router.load(tmp_path / "r")
    assert set(again.adapter.weights) == set(router.adapter.weights)
    for k, v in router.adapter.weights.items():
        assert again.adapter.weights[k].dtype == np.float32 and np.array_equal(again.adapter.weights[k], v)
    assert np.array_equal(again.mean, router.mean) and np.array_equal(again.std, router.std)
    assert (again.tau_low, again.tau_high, again.tau_single) == (0.3, 0.7, 0.5)
    assert again.selected == router.selected and again.meta["trained_on"] == [{"subset": "toy"}]
    raw = np.random.default_rng(5).normal(size=(20, len(FEATURE_NAMES)))
    assert np.array_equal(again.score_features(raw), router.score_features(raw))
    assert load_router(tmp_path / "r") is load_router(tmp_path / "r")


def test_bad_router_folders_name_the_fix(tmp_path, trained: tuple[Adapter, dict]) -> None:
    with pytest.raises(ConfigError, match="train-router"):
        Router.load(tmp_path / "missing")
    folder = _router(trained[0]).save(tmp_path / "r")
    cfg = json.loads((folder / "router.json").read_text())
    (folder / "router.json").write_text(json.dumps({**cfg, "featurizer_version": 99}))
    with pytest.raises(ConfigError, match="retrain"):
        Router.load(folder)
    (folder / "router.json").write_text(json.dumps({**cfg, "features": ["no.such_feature"]}))
    with pytest.raises(ConfigError, match="retrain"):
        Router.load(folder)
    (folder / "router.json").write_text(json.dumps({**cfg, "tau_low": 0.9, "tau_high": 0.1}))
    with pytest.raises(ConfigError, match="tau_low"):
        Router.load(folder)
