"""The router's training cases (EA-GraphRAG §3.3, steps 1-3 of :mod:`paretorag.training.router`).

Both methods are evaluated on each subset with ``paretorag eval`` (or the results a
previous run wrote are reused); each question gets both methods' ranked documents and
their quality under the label metric, and a seeded share of each subset is kept for
validation. A question is a disagreement case when the qualities differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..eval import metrics as M
from ..kernels.rank import RRF_K, rrf
from ..types import Scored
from .router_fit import FitSettings

_SLICE = re.compile(r"^(?P<name>[^\[\]]+)(\[(?P<start>\d*):(?P<stop>\d*)\])?$")


@dataclass(frozen=True)
class SubsetSpec:
    """``name`` or ``name[start:stop]`` (questions of the subset, in file order)."""

    name: str
    start: int | None = None
    stop: int | None = None

    @classmethod
    def parse(cls, text: str) -> SubsetSpec:
        m = _SLICE.match(text.strip())
        if not m:
            raise ConfigError(f"subset {text!r}: write NAME or NAME[START:STOP], e.g. popqa[400:]")
        start, stop = m.group("start"), m.group("stop")
        return cls(m.group("name"), int(start) if start else None, int(stop) if stop else None)

    def __str__(self) -> str:
        if self.start is None and self.stop is None:
            return self.name
        return f"{self.name}[{self.start if self.start is not None else ''}:{self.stop if self.stop is not None else ''}]"


@dataclass
class Case:
    """One question with both methods' retrievals (from ``results.json`` records)."""

    subset: str
    qid: str
    question: str
    gold: list[str]
    answers: list[str]
    dense_docs: list[str]
    graph_docs: list[str]
    z_dense: float
    z_graph: float
    metric: str
    dense_s: float
    graph_s: float
    val: bool = False

    @property
    def label(self) -> int | None:
        if self.z_graph > self.z_dense:
            return 1
        if self.z_graph < self.z_dense:
            return 0
        return None


@dataclass
class TrainSettings:
    """Settings of :func:`paretorag.training.router.train_router` (see its module docstring)."""

    dense_method: str = "vanilla"
    graph_method: str = "entity-walk"
    label_metric: str = "recall@5"
    fallback_metric: str = "context_recall@5"
    n_features: int = 85
    val_fraction: float = 0.25
    latency_weight: float = 0.02
    rrf_k: int = RRF_K
    ks: tuple[int, ...] = (1, 2, 5, 10)
    seed: int = 0
    fit: FitSettings = field(default_factory=FitSettings)


def _metric_k(metric: str) -> int:
    m = re.search(r"@(\d+)$", metric)
    if not m:
        raise ConfigError(f"label metric {metric!r} must end in @K, e.g. recall@5")
    return int(m.group(1))


def quality(
    docs: Sequence[str], case_gold: Sequence[str], answers: Sequence[str], texts: dict[str, str], metric: str
) -> float:
    """``metric`` of one ranked document list (recall@k, recall_all@k, recall_any@k, context_recall@k)."""
    k = _metric_k(metric)
    if metric.startswith("context_recall@"):
        return M.context_recall([texts.get(d, "") for d in M.first_distinct(docs)[:k]], answers)
    r = M.recall_at_k(docs, case_gold, k)
    if r is None:
        raise ConfigError(f"{metric} needs gold passages")
    kind = {"recall": "fraction", "recall_all": "all", "recall_any": "any"}.get(metric.split("@")[0])
    if kind is None:
        raise ConfigError(
            f"unknown label metric {metric!r}; use recall@K, recall_all@K, recall_any@K or context_recall@K"
        )
    return float(r[kind])


