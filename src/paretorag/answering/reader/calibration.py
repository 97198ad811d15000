"""One calibrated confidence for the reader's answers (issue 36, item 3).

The reader's stages report confidences on different scales: the candidate ranker's
probability, the span model's softmax over its candidate spans (summed with the ranker's
where both read the same answer), fixed values for the rule stages
(:mod:`.confidence`). None of them says how often such an answer is right: on the dev sets
the raw confidence barely separates the questions whose passages hold the answer from
those whose passages do not. A logistic regression over what the reader saw (which stage
answered, its raw confidence, the span model's best probability and its window's
no-answer probability, whether the two readers agree, the expected answer type, the
answer's length) maps it to the probability that the answer is right, fitted on the
train splits' questions read after `fusion` retrieval
(:func:`paretorag.training.calibration.fit`). Span and chain answers are calibrated and,
below the threshold chosen there, withheld (the shipped threshold is 0); comparisons, yes/no
and "why / how" sentences keep their rule confidences and bars (they were not fitted).

The model is a few numbers in ``calibration.json`` beside the candidate ranker; no
pickle, and its sha256 is not needed: it is plain JSON read with ``json.loads``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError

CALIBRATION_FILE = "calibration.json"
STAGES = ("span", "chain")  # the stages calibrated (and, above a threshold, withheld)
TYPES = ("person", "place", "date", "number", "org", "phrase", "description")
FEATURES = (
    "raw",
    *(f"stage_{s}" for s in STAGES),
    *(f"type_{t}" for t in TYPES),
    "span_top",
    "span_none",
    "span_alone",
    "agree",
    "answer_tokens",
)
WITHHELD_STAGES = STAGES


def features(
    kind: str, expected: str, confidence: float, answer: str, trace: Mapping[str, Any]
) -> np.ndarray:
    """The calibration features of one answer (in :data:`FEATURES` order)."""
    span_alone = "span_model" in trace and "span_score" not in trace
    row = [
        float(confidence),
        *(float(kind == s) for s in STAGES),
        *(float(expected == t) for t in TYPES),
        float(trace.get("span_top", 0.0)),
        float(trace.get("span_none", 0.0)),
        float(span_alone),
        float("span_score" in trace),
        math.log1p(len(answer.split())),
    ]
    return np.asarray(row, dtype=np.float64)


class Calibration:
    """A fitted logistic regression: ``P(right) = sigmoid(w · (x - mean) / scale + b)``."""

    def __init__(self, meta: Mapping[str, Any]) -> None:
        if list(meta.get("features", [])) != list(FEATURES):
            raise InputError(
                f"{CALIBRATION_FILE} was fitted on features {meta.get('features')}, this reader computes "
                f"{list(FEATURES)}; fit it again with `paretorag train-reader --calibrate`"
            )
        self.meta = dict(meta)
        self.mean = np.asarray(meta["mean"], dtype=np.float64)
        self.scale = np.asarray(meta["scale"], dtype=np.float64)
        self.coef = np.asarray(meta["coef"], dtype=np.float64)
        self.intercept = float(meta["intercept"])
        self.threshold = float(meta["threshold"])

    def probability(self, x: np.ndarray) -> float:
        z = float(((x - self.mean) / self.scale) @ self.coef + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    @classmethod
    def load(cls, folder: Path | str) -> Calibration | None:
        """The calibration of a reader model folder, or None where it has none."""
        return _load(str(Path(folder) / CALIBRATION_FILE))


@lru_cache(maxsize=4)
def _load(path: str) -> Calibration | None:
    p = Path(path)
    if not p.is_file():
        return None
    try:
        meta = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{p} is not valid JSON ({exc}); fit it again with `paretorag train-reader --calibrate`"
        ) from exc
    return Calibration(meta)


__all__ = ["CALIBRATION_FILE", "FEATURES", "STAGES", "TYPES", "WITHHELD_STAGES", "Calibration", "features"]
