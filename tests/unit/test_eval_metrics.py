"""Every evaluation metric against hand-computed cases."""

from __future__ import annotations

import pytest

from paretorag.eval import metrics as M


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("The Cat!", "cat"),
        ("  a  dog,  an apple ", "dog apple"),
        ("Theater", "theater"),  # "the" only as a whole word
        ("U.S.A.", "usa"),
        ("", ""),
        ("the a an", ""),
        ("Rock-n-Roll", "rocknroll"),
        ("Café  Noir", "café noir"),
    ],
)
def test_normalize_answer(raw: str, norm: str) -> None:
    assert M.normalize_answer(raw) == norm


def test_exact_match_uses_aliases_and_normalization() -> None:
    assert M.exact_match("The Beatles.", ["Beatles"]) == 1.0
    assert M.exact_match("Beatles band", ["Beatles"]) == 0.0
    assert M.exact_match("Stanley Hall", ["Stanley", "Stanley Hall"]) == 1.0
    assert M.exact_match("x", []) == 0.0


def test_token_f1_hand_computed() -> None:
    # pred tokens: new york city ; gold: new york -> p=2/3 r=1 -> f1=0.8
    assert M.token_f1("New York City", "new york") == pytest.approx(0.8)
    # multiplicity: pred "a b b" -> "b b" ("a" is an article) vs gold "b": p=1/2 r=1
    assert M.token_f1("a b b", "b") == pytest.approx(2 / 3)
    assert M.token_f1("paris", ["london", "Paris"]) == 1.0
    assert M.token_f1("nothing", "else") == 0.0


def test_token_f1_empty_after_normalization() -> None:
    # SQuAD: if either side is empty, F1 is 1 when both are empty, else 0
    assert M.token_f1("the", "a") == 1.0
    assert M.token_f1("the", "paris") == 0.0
    assert M.token_f1("paris", []) == 0.0


def test_contain_match_whole_tokens() -> None:
    assert M.contain_match("It was released in 1997 in London.", "1997") == 1.0
    assert M.contain_match("In 2010 it closed", "10") == 0.0  # not inside a token
    assert M.contain_match("Mountrail County's seat is Stanley", ["Stanley"]) == 1.0
    assert M.contain_match("anything", ["the"]) == 0.0  # gold empty after normalization never matches
    assert M.contain_match("New-York", "new york") == 0.0  # punctuation is removed, not split


def test_context_recall_per_passage() -> None:
    ctx = ["Paris is the capital.", "France is in Europe."]
    assert M.context_recall(ctx, ["paris"]) == 1.0
    assert M.context_recall(ctx, ["capital france"]) == 0.0  # no straddling across passages
    assert M.context_recall([], ["paris"]) == 0.0


def test_rouge_l_hand_computed() -> None:
    # tokens [the, cat, sat] vs [a, cat, sat, on, the, mat]
    # LCS = 2 (cat sat): p = 2/3, r = 2/6 -> f = 2pr/(p+r) = 4/9
    assert M.rouge_l("the cat sat", "a cat sat on the mat") == pytest.approx(4 / 9)
    assert M.rouge_l("identical text", ["other", "identical text"]) == pytest.approx(1.0)
    assert M.rouge_l("", "gold") == 0.0


@pytest.mark.parametrize(
    ("prediction", "choice"),
    [
        ("(B) dog", 1),
        ("B", 1),
        ("C.", 2),
        ("D) fish", 3),
        ("The answer is D", 3),
        ("Answer: (C)", 2),
        ("A dog barks", 1),  # sentence-initial "A" is an article; falls back to F1 -> "dog"
        ("fish", 3),
        ("zebra", None),
        ("(F) none", None),  # out-of-range letter, no overlap
    ],
)
def test_parse_choice(prediction: str, choice: int | None) -> None:
    assert M.parse_choice(prediction, ["cat", "dog", "bird", "fish"]) == choice


def test_choice_accuracy() -> None:
    assert M.choice_accuracy("(A)", ["x", "y"], 0) == 1.0
    assert M.choice_accuracy("(B)", ["x", "y"], 0) == 0.0


def test_recall_at_k_three_definitions() -> None:
    retrieved = ["d1", "d1", "x", "d2", "y", "d3"]
    gold = ["d1", "d2", "d3"]
    # k counts distinct documents: top-1 {d1}, top-2 {d1,x}, top-3 {d1,x,d2}
    assert M.recall_at_k(retrieved, gold, 1) == {"fraction": pytest.approx(1 / 3), "all": 0.0, "any": 1.0}
    assert M.recall_at_k(retrieved, gold, 2) == {"fraction": pytest.approx(1 / 3), "all": 0.0, "any": 1.0}
    assert M.recall_at_k(retrieved, gold, 3) == {"fraction": pytest.approx(2 / 3), "all": 0.0, "any": 1.0}
    assert M.recall_at_k(retrieved, gold, 10) == {"fraction": 1.0, "all": 1.0, "any": 1.0}
    assert M.recall_at_k(["x", "y"], gold, 2) == {"fraction": 0.0, "all": 0.0, "any": 0.0}
    assert M.recall_at_k([], ["d1"], 5) == {"fraction": 0.0, "all": 0.0, "any": 0.0}


def test_recall_at_k_without_gold_is_none_and_excluded_from_mean() -> None:
    assert M.recall_at_k(["d1"], [], 5) is None
    assert M.mean([1.0, None, 0.0]) == 0.5
    assert M.mean([None]) is None


def test_first_distinct_drops_repeats_and_empty() -> None:
    assert M.first_distinct(["a", "", "b", "a", "c"]) == ["a", "b", "c"]


def test_latency_summary() -> None:
    s = M.latency_summary([0.001, 0.002, 0.003, 0.004])
    assert s["p50_ms"] == pytest.approx(2.5)
    assert s["mean_ms"] == pytest.approx(2.5)
    assert s["p95_ms"] == pytest.approx(3.85)  # linear interpolation: 1 + 0.95 * 3 = 3.85
    assert M.latency_summary([]) == {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