def fused_docs(dense: Sequence[str], graph: Sequence[str], s: float, rrf_k: int = RRF_K) -> list[str]:
    """Eq. 8-9 on document lists: ``(1 - s) / (k + r_dense) + s / (k + r_graph)``, best first (ties: first seen)."""
    rows: dict[
        str, int
    ] = {}  # documents numbered in first-seen order, so the kernel's row ties are that order
    rankings = []
    for docs in (dense, graph):
        ids = [rows.setdefault(d, len(rows)) for d in M.first_distinct(docs)]
        rankings.append(Scored(np.array(ids, dtype=np.int64), np.zeros(len(ids), dtype=np.float32), "doc"))
    names = list(rows)
    return [names[r] for r in rrf(rankings, [1.0 - s, s], k=rrf_k).ids.tolist()]


def run_or_reuse_evals(
    data: Path,
    specs: Sequence[SubsetSpec],
    settings: TrainSettings,
    work: Path,
    *,
    cache: Path | None,
    embedder: str | None,
    embed_titles: bool,
    rerun: bool,
    log: Any = print,
) -> dict[str, Path]:
    """``results.json`` of the dense and graph methods per subset (evaluated once, then reused)."""
    from ..eval.runner import run_eval

    methods = [settings.dense_method, settings.graph_method]
    out: dict[str, Path] = {}
    for spec in specs:
        if spec.name in out:
            continue
        folder = work / spec.name
        path = folder / "results.json"
        if path.is_file() and not rerun:
            payload = json.loads(path.read_text(encoding="utf-8"))
            if all(m in payload.get("methods", {}) for m in methods):
                log(f"reusing {path}")
                out[spec.name] = path
                continue
        log(f"evaluating {', '.join(methods)} on {spec.name} (retrieval only)")
        run_eval(
            data,
            spec.name,
            methods,
            ks=settings.ks,
            retrieval_only=True,
            out_dir=folder,
            cache_dir=cache if cache is not None else work / "cache",
            embedder=embedder,
            embed_titles=embed_titles,
            seed=settings.seed,
            plots=False,
        )
        out[spec.name] = path
    return out


def load_cases(
    data: Path, spec: SubsetSpec, results: Path, settings: TrainSettings
) -> tuple[list[Case], dict[str, str]]:
    """The subset's questions (sliced) with both methods' lists and qualities; passage texts by id."""
    from ..eval.loaders import load_dataset

    payload = json.loads(results.read_text(encoding="utf-8"))
    qs = payload.get("questions", {})
    for m in (settings.dense_method, settings.graph_method):
        if m not in qs:
            raise ConfigError(f"{results} has no per-question records of {m!r}; run with --rerun")
    dense = {r["qid"]: r for r in qs[settings.dense_method]}
    graph = {r["qid"]: r for r in qs[settings.graph_method]}
    ds = load_dataset(data, spec.name)
    texts = {p.key: p.text for p in ds.passages}
    cases: list[Case] = []
    for q in ds.questions[spec.start : spec.stop]:
        if q.qid not in dense or q.qid not in graph:
            continue
        d, g = dense[q.qid], graph[q.qid]
        metric = settings.label_metric if q.gold_keys else settings.fallback_metric
        cases.append(
            Case(
                subset=str(spec),
                qid=q.qid,
                question=q.text,
                gold=list(q.gold_keys),
                answers=list(q.answers),
                dense_docs=list(d["doc_ids"]),
                graph_docs=list(g["doc_ids"]),
                z_dense=quality(d["doc_ids"], q.gold_keys, q.answers, texts, metric),
                z_graph=quality(g["doc_ids"], q.gold_keys, q.answers, texts, metric),
                metric=metric,
                dense_s=float(d["timings_ms"]["retrieval"]) / 1000.0,
                graph_s=float(g["timings_ms"]["retrieval"]) / 1000.0,
            )
        )
    return cases, texts


def split(cases: list[Case], val_fraction: float, seed: int) -> None:
    """Mark a seeded ``val_fraction`` of each subset's cases as validation (in place)."""
    rng = np.random.default_rng(seed)
    by_subset: dict[str, list[Case]] = {}
    for c in cases:
        by_subset.setdefault(c.subset, []).append(c)
    for group in by_subset.values():
        order = rng.permutation(len(group))
        n_val = round(val_fraction * len(group))
        for i in order[:n_val]:
            group[int(i)].val = True
