"""Train a router from ``paretorag eval`` outputs (EA-GraphRAG §3.2.5, §3.3 Training and Routing).

Steps (:func:`train_router`):

1. **Evaluate** the dense and the graph method on each training subset with
   ``paretorag eval`` (retrieval only), or reuse the ``results.json`` already in the
   work folder. A subset may be sliced, ``popqa[400:]``: the whole subset is evaluated and
   only those questions are used (so the rest can be a test set).
2. **Split** each subset's questions, seeded, into a training and a validation part
   (``val_fraction``).
3. **Label disagreement cases** (§3.3): a question's quality ``z`` is ``label_metric``
   (default ``recall@5``, the fraction of gold passages in the first 5; questions
   without gold passages, such as the 797-question 2WikiMultihopQA set, fall back to
   ``context_recall@5``, the gold answer inside the first 5 passages). The offline
   answers are extractive, so retrieval stands in for the paper's QA correctness. A
   question is a training case when the two methods differ: ``y = 1`` when the graph
   method's ``z`` is higher, ``y = 0`` when dense's is; ties are left out. With a binary
   metric (``recall_all@5``) this is exactly the paper's ``z_rag XOR z_gr``.
4. **Select features** by mutual information with ``y`` (on quantile-discretized
   features, :func:`select_features`), keep the top ``n_features`` (85, §3.2.5), and
   z-score them with the training mean and standard deviation.
5. **Fit the adapter** (:func:`paretorag.training.router_fit.fit`), early stopping on the
   validation disagreement cases.
6. **Tune tau_low <= tau_high** on the validation split, *all* of its questions, for
   the composite ``J = mean quality - latency_weight * mean latency / graph latency``
   (§3.3 "a composite objective of validation accuracy and expected latency"; the
   weight is ours, 0.02 by default). A question's quality on each route is its dense,
   graph or fused (Eq. 8, computed offline from both retrieved lists with weights
   ``1 - s(q)`` and ``s(q)``) ``label_metric``; latency is the method's mean retrieval
   time, both for fusion. ``tau_single`` (routing without fusion) is tuned the same way.
7. **Write** the router folder (:class:`paretorag.retrieval.router.model.Router`).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..retrieval.router.features import FEATURE_NAMES, Featurizer
from ..retrieval.router.model import Router, route_for
from .router_cases import (
    Case,
    SubsetSpec,
    TrainSettings,
    fused_docs,
    load_cases,
    quality,
    run_or_reuse_evals,
    split,
)
from .router_fit import fit

ROUTER_VERSION = 2  # 2: trained against entity-walk


def discretize(x: np.ndarray, bins: int = 8) -> np.ndarray:
    """Each column cut at its own quantiles into at most ``bins`` levels (for discrete MI)."""
    out = np.zeros(x.shape, dtype=np.int64)
    for j in range(x.shape[1]):
        edges = np.unique(np.quantile(x[:, j], np.linspace(0, 1, bins + 1)[1:-1]))
        out[:, j] = np.searchsorted(edges, x[:, j], side="right")
    return out


def select_features(x: np.ndarray, y: np.ndarray, n: int, seed: int) -> tuple[list[int], np.ndarray]:
    """Top-``n`` columns by mutual information with ``y`` (§3.2.5), and every column's MI.

    MI is computed on quantile-discretized features (scikit-learn's
    ``mutual_info_classif`` with discrete features), which stays defined for the few
    disagreement cases a small training set gives; ties keep the featurizer's order.
    """
    from sklearn.feature_selection import mutual_info_classif

    if len(set(y.tolist())) < 2:
        mi = np.zeros(x.shape[1])
    else:
        mi = mutual_info_classif(discretize(x), y, discrete_features=True, random_state=seed)
    order = np.lexsort((np.arange(x.shape[1]), -mi))
    return sorted(int(i) for i in order[: min(n, x.shape[1])]), mi


@dataclass
class Tuned:
    tau_low: float
    tau_high: float
    tau_single: float
    table: dict[str, Any]


def tune_thresholds(
    scores: np.ndarray, cases: Sequence[Case], texts: dict[str, str], settings: TrainSettings
) -> Tuned:
    """Grid search of Eq. 2's thresholds for ``J`` (module docstring, step 6)."""
    n = len(cases)
    if n == 0:
        return Tuned(0.5, 0.5, 0.5, {"note": "no validation questions: thresholds left at 0.5"})
    zd = np.asarray([c.z_dense for c in cases])
    zg = np.asarray([c.z_graph for c in cases])
    zf = np.asarray(
        [
            quality(
                fused_docs(c.dense_docs, c.graph_docs, float(s), settings.rrf_k),
                c.gold,
                c.answers,
                texts,
                c.metric,
            )
            for c, s in zip(cases, scores, strict=True)
        ]
    )
    ld = float(np.mean([c.dense_s for c in cases]))
    lg = float(np.mean([c.graph_s for c in cases]))
    scale = lg if lg > 0 else 1.0
    lam = settings.latency_weight
    grid = np.round(np.linspace(0.0, 1.0, 41), 3)

    def objective(routes: Sequence[str]) -> tuple[float, float, float]:
        q = np.where([r == "dense" for r in routes], zd, np.where([r == "graph" for r in routes], zg, zf))
        lat = np.asarray([ld if r == "dense" else lg if r == "graph" else ld + lg for r in routes])
        return float(q.mean() - lam * lat.mean() / scale), float(q.mean()), float(lat.mean())

    best: tuple[float, float, float, float] | None = None  # (J, -latency, tau_low, tau_high)
    for i, lo in enumerate(grid):
        for hi in grid[i:]:
            j, _, lat = objective([route_for(float(s), float(lo), float(hi)) for s in scores])
            key = (round(j, 9), -lat, float(lo), float(hi))
            if best is None or key[:2] > best[:2]:
                best = key
    single: tuple[float, float, float] | None = None
    for t in grid:
        j, _, lat = objective([route_for(float(s), 0, 1, fusion=False, tau_single=float(t)) for s in scores])
        if single is None or (round(j, 9), -lat) > single[:2]:
            single = (round(j, 9), -lat, float(t))
    assert best is not None and single is not None  # the grids are not empty
    lo, hi, ts = best[2], best[3], single[2]
    routes = [route_for(float(s), lo, hi) for s in scores]
    table = {
        "n_questions": n,
        "latency_ms": {"dense": round(ld * 1000, 2), "graph": round(lg * 1000, 2)},
        "quality": {
            "dense_only": round(float(zd.mean()), 4),
            "graph_only": round(float(zg.mean()), 4),
            "fusion_all": round(float(zf.mean()), 4),
            "oracle": round(float(np.maximum(zd, zg).mean()), 4),
            "router": round(objective(routes)[1], 4),
            "router_no_fusion": round(
                objective([route_for(float(s), 0, 1, fusion=False, tau_single=ts) for s in scores])[1], 4
            ),
        },
        "objective": {
            "router": round(best[0], 5),
            "dense_only": round(objective(["dense"] * n)[0], 5),
            "graph_only": round(objective(["graph"] * n)[0], 5),
        },
        "route_share": {r: round(routes.count(r) / n, 4) for r in ("dense", "fusion", "graph")},
    }
    return Tuned(lo, hi, ts, table)


