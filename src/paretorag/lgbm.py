"""LightGBM models stored as LightGBM's own text format, checked by sha256 (no pickle).

Shared by the reader's candidate ranker (:mod:`paretorag.answering.reader.ranker`) and the retrieval
ranker (:mod:`paretorag.retrieval.ranking`): both ship a model file and a JSON file holding the
feature names, the training sets and the model's sha256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import ConfigError, IndexFormatError, MissingDependencyError

# LightGBM's optional companions: its scikit-learn and pandas interfaces are not used
# here, and importing them (scikit-learn brings scipy.stats) cost a query about a second
NOT_USED = ("sklearn", "pandas", "pyarrow", "dask", "matplotlib", "graphviz")


def lightgbm(purpose: str) -> Any:
    """The ``lightgbm`` module (imported without :data:`NOT_USED`), or an error naming
    ``purpose`` and the install command."""
    from .providers.imports import import_without

    try:
        return import_without("lightgbm", NOT_USED)
    except ImportError as exc:
        raise MissingDependencyError(f"{purpose} needs LightGBM: pip install lightgbm") from exc


def read_json(path: Path, retrain: str) -> dict[str, Any]:
    """A model's JSON metadata; a clear error naming ``retrain`` (the command) when it is unreadable."""
    try:
        meta: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no model metadata at {path}; run `{retrain}` to make one") from None
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"{path} is not valid JSON ({exc}); run `{retrain}` again") from exc
    return meta


def load_booster(path: Path, sha256: str | None, purpose: str, retrain: str) -> Any:
    """The LightGBM booster in text file ``path``, checked against ``sha256`` when given."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no model at {path}; run `{retrain}` to make one") from None
    if sha256 and hashlib.sha256(text.encode("utf-8")).hexdigest() != sha256:
        raise IndexFormatError(f"{path} does not match the sha256 in its metadata; run `{retrain}` again")
    return lightgbm(purpose).Booster(model_str=text)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def predict(booster: Any, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Scores of the rows of ``x`` (one thread: a query scores tens of rows)."""
    if not len(x):
        return np.zeros(0)
    return np.asarray(booster.predict(x, num_threads=1), dtype=np.float64)


__all__ = ["lightgbm", "load_booster", "predict", "read_json", "sha256_text"]
