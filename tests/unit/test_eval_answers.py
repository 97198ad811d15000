"""The eval's answer tables: retrieved vs answered, the guessing baseline, abstention, per type."""

from __future__ import annotations

from paretorag.eval.report import answer_table, markdown_report, type_table


def _method(reader: str, em: float, guess: float, abst: tuple[float | None, float | None]) -> dict:
    metrics = {
        "recall@5": 0.8,
        "context_recall@5": 0.7,
        "em": em,
        "f1": em + 0.05,
        "contain": em + 0.1,
        "guess_em": guess,
        "abstain_answerable": abst[0],
        "abstain_unanswerable": abst[1],
    }
    return {
        "method": "entity-walk",
        "reader": reader,
        "metrics": metrics,
        "latency": {"retrieval": {"p50_ms": 10.0, "p95_ms": 12.0}, "generation": {"p50_ms": 30.0}},
        "index_cost": {
            "seconds_total": 1.0,
            "llm_tokens": 0,
            "llm_calls": 0,
            "seconds_per_stage": {},
            "stages": {},
        },
        "query_cost": {"llm_calls_per_query": 0.0},
        "peak_rss_mb": 100.0,
        "by_type": {"comparison": {"n": 3, "em": em, "f1": em, "guess_em": guess, "context_recall@5": 1.0}},
    }


def _payload() -> dict:
    return {
        "dataset": {"name": "toy", "n_questions": 3, "n_passages": 9, "corpus": "full"},
        "config": {
            "ks": [1, 5],
            "methods": ["entity-walk"],
            "llm": "extractive",
            "embedder": "hash",
            "retrieval_only": False,
        },
        "index": {"built_now": True},
        "methods": {
            "entity-walk (extractive)": _method("extractive", 0.0, 0.3, (None, None)),
            "entity-walk (reader)": _method("reader", 0.55, 0.3, (0.1, 0.6)),
        },
    }


def test_answer_table_puts_retrieved_beside_answered() -> None:
    table = answer_table(_payload())
    rows = table.splitlines()
    assert "CR@5" in rows[0] and "EM - guess" in rows[0] and "abstain (unanswerable)" in rows[0]
    reader = next(r for r in rows if "| reader |" in r)
    cells = [c.strip() for c in reader.strip("|").split("|")]
    assert cells[2:5] == ["70.0", "55.0", "60.0"]  # CR@5, EM, F1
    assert cells[7] == "25.0"  # EM over the guess
    assert cells[8:10] == ["10.0", "60.0"]
    extractive = next(r for r in rows if "| extractive |" in r)
    assert "| – | – |" in extractive  # no abstention figures without a reader


def test_type_table_and_report() -> None:
    payload = _payload()
    assert "| comparison | 3 |" in type_table(payload)
    report = markdown_report(payload)
    assert "Retrieved vs answered" in report and "By question type" in report


def test_no_answer_table_without_answers() -> None:
    payload = _payload()
    for m in payload["methods"].values():
        m["metrics"] = {"recall@5": 0.8}
    assert answer_table(payload) == ""
