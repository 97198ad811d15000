"""The reader's calibrated confidence (answering/reader/calibration.py, training/calibration.py)
and its sentence answers to list and description questions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paretorag.answering.reader.calibration import CALIBRATION_FILE, FEATURES, Calibration, features
from paretorag.answering.reader.core import Evidence, Reader, ReaderResult, described
from paretorag.answering.reader.question import analyze
from paretorag.errors import InputError
from paretorag.training.calibration import Answers, choose_threshold, fit, withheld_at


def _meta(threshold: float = 0.5) -> dict:
    """A calibration that reads only the raw confidence: P = sigmoid(8 (raw - 0.5))."""
    coef = [0.0] * len(FEATURES)
    coef[FEATURES.index("raw")] = 8.0
    return {
        "features": list(FEATURES),
        "mean": [0.5] + [0.0] * (len(FEATURES) - 1),
        "scale": [1.0] * len(FEATURES),
        "coef": coef,
        "intercept": 0.0,
        "threshold": threshold,
    }


def _result(kind: str, confidence: float, answer: str = "Lima") -> ReaderResult:
    ev = (Evidence("Lima is the capital of Peru.", 1),)
    return ReaderResult(answer, ev, confidence, True, kind, "place", {"span_top": 0.4})


def test_features_follow_their_names():
    x = features("chain", "person", 0.7, "Carl Boese", {"span_top": 0.3, "span_none": 0.1, "span_model": "x"})
    assert len(x) == len(FEATURES)
    named = dict(zip(FEATURES, x, strict=True))
    assert named["raw"] == 0.7 and named["stage_chain"] == 1.0 and named["stage_span"] == 0.0
    assert named["type_person"] == 1.0 and named["span_top"] == 0.3 and named["span_none"] == 0.1
    assert named["span_alone"] == 1.0 and named["agree"] == 0.0
    assert named["answer_tokens"] == pytest.approx(np.log1p(2))


def test_a_calibration_fitted_on_other_features_is_refused(tmp_path):
    meta = {**_meta(), "features": ["raw"]}
    with pytest.raises(InputError, match="train-reader --calibrate"):
        Calibration(meta)
    (tmp_path / CALIBRATION_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        Calibration.load(tmp_path)


def test_the_reader_withholds_span_answers_below_the_calibrated_threshold(tmp_path):
    (tmp_path / CALIBRATION_FILE).write_text(json.dumps(_meta(threshold=0.5)), encoding="utf-8")
    reader = Reader(model=tmp_path, span_mode="off")
    low = reader._calibrate(_result("span", 0.3))
    assert not low.found and low.answer == "" and low.trace["withheld"] == "Lima"
    assert low.confidence == pytest.approx(1 / (1 + np.exp(1.6))) and low.trace["raw_confidence"] == 0.3
    high = reader._calibrate(_result("span", 0.8))
    assert high.found and high.answer == "Lima" and high.confidence == pytest.approx(1 / (1 + np.exp(-2.4)))
    # a comparison, a yes/no or a sentence keeps its own confidence and bar
    for kind in ("choice", "yesno", "sentence"):
        kept = reader._calibrate(_result(kind, 0.3))
        assert kept.found and kept.confidence == 0.3
    reader.calibrated = False
    assert reader._calibrate(_result("span", 0.3)).found


def test_the_threshold_keeps_the_answerable_bar():
    prob = np.array([0.9, 0.8, 0.2, 0.1, 0.3, 0.05, 0.01])
    found = np.array([True, True, True, True, True, False, True])
    calibrated = np.array([True, True, True, True, True, False, False])  # the last: a comparison
    answerable = np.array([True, True, True, False, False, True, True])
    # answerable: one withheld already (of 5); a bar of 0.4 admits one more, and never the comparison
    t = choose_threshold(prob, found, calibrated, answerable, max_abstain=0.4)
    assert 0.2 < t <= 0.8 and float(np.mean(withheld_at(t, prob, found, calibrated)[answerable])) <= 0.4
    assert not withheld_at(0.99, prob, found, calibrated)[-1]
    assert choose_threshold(prob, found, calibrated, answerable, max_abstain=0.2) <= 0.2


def test_fit_writes_a_calibration_the_reader_loads(tmp_path):
    rng = np.random.default_rng(0)
    data = Answers()
    for i in range(300):
        raw = float(rng.random())
        right = bool(rng.random() < raw)  # the raw confidence carries the signal
        data.x.append(features("span", "person", raw, "A B", {}))
        data.found.append(True)
        data.right.append(right)
        data.answerable.append(right or bool(rng.random() < 0.5))
        data.qid.append(f"q{i}")
    meta = fit(data, tmp_path, max_abstain=0.2)
    assert fit(data, tmp_path / "default")["threshold"] == 0.0  # by default the confidence only
    assert meta["out_of_fold_auc"] > 0.7 and meta["out_of_fold_withheld_answerable"] <= 0.2
    cal = Calibration.load(tmp_path)
    assert cal is not None and cal.threshold == meta["threshold"]
    lo, hi = (cal.probability(features("span", "person", r, "A B", {})) for r in (0.1, 0.9))
    assert lo < hi


def test_list_and_description_questions_are_answered_with_the_sentence():
    span = ReaderResult(
        "shiny bumps",
        (Evidence("BCC presents as red patches, shiny bumps or open sores.", 2), Evidence("Other.", 1)),
        0.4,
        True,
        "span",
        "phrase",
        {},
    )
    q = "What are common symptoms of basal cell carcinoma?"
    out = described(q, analyze(q, []), span)
    assert (
        out.kind == "sentence"
        and out.answer.startswith("BCC presents")
        and out.trace["span"] == "shiny bumps"
    )
    assert out.text == "BCC presents as red patches, shiny bumps or open sores. [2]"
    # a question that expects a person, or one that is not a list or description, keeps its span
    for other in (
        "Who are the founders of the company?",
        "What government position was held by the actress?",
    ):
        assert described(other, analyze(other, []), span) is span
