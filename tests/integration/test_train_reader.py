"""train-reader: deterministic model text, the held-out threshold, and its command-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from paretorag.answering.reader import FEATURES
from paretorag.answering.reader.ranker import load
from paretorag.cli import app
from paretorag.errors import ConfigError, IndexFormatError
from paretorag.training.reader import TrainingData, choose_threshold, hop_questions, labels, train

from ..conftest import DATA


def _data(n: int = 120, seed: int = 0) -> TrainingData:
    """Questions with 8 candidates each; the answer has a high "type_match" and "relation"."""
    rng = np.random.default_rng(seed)
    data = TrainingData(sets={"toy": n})
    tm, rel = FEATURES.index("type_match"), FEATURES.index("relation")
    for q in range(n):
        x = rng.random((8, len(FEATURES))).astype(np.float32)
        y = np.zeros(8, dtype=np.float32)
        answerable = q % 3 != 0
        if answerable:
            j = int(rng.integers(8))
            x[j, tm], x[j, rel], y[j] = 1.0, 1.0, 1.0
        data.x.append(x)
        data.y.append(y)
        data.qid.append(f"toy:{q}")
        data.answerable.append(answerable)
    return data


def test_training_is_deterministic_and_loadable(tmp_path) -> None:
    a = train(_data(), tmp_path / "a")
    b = train(_data(), tmp_path / "b")
    assert a["sha256"] == b["sha256"]
    assert (tmp_path / "a" / "ranker.txt").read_text() == (tmp_path / "b" / "ranker.txt").read_text()
    meta = json.loads((tmp_path / "a" / "reader.json").read_text())
    assert meta["features"] == list(FEATURES) and meta["held_out_questions"] > 0
    ranker = load(tmp_path / "a")
    x = _data(9, seed=1).x[1]
    assert ranker.predict(x).shape == (8,)
    assert meta["held_out_top1_accuracy_answerable"] > 0.5  # the planted answer is learned


def test_a_changed_model_file_is_refused(tmp_path) -> None:
    train(_data(), tmp_path / "m")
    model = tmp_path / "m" / "ranker.txt"
    model.write_text(model.read_text().replace("tree_sizes", "tree_sizes ", 1))
    with pytest.raises(IndexFormatError, match="sha256"):
        load(tmp_path / "m")


def test_threshold_keeps_answerable_questions() -> None:
    top = np.array([0.9, 0.8, 0.7, 0.6, 0.1, 0.05, 0.02, 0.01])
    answerable = np.array([True, True, True, True, False, False, False, False])
    t = choose_threshold(top, answerable, answerable, max_abstain=0.0)
    assert 0.1 < t <= 0.6  # withholds every unanswerable one and no answerable one
    assert choose_threshold(top, answerable, np.zeros(8, dtype=bool), 0.1) == 0.0


def test_labels_are_exact_or_close_matches() -> None:
    assert labels(["Lima", "Lima, Peru", "Santiago"], ["Lima"], 0.8).tolist() == [1.0, 0.0, 0.0]
    assert labels(["the Lima"], ["Lima"], 0.8).tolist() == [1.0]


def test_no_questions_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no training questions"):
        train(TrainingData(), tmp_path)


def test_cli_checks_its_arguments(tmp_path) -> None:
    r = CliRunner().invoke(
        app, ["train-reader", "--data", str(tmp_path), "--out", str(tmp_path / "m"), "-k", "0"]
    )
    assert r.exit_code == 2 and "-k must be at least 1" in r.output
    r = CliRunner().invoke(
        app, ["train-reader", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "m")]
    )
    assert r.exit_code == 1 and "not found" in r.output


def test_musique_hops_become_questions_with_the_earlier_answers_filled_in() -> None:
    hops = hop_questions(DATA, "musique_train")
    assert len(hops) > 100 and not any("#" in q.text or ">>" in q.text for q in hops)
    first = {q.qid: q for q in hops}
    some = next(q for q in hops if q.qid.endswith("#hop2"))
    one = first.get(some.qid.replace("#hop2", "#hop1"))
    assert one is not None and one.answers[0] in some.text  # "#1" replaced by the first hop's answer
    assert hop_questions(DATA, "hotpotqa_train") == []
