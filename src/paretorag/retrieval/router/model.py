"""A trained router: featurizer selection, standardization, the MLP adapter and the thresholds.

EA-GraphRAG's decision module (§3.3, Eq. 2; Algorithm 1 lines 1-3): features phi(q)
(:mod:`.features`), the selected features standardized with the training mean and
standard deviation (§3.2.5), the adapter's score ``s(q)`` (:mod:`.adapter`), and the
route:

- ``s(q) < tau_low``: dense retrieval;
- ``s(q) >= tau_high``: graph retrieval;
- otherwise: complexity-aware fusion (Eq. 8).

Without fusion (Table 6's "routing without fusion") one threshold ``tau_single``
splits dense from graph.

On disk a router is a folder: ``router.json`` (format, version, selected feature
names, mean, std, thresholds, how it was trained and the command that reproduces it)
and ``weights.safetensors``. No pickle. The package ships one
(:func:`default_router_path`, ``paretorag/data/router``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ...errors import ConfigError
from .adapter import HIDDEN, WEIGHTS_FILE, Adapter
from .features import FEATURE_NAMES, FEATURIZER_VERSION, Featurizer, features

FORMAT = "paretorag-router"
CONFIG_FILE = "router.json"
Route = Literal["dense", "graph", "fusion"]


def default_router_path() -> Path:
    """The router shipped in the package (trained on the shared train splits; see its router.json)."""
    return Path(str(resources.files("paretorag") / "data" / "router"))


def route_for(
    score: float, tau_low: float, tau_high: float, *, fusion: bool = True, tau_single: float = 0.5
) -> Route:
    """EA-GraphRAG Eq. 2: ``s < tau_low`` dense, ``s >= tau_high`` graph, fusion between.

    With ``fusion=False``: graph when ``s >= tau_single``, else dense.
    """
    if not fusion:
        return "graph" if score >= tau_single else "dense"
    if score >= tau_high:
        return "graph"
    if score < tau_low:
        return "dense"
    return "fusion"


@dataclass
class Router:
    """A loaded router (see the module docstring).

    Parameters
    ----------
    selected : list of str
        Feature names kept by mutual information, in the adapter's input order.
    mean, std : ndarray
        Standardization of the selected features (z-score, §3.2.5).
    adapter : Adapter
        The MLP's weights.
    tau_low, tau_high : float
        Routing thresholds (Eq. 2), tuned on a validation split.
    tau_single : float
        The one threshold used when fusion is off.
    meta : dict
        Everything else in ``router.json`` (version, training data, metrics, command).
    """

    selected: list[str]
    mean: np.ndarray
    std: np.ndarray
    adapter: Adapter
    tau_low: float = 0.5
    tau_high: float = 0.5
    tau_single: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)
    _columns: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        missing = [n for n in self.selected if n not in FEATURE_NAMES]
        if missing:
            raise ConfigError(
                f"router uses features this featurizer does not compute: {missing[:5]}; "
                "retrain it with `paretorag train-router`"
            )
        position = {n: i for i, n in enumerate(FEATURE_NAMES)}
        self._columns = np.asarray([position[n] for n in self.selected], dtype=np.int64)
        self.mean = np.asarray(self.mean, dtype=np.float64)
        self.std = np.asarray(self.std, dtype=np.float64)
        if not (0.0 <= self.tau_low <= self.tau_high <= 1.0):
            raise ConfigError(
                f"router thresholds must satisfy 0 <= tau_low <= tau_high <= 1, "
                f"got tau_low={self.tau_low}, tau_high={self.tau_high}"
            )

    # -- scoring ------------------------------------------------------------------------
    def standardize(self, raw: np.ndarray) -> np.ndarray:
        """Selected columns of raw feature rows, z-scored with the stored mean and std."""
        cols = np.atleast_2d(np.asarray(raw, dtype=np.float64))[:, self._columns]
        return (cols - self.mean) / np.where(self.std > 0, self.std, 1.0)

    def score_features(self, raw: np.ndarray) -> np.ndarray:
        """``s(q)`` of raw feature rows (Eq. 1)."""
        return self.adapter.scores(self.standardize(raw))

    def score(self, question: str) -> float:
        """``s(q)`` of one question: one spaCy parse, the selected features, the MLP."""
        return float(self.score_features(features(Featurizer().parse(question)))[0])

    def route(self, score: float, *, fusion: bool = True) -> Route:
        return route_for(score, self.tau_low, self.tau_high, fusion=fusion, tau_single=self.tau_single)

    # -- files --------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {
            **self.meta,
            "format": FORMAT,
            "featurizer_version": FEATURIZER_VERSION,
            "features": list(self.selected),
            "mean": [float(v) for v in self.mean],
            "std": [float(v) for v in self.std],
            "hidden": list(self.adapter.hidden),
            "tau_low": float(self.tau_low),
            "tau_high": float(self.tau_high),
            "tau_single": float(self.tau_single),
        }

    def save(self, folder: Path | str) -> Path:
        """Write ``router.json`` and ``weights.safetensors`` into ``folder`` (created)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        self.adapter.save(path)
        (path / CONFIG_FILE).write_text(json.dumps(self.config(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: Path | str) -> Router:
        path = Path(folder)
        cfg_path = path / CONFIG_FILE
        if not cfg_path.is_file() or not (path / WEIGHTS_FILE).is_file():
            raise ConfigError(
                f"{path} is not a router folder (needs {CONFIG_FILE} and {WEIGHTS_FILE}); "
                "train one with `paretorag train-router --out FOLDER` or leave `router` unset for the shipped one"
            )
        try:
            cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read {cfg_path}: {exc}") from exc
        if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
            raise ConfigError(f"{cfg_path} is not a paretorag router (format {FORMAT!r} expected)")
        if cfg.get("featurizer_version") != FEATURIZER_VERSION:
            raise ConfigError(
                f"{cfg_path} was trained with featurizer version {cfg.get('featurizer_version')}, "
                f"this paretorag computes version {FEATURIZER_VERSION}: retrain with `paretorag train-router`"
            )
        known = {"format", "featurizer_version", "features", "mean", "std", "hidden", "tau_low", "tau_high",
                 "tau_single"}  # fmt: skip
        hidden = tuple(int(h) for h in cfg.get("hidden", HIDDEN))
        return cls(
            selected=list(cfg["features"]),
            mean=np.asarray(cfg["mean"], dtype=np.float64),
            std=np.asarray(cfg["std"], dtype=np.float64),
            adapter=Adapter.load(path, hidden),
            tau_low=float(cfg["tau_low"]),
            tau_high=float(cfg["tau_high"]),
            tau_single=float(cfg.get("tau_single", 0.5)),
            meta={k: v for k, v in cfg.items() if k not in known},
        )


_LOADED: dict[str, Router] = {}
_LOCK = threading.Lock()


def load_router(folder: Path | str | None = None) -> Router:
    """A router folder, loaded once per process (``None``: the shipped default)."""
    path = Path(folder) if folder is not None else default_router_path()
    cfg = path / CONFIG_FILE
    # a folder retrained in place is read again
    key = f"{path.resolve()}:{cfg.stat().st_mtime_ns if cfg.is_file() else 0}"
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = Router.load(path)
        return _LOADED[key]


__all__ = ["CONFIG_FILE", "Route", "Router", "default_router_path", "load_router", "route_for"]
