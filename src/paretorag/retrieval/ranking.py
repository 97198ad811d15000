"""The retrieval ranker of ``chunk.learned_fusion``: two LightGBM lambdarank models and ``ranker.json``.

``first.txt`` orders the candidates by their first-hop features, ``second.txt`` by those
and the second-hop features relative to the first stage's best passages
(:mod:`paretorag.retrieval.operators.fusion`). ``ranker.json`` holds both feature lists, the
training sets and their sizes, the parameters and each model's sha256. ``paretorag
train-ranker`` writes the three files (:mod:`paretorag.training.ranker`); the shipped ones
live in ``paretorag/data/ranker/``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from ..lgbm import load_booster, predict, read_json

FIRST_FILE = "first.txt"
SECOND_FILE = "second.txt"
META_FILE = "ranker.json"
RETRAIN = "paretorag train-ranker --data ../shared/data --out DIR"
PURPOSE = "the learned retrieval ranker (method 'fusion')"

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}  # "KIND:FOLDER" -> a loaded model (_once)
T = TypeVar("T")


def shipped_dir() -> Path:
    """The folder of the shipped models (``paretorag/data/ranker``)."""
    return Path(str(resources.files("paretorag") / "data" / "ranker"))


# the features the shipped models were trained on, in order (computed by operators.fusion)
FIRST_HOP = (
    "dense_score",
    "dense_margin",
    "dense_rank",
    "bm25_relative",
    "bm25_score",
    "bm25_rank",
    "walk_relative",
    "walk_rank",
    "title_in_question",
    "title_overlap",
    "title_in_dense_top5",
    "sim_dense_top3_max",
    "sim_dense_top1",
    "sim_question_plus_top1",
    "shared_idf_top3_max",
    "shared_idf_top3_sum",
    "question_coverage",
    "length_words",
)
BRIDGE = 3  # first-stage passages that seed the second hop
SECOND_HOP = (
    *(f"bridge{j}_mentions_title" for j in range(1, BRIDGE + 1)),
    *(f"bridge{j}_shared_idf" for j in range(1, BRIDGE + 1)),
    *(f"bridge{j}_similarity" for j in range(1, BRIDGE + 1)),
    "mentions_bridge_titles",
    "first_stage_score",
    "first_stage_margin",
    "first_stage_rank",
    "title_in_bridge",
    *(f"residual{j}_similarity" for j in range(1, BRIDGE + 1)),
    "residual12_similarity",
)


# the long-document ranker (one stage): the first-hop features and where the chunk sits in its
# document, its heading, its neighbours, its section and its document, and its best window
# against the question (MaxP; operators.fusion_long.long_features)
LONG_GROUPS: dict[str, tuple[str, ...]] = {  # by what they describe (train-ranker --long --ablate)
    "position in the document": ("doc_position", "doc_first_chunk", "doc_chunks_log"),
    "heading": ("heading_overlap", "heading_depth"),
    "neighbours, section and document": (
        "neighbour_dense_max",
        "neighbour_bm25_max",
        "doc_dense_max",
        "doc_dense_rank",
        "dense_rank_in_doc",
        "doc_bm25_max",
        "section_dense_max",
        "section_bm25_max",
    ),
    "best window (MaxP)": ("window_dense_max", "window_dense_rank"),
}
LONG_ONLY = tuple(name for group in LONG_GROUPS.values() for name in group)
LONG_FEATURES = (*FIRST_HOP, *LONG_ONLY)
LONG_FILE = "long.txt"
LONG_DIR = "ranker_long"
RETRAIN_LONG = "paretorag train-ranker --long --data ../shared/data --out DIR"
PURPOSE_LONG = "the long-document ranker (method 'fusion' on long documents)"


@dataclass(frozen=True)
class Stage:
    """One stage's booster."""

    booster: Any

    def predict(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        return predict(self.booster, x)


@dataclass(frozen=True)
class FusionRanker:
    """Both stages and their metadata."""

    first: Stage
    second: Stage
    meta: dict[str, Any]
    path: Path


def read_meta(folder: Path | str | None = None) -> dict[str, Any]:
    """``ranker.json`` of the models in ``folder`` (default: the shipped ones), checked against
    the features this version computes; the models are not loaded."""
    path = Path(folder) if folder is not None else shipped_dir()
    meta = read_json(path / META_FILE, RETRAIN)
    if meta.get("first_features") != list(FIRST_HOP) or meta.get("second_features") != [
        *FIRST_HOP,
        *SECOND_HOP,
    ]:
        raise ConfigError(
            f"{path}: the ranker was trained on other features than this version computes; run `{RETRAIN}` again"
        )
    return meta


def _once(kind: str, path: Path, build: Callable[[], T]) -> T:
    """``build()``'s model for ``path``, built once per process (``kind`` tells the models apart)."""
    with _LOCK:
        key = f"{kind}:{path}"
        if key not in _LOADED:
            _LOADED[key] = build()
        hit: T = _LOADED[key]
        return hit


def load(folder: Path | str | None = None) -> FusionRanker:
    """The ranker in ``folder`` (default: the shipped one), loaded once per process."""
    path = Path(folder) if folder is not None else shipped_dir()

    def build() -> FusionRanker:
        meta = read_meta(path)
        first = load_booster(path / FIRST_FILE, meta.get("first_sha256"), PURPOSE, RETRAIN)
        second = load_booster(path / SECOND_FILE, meta.get("second_sha256"), PURPOSE, RETRAIN)
        return FusionRanker(Stage(first), Stage(second), meta, path)

    return _once("passages", path, build)


@dataclass(frozen=True)
class LongRanker:
    """The long-document ranker's one stage and its metadata."""

    stage: Stage
    meta: dict[str, Any]
    path: Path


def shipped_long_dir() -> Path:
    """The folder of the shipped long-document model (``paretorag/data/ranker_long``)."""
    return Path(str(resources.files("paretorag") / "data" / LONG_DIR))


def load_long(folder: Path | str | None = None) -> LongRanker:
    """The long-document ranker in ``folder`` (default: the shipped one), loaded once per process."""
    path = Path(folder) if folder is not None else shipped_long_dir()

    def build() -> LongRanker:
        meta = read_json(path / META_FILE, RETRAIN_LONG)
        if meta.get("features") != list(LONG_FEATURES):
            raise ConfigError(
                f"{path}: the long-document ranker was trained on other features than this version "
                f"computes; run `{RETRAIN_LONG}` again"
            )
        booster = load_booster(path / LONG_FILE, meta.get("sha256"), PURPOSE_LONG, RETRAIN_LONG)
        return LongRanker(Stage(booster), meta, path)

    return _once("long", path, build)


__all__ = [
    "FIRST_FILE",
    "LONG_FEATURES",
    "LONG_FILE",
    "META_FILE",
    "SECOND_FILE",
    "FusionRanker",
    "LongRanker",
    "Stage",
    "load",
    "load_long",
    "read_meta",
    "shipped_dir",
    "shipped_long_dir",
]
