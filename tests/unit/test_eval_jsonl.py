"""The generic JSONL benchmark format (docs/evaluation.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paretorag.errors import ConfigError, InputError
from paretorag.eval.loaders import load_dataset
from paretorag.ingest.files import doc_id_for


def _write(folder: Path, corpus: list[dict], questions: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in questions))
    return folder


CORPUS = [
    {"id": "p1", "title": "Paris", "text": "Paris is the capital of France.", "presplit": True},
    {"id": "p2", "title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"title": "Rome", "text": "Rome is the capital of Italy."},
]


def test_generic_jsonl_round_trip(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "mine",
        CORPUS,
        [
            {"id": "q1", "question": "Capital of France?", "answers": ["Paris"], "gold": ["p1"]},
            {"question": "Capital of Italy?", "answer": "Rome", "gold": ["Rome"], "context": ["p2"]},
            {
                "id": "q3",
                "question": "Which is in Germany?",
                "options": ["Paris", "Berlin"],
                "answer": "Berlin",
            },
            {"id": "q4", "question": "Pick", "options": ["x", "y", "z"], "answer_index": 2, "meta": {"t": 1}},
        ],
    )
    ds = load_dataset(folder, "jsonl")
    assert ds.name == "mine" and len(ds.passages) == 3 and len(ds.questions) == 4
    p1 = doc_id_for("Paris", CORPUS[0]["text"])
    assert ds.passages[0].key == p1 and ds.passages[0].presplit and not ds.passages[1].presplit
    q1, q2, q3, q4 = ds.questions
    assert q1.qid == "q1" and q1.gold_keys == [p1] and q1.context_keys == [p1]
    assert q2.qid == "2" and q2.answers == ["Rome"]
    assert q2.gold_keys == [doc_id_for("Rome", CORPUS[2]["text"])]
    assert set(q2.context_keys) == {q2.gold_keys[0], doc_id_for("Berlin", CORPUS[1]["text"])}
    assert q3.gold_option == 1 and q3.answers == ["Berlin"]
    assert q4.gold_option == 2 and q4.meta["t"] == 1
    # jsonl:DIR form, and --corpus own keeps only the questions' passages
    own = load_dataset(tmp_path, "jsonl:mine", limit=1, corpus="own")
    assert [p.key for p in own.passages] == [p1]


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ({"question": ""}, "'question' must be a non-empty string"),
        ({"question": "q"}, "give 'answers'"),
        ({"question": "q", "answer": "a", "gold": ["nope"]}, "are not ids or titles"),
        ({"question": "q", "options": ["a", "b"], "answer": "c"}, "answer_index"),
        ({"question": "q", "answers": 3}, "must be a string or a list"),
    ],
)
def test_generic_jsonl_errors(tmp_path: Path, question: dict, message: str) -> None:
    folder = _write(tmp_path / "bad", CORPUS, [question])
    with pytest.raises(InputError, match=message):
        load_dataset(folder, "jsonl")


def test_generic_jsonl_bad_lines(tmp_path: Path) -> None:
    folder = _write(tmp_path / "bad", CORPUS, [])
    (folder / "questions.jsonl").write_text('{"question": "q", "answer": "a"}\n[1, 2]\n')
    with pytest.raises(InputError, match=r"questions.jsonl:2 must be a JSON object"):
        load_dataset(folder, "jsonl")
    (folder / "corpus.jsonl").write_text('{"title": "t", "text": ""}\n')
    with pytest.raises(InputError, match="'text' must be a non-empty string"):
        load_dataset(folder, "jsonl")
    with pytest.raises(ConfigError, match="limit"):
        load_dataset(folder, "jsonl", limit=0)