def _auc(scores: np.ndarray, y: np.ndarray) -> float | None:
    pos, neg = scores[y == 1], scores[y == 0]
    if not len(pos) or not len(neg):
        return None
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def train_router(
    data: Path | str,
    subsets: Sequence[str],
    out: Path | str,
    *,
    settings: TrainSettings | None = None,
    work: Path | str = ".eval-cache/router-work",
    cache: Path | str | None = None,
    embedder: str | None = None,
    embed_titles: bool = True,
    rerun: bool = False,
    command: str = "",
    log: Any = print,
) -> Router:
    """Evaluate, label, select, fit, tune and write a router (module docstring). Returns it."""
    s = settings or TrainSettings()
    if not subsets:
        raise ConfigError("give at least one training subset, e.g. --subsets musique_train,hotpotqa_train")
    if s.dense_method == s.graph_method:
        raise ConfigError("dense_method and graph_method must differ")
    data, work = Path(data), Path(work)
    specs = [SubsetSpec.parse(x) for x in subsets]
    t0 = time.perf_counter()
    results = run_or_reuse_evals(
        data, specs, s, work, cache=Path(cache) if cache else None, embedder=embedder,
        embed_titles=embed_titles, rerun=rerun, log=log,
    )  # fmt: skip
    cases: list[Case] = []
    texts: dict[str, str] = {}
    for spec in specs:
        got, t = load_cases(data, spec, results[spec.name], s)
        cases.extend(got)
        texts.update(t)
    split(cases, s.val_fraction, s.seed)
    log(f"featurizing {len(cases)} questions")
    raw = Featurizer().many([c.question for c in cases])
    train = [i for i, c in enumerate(cases) if not c.val and c.label is not None]
    val_dis = [i for i, c in enumerate(cases) if c.val and c.label is not None]
    val_all = [i for i, c in enumerate(cases) if c.val]
    if not train:
        raise ConfigError(
            f"no disagreement cases among the {sum(not c.val for c in cases)} training questions: "
            f"{s.dense_method} and {s.graph_method} retrieve equally well on all of them; add subsets"
        )
    y = np.asarray([cases[i].label for i in train], dtype=np.int64)
    cols, mi = select_features(raw[train], y, s.n_features, s.seed)
    mean = raw[train][:, cols].mean(axis=0)
    std = raw[train][:, cols].std(axis=0)
    std = np.where(std > 0, std, 1.0)

    def z(rows: list[int]) -> np.ndarray:
        return (raw[rows][:, cols] - mean) / std if rows else np.zeros((0, len(cols)))

    y_val = np.asarray([cases[i].label for i in val_dis], dtype=np.int64)
    log(f"training the adapter on {len(train)} disagreement cases ({int(y.sum())} graph wins)")
    adapter, fit_log = fit(z(train), y, z(val_dis), y_val, s.fit)
    router = Router([FEATURE_NAMES[i] for i in cols], mean, std, adapter)
    val_scores = router.score_features(raw[val_all]) if val_all else np.zeros(0)
    tuned = tune_thresholds(val_scores, [cases[i] for i in val_all], texts, s)
    router.tau_low, router.tau_high, router.tau_single = tuned.tau_low, tuned.tau_high, tuned.tau_single
    train_scores = router.score_features(raw[train])
    val_dis_scores = router.score_features(raw[val_dis]) if val_dis else np.zeros(0)
    per_subset = []
    for spec in specs:
        mine = [c for c in cases if c.subset == str(spec)]
        per_subset.append(
            {
                "subset": str(spec),
                "questions": len(mine),
                "validation": sum(c.val for c in mine),
                "disagreements": sum(c.label is not None for c in mine),
                "graph_wins": sum(c.label == 1 for c in mine),
                "metric": sorted({c.metric for c in mine}),
            }
        )
    top = np.argsort(-mi)[:10]
    router.meta = {
        "router_version": ROUTER_VERSION,
        "paper": "EA-GraphRAG (papers/ea-graphrag.txt) §3.2-3.3, Eq. 1-2",
        "dense_method": s.dense_method,
        "graph_method": s.graph_method,
        "rrf_k": s.rrf_k,
        "label_metric": s.label_metric,
        "fallback_metric": s.fallback_metric,
        "latency_weight": s.latency_weight,
        "val_fraction": s.val_fraction,
        "seed": s.seed,
        "embedder": embedder or "default",
        "embed_titles": embed_titles,
        "trained_on": per_subset,
        "n_raw_features": len(FEATURE_NAMES),
        "top_mutual_information": {FEATURE_NAMES[int(i)]: round(float(mi[i]), 4) for i in top},
        "fit": {**s.fit.to_json(), **fit_log},
        "metrics": {
            "train_auc": _auc(train_scores, y),
            "val_auc": _auc(val_dis_scores, y_val),
            "val_accuracy": (
                round(float(((val_dis_scores >= 0.5) == (y_val == 1)).mean()), 4) if len(y_val) else None
            ),
            "n_train": len(train),
            "n_val_disagreements": len(val_dis),
        },
        "tuning": tuned.table,
        "command": command,
        "train_seconds": round(time.perf_counter() - t0, 1),
    }
    router.save(out)
    log(f"wrote {out}: tau_low={router.tau_low} tau_high={router.tau_high} tau_single={router.tau_single}")
    return router


def command_line(argv: Sequence[str]) -> str:
    """The shell command that reproduces a run (stored in router.json)."""
    return "paretorag " + " ".join(shlex.quote(a) for a in argv)


__all__ = ["Case", "SubsetSpec", "TrainSettings", "fused_docs", "train_router", "tune_thresholds"]
