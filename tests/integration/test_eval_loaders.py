"""Every loader on the real files in shared/data: counts as in the READMEs, gold keys in the corpus."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from paretorag.errors import ConfigError, InputError
from paretorag.eval.loaders import SUBSETS, available_subsets, load_dataset, parse_options
from paretorag.ingest.files import doc_id_for

DATA = Path(os.environ.get("PARETORAG_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"benchmark data not found at {DATA} (set PARETORAG_DATA)"
)

# subset -> (questions, passages/documents, questions with gold passages) from the data READMEs
EXPECTED = {
    "musique_dev200": (160, 2597, 160),
    "musique_train": (100, 1890, 100),
    "hotpotqa_dev200": (160, 1574, 160),
    "hotpotqa_train": (100, 994, 100),
    "2wikimultihopqa_dev164": (128, 1028, 128),
    "2wikimultihopqa": (797, 6119, 0),
    "popqa": (800, 1201, 800),
    "quality": (164, 12, 0),
    "nq_leval": (84, 16, 0),  # 17 pages in the file; two "Harry Potter" lines are the same page
    "medical": (1650, 1, 0),
}


def test_every_subset_has_an_expectation() -> None:
    assert set(EXPECTED) == set(SUBSETS)
    assert "jsonl" in available_subsets()


@needs_data
@pytest.mark.parametrize("subset", sorted(EXPECTED))
def test_loader_counts_and_gold(subset: str) -> None:
    ds = load_dataset(DATA, subset)
    n_q, n_p, n_gold = EXPECTED[subset]
    assert len(ds.questions) == n_q
    assert len(ds.passages) == n_p
    assert sum(1 for q in ds.questions if q.gold_keys) == n_gold
    keys = {p.key for p in ds.passages}
    assert len(keys) == len(ds.passages)
    for p in ds.passages:
        assert p.key == doc_id_for(p.title, p.text)
        doc = p.to_document()
        assert doc.doc_id == p.key and doc.presplit == p.presplit
    for q in ds.questions:
        assert q.text and q.answers and all(isinstance(a, str) for a in q.answers)
        assert set(q.gold_keys) <= keys
        assert set(q.context_keys) <= keys
        if q.context_keys:  # a question's own passages hold its gold ones
            assert set(q.gold_keys) <= set(q.context_keys)
    # every question of a set with per-question passages has them; the full 2Wiki corpus has none
    with_context = sum(1 for q in ds.questions if q.context_keys)
    assert with_context == (0 if subset == "2wikimultihopqa" else n_q)
    assert len({q.qid for q in ds.questions}) == n_q


@needs_data
def test_musique_gold_is_is_supporting_and_aliases_kept() -> None:
    raw = json.loads((DATA / "musique/musique_train.json").read_text())
    ds = load_dataset(DATA, "musique_train")
    q, rec = ds.questions[0], raw[0]
    gold = [doc_id_for(p["title"], p["paragraph_text"]) for p in rec["paragraphs"] if p["is_supporting"]]
    assert q.gold_keys == gold
    assert q.answers == [rec["answer"], *rec["answer_aliases"]]
    assert len(q.context_keys) == len(rec["paragraphs"])


@needs_data
def test_hotpot_gold_titles_and_resolution_of_variant_texts() -> None:
    ds = load_dataset(DATA, "hotpotqa_dev200")
    raw = json.loads((DATA / "hotpotqa/hotpotqa_dev200.json").read_text())
    titles = {p.key: p.title for p in ds.passages}
    for q, rec in zip(ds.questions, raw, strict=True):
        assert sorted(titles[k] for k in q.gold_keys) == sorted({t for t, _ in rec["supporting_facts"]})
    assert all(p.presplit for p in ds.passages)


@needs_data
def test_hotpot_train_object_corpus() -> None:
    ds = load_dataset(DATA, "hotpotqa_train")
    corpus = json.loads((DATA / "hotpotqa/hotpotqa_train_corpus.json").read_text())
    first_title = next(iter(corpus))
    assert ds.passages[0].title == first_title
    assert ds.passages[0].text == "".join(corpus[first_title])


@needs_data
def test_popqa_possible_answers_decoded() -> None:
    ds = load_dataset(DATA, "popqa")
    q = ds.questions[0]
    assert q.answers[:2] == ["politician", "political leader"]
    assert len(q.gold_keys) == 2


@needs_data
def test_quality_options_and_gold_option() -> None:
    ds = load_dataset(DATA, "quality")
    assert ds.is_multiple_choice and all(not p.presplit for p in ds.passages)
    for q in ds.questions:
        assert q.options is not None and len(q.options) == 4
        assert q.gold_option is not None and q.answers == [q.options[q.gold_option]]
        assert q.meta["gold_letter"] == "ABCD"[q.gold_option]
        assert "(A)" not in q.text
    q = ds.questions[0]
    assert q.meta["gold_letter"] == "B"
    assert q.prompt().splitlines()[1].startswith("(A) They were so caught up")


def test_parse_options_both_layouts() -> None:
    assert parse_options("Q?\n\n (A) x \n (B) y") == ("Q?", ["x", "y"])
    assert parse_options("Q?\n(A) x\n(B) y\n(C) z\n(D) w") == ("Q?", ["x", "y", "z", "w"])


@needs_data
def test_long_documents_titles() -> None:
    nq = load_dataset(DATA, "nq_leval")
    assert nq.passages[0].title == "The Handmaid 's Tale ( TV series )"
    med = load_dataset(DATA, "medical")
    assert med.passages[0].title == "Medical" and len(med.passages[0].text) > 1_000_000
    assert {q.meta["type"] for q in med.questions} >= {"Fact Retrieval", "Complex Reasoning"}


@needs_data
def test_limit_and_own_corpus() -> None:
    ds = load_dataset(DATA, "musique_dev200", limit=20, corpus="own")
    assert ds.name == "musique_dev200-own"
    assert len(ds.questions) == 20
    own = {k for q in ds.questions for k in q.context_keys}
    assert {p.key for p in ds.passages} == own
    full = load_dataset(DATA, "musique_dev200", limit=20)
    assert len(full.passages) == 2597  # the limit keeps the whole corpus


@needs_data
def test_own_corpus_needs_per_question_passages() -> None:
    with pytest.raises(ConfigError, match="cannot be restricted"):
        load_dataset(DATA, "2wikimultihopqa", limit=5, corpus="own")


def test_errors_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown subset 'nope'"):
        load_dataset(tmp_path, "nope")
    with pytest.raises(InputError, match="--data must be the benchmark folder"):
        load_dataset(tmp_path, "popqa")
    (tmp_path / "popqa").mkdir()
    (tmp_path / "popqa/popqa_corpus.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_dataset(tmp_path, "popqa")
    (tmp_path / "popqa/popqa_corpus.json").write_text('[{"title": "t"}]')
    with pytest.raises(InputError, match="no 'text' field"):
        load_dataset(tmp_path, "popqa")
