"""The learned candidate ranker: a LightGBM model over :data:`~paretorag.answering.reader.candidates.FEATURES`.

The model is stored as LightGBM's own text format (``ranker.txt``, no pickle) beside
``reader.json``: the feature names it was trained on, the abstention threshold, the
training sets and their sizes, and the model's sha256. ``paretorag train-reader``
writes both (:mod:`paretorag.training.reader`); the shipped pair lives in
``paretorag/data/reader/``.

The model is a binary classifier ("is this candidate the gold answer"), so its output
is a probability: the reader's confidence is the top candidate's probability, and the
answer is withheld below the threshold chosen on the training questions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError
from ...lgbm import load_booster, predict, read_json
from .candidates import FEATURES

MODEL_FILE = "ranker.txt"
META_FILE = "reader.json"
DEFAULT_THRESHOLD = 0.2

_LOCK = threading.Lock()
_LOADED: dict[str, Ranker] = {}


def shipped_dir() -> Path:
    """The folder of the shipped model (``paretorag/data/reader``)."""
    return Path(str(resources.files("paretorag") / "data" / "reader"))


@dataclass
class Ranker:
    """A loaded model and its metadata."""

    booster: Any
    meta: dict[str, Any]
    path: Path

    @property
    def threshold(self) -> float:
        return float(self.meta.get("threshold", DEFAULT_THRESHOLD))

    def predict(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """The probability that each row is the answer."""
        if not len(x):
            return np.zeros(0)
        return predict(self.booster, x)


def _folder(folder: Path | str | None) -> Path:
    return Path(folder) if folder is not None else shipped_dir()


def read_meta(folder: Path | str | None = None) -> dict[str, Any]:
    """``reader.json`` of the model in ``folder`` (default: the shipped one), checked against this
    version's features; the model itself is not loaded."""
    path = _folder(folder)
    model, meta_file = path / MODEL_FILE, path / META_FILE
    if not model.exists() or not meta_file.exists():
        raise ConfigError(
            f"no reader model in {path} (need {MODEL_FILE} and {META_FILE}); "
            "run `paretorag train-reader --out DIR` to make one"
        )
    meta = read_json(meta_file, "paretorag train-reader --data ../shared/data --out DIR")
    if meta.get("features") != list(FEATURES):
        raise ConfigError(
            f"{path}: the reader model was trained on other features than this version computes; "
            "run `paretorag train-reader` again"
        )
    return meta


def load(folder: Path | str | None = None) -> Ranker:
    """The ranker in ``folder`` (default: the shipped one), loaded once per process."""
    path = _folder(folder)
    with _LOCK:
        hit = _LOADED.get(str(path))
        if hit is not None:
            return hit
        meta = read_meta(path)
        booster = load_booster(
            path / MODEL_FILE,
            meta.get("sha256"),
            "the reader's ranker",
            "paretorag train-reader --data ../shared/data --out DIR",
        )
        ranker = _LOADED[str(path)] = Ranker(booster, meta, path)
        return ranker


__all__ = ["DEFAULT_THRESHOLD", "META_FILE", "MODEL_FILE", "Ranker", "load", "read_meta", "shipped_dir"]
