"""Fit the reader's calibrated confidence (``paretorag train-reader --calibrate``).

Every question of the train splits (``musique_train``, ``hotpotqa_train``, the 2Wiki
question set, ``popqa[400:1000]``; the same sets as the candidate ranker's, see
:mod:`paretorag.training.reader`) is answered as a user would be answered: `fusion`
retrieval of 5 passages (indexes in the same cache as ``paretorag eval``), the reader with
its span model and second hop, the calibration switched off. An answer the reader gives
(found) is *right* when its token F1 with a gold answer is at least 0.5. A logistic
regression (scikit-learn, standardized features, C = 1) fitted on those answers gives
:class:`~paretorag.answering.reader.calibration.Calibration`. By default its threshold is 0:
the confidence becomes the probability that the answer is right and the reader withholds
what it withheld before (the issue's "one calibrated confidence and the abstention that
exists today"). With ``max_abstain`` the threshold is the one that withholds the most of the
*unanswerable* training questions (no gold answer in the passages read) while withholding at
most that share of the answerable ones, counting those the reader withheld already, on
out-of-fold probabilities (five folds by a hash of the question id); the figures it reaches
are in ``calibration.json`` either way. The fit is deterministic (lbfgs on fixed data), so the
same answers give the same ``calibration.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..answering.reader.calibration import CALIBRATION_FILE, FEATURES, WITHHELD_STAGES, features
from ..errors import ConfigError
from ..eval import metrics as M
from ..eval.loaders import load_dataset
from ..eval.runner import index_dir_for
from ..progress import NullProgress, Progress
from ..rag import RAG

CALIBRATION_SETS: tuple[tuple[str, int, int | None], ...] = (
    ("musique_train", 0, None),
    ("hotpotqa_train", 0, None),
    ("2wikimultihopqa", 0, None),
    ("popqa", 400, 1000),
)
RIGHT_F1 = 0.5  # an answer is right at this token F1 with a gold answer (or more)
REPORT_ABSTAIN = 0.12  # the bar on answerable questions withheld: its threshold is reported
FOLDS = 5


@dataclass
class Answers:
    """Per question: features (None where the reader withheld or answered by a stage the
    calibration does not withhold), whether it answered, whether the answer is right, whether
    the passages read hold a gold answer."""

    x: list[np.ndarray | None] = field(default_factory=list)
    found: list[bool] = field(default_factory=list)
    right: list[bool] = field(default_factory=list)
    answerable: list[bool] = field(default_factory=list)
    qid: list[str] = field(default_factory=list)
    sets: dict[str, int] = field(default_factory=dict)


def collect(
    data_dir: Path | str,
    *,
    cache_dir: Path | str = "eval-out/.index-cache",
    method: str = "fusion",
    k: int = 5,
    sets: tuple[tuple[str, int, int | None], ...] = CALIBRATION_SETS,
    limit: int | None = None,
    progress: Progress | None = None,
) -> Answers:
    """Answer every training question with the uncalibrated reader and record its features."""
    progress = progress or NullProgress()
    out = Answers()
    for subset, start, stop in sets:
        ds = load_dataset(data_dir, subset)
        questions = ds.questions[start:stop][:limit]
        index_dir = index_dir_for(Path(cache_dir), ds, None, "extractive")
        index_dir.mkdir(parents=True, exist_ok=True)
        with RAG.open(index_dir, methods=[method], replace_methods=True, llm="extractive") as rag:
            rag.index(ds.documents(), progress=progress)
            rag._reader().calibrated = False  # the raw confidences are what is fitted
            with progress.task(f"reader answers · {subset}", total=len(questions)) as bar:
                for q in questions:
                    bar.advance()
                    ans = rag.query(q.text, method=method, k=k, reader="reader")
                    tr = dict(ans.trace.get("reader", {}))
                    stage = str(tr.get("stage", ""))
                    kept = bool(ans.found) and stage in WITHHELD_STAGES
                    short = ans.short or ""
                    out.x.append(
                        features(
                            stage, str(tr.get("expected", "")), float(tr.get("confidence", 0.0)), short, tr
                        )
                        if kept
                        else None
                    )
                    out.found.append(bool(ans.found))
                    out.right.append(bool(ans.found) and M.token_f1(short, q.answers) >= RIGHT_F1)
                    out.answerable.append(bool(M.context_recall([c.text for c in ans.contexts], q.answers)))
                    out.qid.append(f"{subset}:{q.qid}")
        out.sets[subset] = len(questions)
    return out


def _fold(qid: str) -> int:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest()[8:16], 16) % FOLDS


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0  # a constant feature (its std a rounding error)
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - mean) / scale, y)
    return mean, scale, model.coef_[0], float(model.intercept_[0])


def _prob(x: np.ndarray, fitted: tuple[np.ndarray, np.ndarray, np.ndarray, float]) -> np.ndarray:
    mean, scale, coef, b = fitted
    return np.asarray(1.0 / (1.0 + np.exp(-(((x - mean) / scale) @ coef + b))))


def withheld_at(t: float, prob: np.ndarray, found: np.ndarray, calibrated: np.ndarray) -> np.ndarray:
    """Questions withheld at threshold ``t``: those the reader withheld itself, and the calibrated
    answers (span and chain) whose probability is under ``t``."""
    return np.asarray(~found | (calibrated & (prob < t)))


def choose_threshold(
    prob: np.ndarray,
    found: np.ndarray,
    calibrated: np.ndarray,
    answerable: np.ndarray,
    max_abstain: float = REPORT_ABSTAIN,
) -> float:
    """The threshold on the calibrated probability that withholds the most unanswerable
    questions while at most ``max_abstain`` of the answerable ones are withheld (those the
    reader withheld already count too; where they alone pass the bar, 0)."""
    best = 0.0
    ans = answerable
    for t in np.round(np.arange(0.0, 1.0, 0.005), 3):
        withheld = withheld_at(float(t), prob, found, calibrated)
        if ans.any() and float(np.mean(withheld[ans])) > max_abstain:
            break
        best = float(t)
    return best


def fit(data: Answers, out_dir: Path | str, *, max_abstain: float | None = None) -> dict[str, Any]:
    """Fit, choose the threshold (0 without ``max_abstain``), write ``calibration.json``; returns
    its content, with the out-of-fold shares withheld at the threshold and at the issue's bar
    (:data:`REPORT_ABSTAIN`)."""
    rows = [i for i, v in enumerate(data.x) if v is not None]
    if len(rows) < 50:
        raise ConfigError(f"only {len(rows)} answered training questions; calibrate on more questions")
    x = np.vstack([data.x[i] for i in rows])  # type: ignore[misc]
    y = np.array([data.right[i] for i in rows], dtype=np.int64)
    if y.min() == y.max():
        raise ConfigError("every training answer is right (or every one wrong): nothing to calibrate")
    fold = np.array([_fold(data.qid[i]) for i in rows])
    oof = np.zeros(len(rows))
    for f in range(FOLDS):
        if (fold == f).any() and (fold != f).any():
            oof[fold == f] = _prob(x[fold == f], _fit(x[fold != f], y[fold != f]))
    prob = np.zeros(len(data.x))
    prob[rows] = oof
    calibrated = np.array([v is not None for v in data.x])
    found = np.array(data.found)
    answerable = np.array(data.answerable)
    threshold = (
        0.0 if max_abstain is None else choose_threshold(prob, found, calibrated, answerable, max_abstain)
    )
    withheld = withheld_at(threshold, prob, found, calibrated)
    bar = choose_threshold(prob, found, calibrated, answerable, REPORT_ABSTAIN)
    at_bar = withheld_at(bar, prob, found, calibrated)
    mean, scale, coef, b = _fit(x, y)
    auc = _auc(oof, y)
    meta = {
        "features": list(FEATURES),
        "mean": [round(float(v), 8) for v in mean],
        "scale": [round(float(v), 8) for v in scale],
        "coef": [round(float(v), 8) for v in coef],
        "intercept": round(b, 8),
        "threshold": threshold,
        "right_f1": RIGHT_F1,
        "max_abstain": max_abstain,
        "train_sets": data.sets,
        "answers": len(rows),
        "right": int(y.sum()),
        "out_of_fold_auc": round(auc, 4),
        "out_of_fold_withheld_answerable": round(float(np.mean(withheld[answerable])), 4)
        if answerable.any()
        else None,
        "out_of_fold_withheld_unanswerable": round(float(np.mean(withheld[~answerable])), 4)
        if (~answerable).any()
        else None,
        "out_of_fold_withheld_wrong": round(float(np.mean(oof[y == 0] < threshold)), 4),
        "out_of_fold_withheld_right": round(float(np.mean(oof[y == 1] < threshold)), 4),
        "at_the_bar": {  # what a threshold at the bar would withhold, out of fold
            "max_abstain": REPORT_ABSTAIN,
            "threshold": bar,
            "withheld_answerable": round(float(np.mean(at_bar[answerable])), 4) if answerable.any() else None,
            "withheld_unanswerable": round(float(np.mean(at_bar[~answerable])), 4)
            if (~answerable).any()
            else None,
            "withheld_wrong": round(float(np.mean(oof[y == 0] < bar)), 4),
            "withheld_right": round(float(np.mean(oof[y == 1] < bar)), 4),
        },
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / CALIBRATION_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def _auc(score: np.ndarray, y: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, score))


__all__ = [
    "CALIBRATION_SETS",
    "REPORT_ABSTAIN",
    "RIGHT_F1",
    "Answers",
    "choose_threshold",
    "collect",
    "fit",
    "withheld_at",
]
