"""GraphRAG-Bench medical: the loader on the shared file, evidence recall, per-type tables with cost,
the judge's answer accuracy, and cost per answer in every eval table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from paretorag.eval import metrics as M
from paretorag.eval.loaders import load_dataset
from paretorag.eval.report import benchmark_type_table, cost_table, markdown_report, results_table
from paretorag.eval.runner import run_eval
from paretorag.providers.llm import FakeLLM

DATA = Path(os.environ.get("PARETORAG_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"benchmark data not found at {DATA} (set PARETORAG_DATA)"
)
TYPES = {"Fact Retrieval", "Complex Reasoning", "Contextual Summarize", "Creative Generation"}


def test_evidence_recall_counts_content_words() -> None:
    contexts = ["Basal cell carcinoma is common.", "Sun exposure raises the risk."]
    assert M.evidence_recall(contexts, ["basal cell carcinoma"]) == 1.0
    # "the", "of", "is" are stop words; "sun-related" normalizes to "sunrelated": 1 of 3 found
    assert M.evidence_recall(contexts, ["the risk of melanoma is sun-related"]) == pytest.approx(1 / 3)
    assert M.evidence_recall(contexts, ["carcinoma", "melanoma"]) == 0.5  # mean over evidence texts
    assert M.evidence_recall(contexts, []) is None and M.evidence_recall([], ["x y"]) == 0.0


@needs_data
def test_medical_loader_types_and_evidence() -> None:
    ds = load_dataset(DATA, "medical")
    assert len(ds.questions) == 1650 and {q.meta["type"] for q in ds.questions} == TYPES
    q = ds.questions[0]
    assert q.qid.startswith("Medical-") and q.answers and q.context_keys == [ds.passages[0].key]
    # the shared copy has no `evidence` field: the reference answer stands in, and the loader says so
    assert q.meta["evidence_texts"] == q.answers and ds.meta["evidence_from_answer"] == 1650
    sample = load_dataset(DATA, "medical", limit_per_type=3)
    assert [q.meta["type"] for q in sample.questions].count("Creative Generation") == 3
    assert len(sample.questions) == 12 and len(sample.passages) == 1
    assert load_dataset(DATA, "medical", limit=5).questions[4].meta["type"] == "Fact Retrieval"


@needs_data
@pytest.mark.slow  # indexes the whole 1 MB text (hash embedder): about 10 s on a quiet machine
def test_medical_eval_per_type_with_judge_and_cost(tmp_path: Path) -> None:
    judge = FakeLLM(['{"correct": true}'], name="fake-judge")
    payload = run_eval(
        DATA,
        "medical",
        ["vanilla"],
        limit_per_type=2,
        ks=(5,),
        embedder="hash",
        readers=("extractive",),
        judge=judge,
        out_dir=tmp_path / "out",
        plots=False,
    )
    m = payload["methods"]["vanilla"]
    assert m["n_questions"] == 8 and set(m["by_type"]) == TYPES
    assert 0.0 < m["metrics"]["evidence_recall@5"] <= 1.0 and 0.0 <= m["metrics"]["rouge_l"] <= 1.0
    assert m["metrics"]["judge_acc"] == 1.0  # the scripted judge says every non-empty answer is right
    assert payload["judge_cost"]["calls"] == 8 and payload["config"]["limit_per_type"] == 2
    cost = m["by_type"]["Creative Generation"]["cost"]
    assert cost["seconds_per_query"] > 0 and cost["retrieval_p50_ms"] > 0
    assert m["query_cost"]["seconds_per_query"] > 0
    table = benchmark_type_table(payload).splitlines()
    assert "ER@5" in table[0] and "Judge acc" in table[0] and len(table) == 2 + 4
    assert "| `vanilla` | Creative Generation | 2 |" in "\n".join(table)
    head = results_table(payload).splitlines()[0]
    assert "ER@5" in head and "prompt tok/q" in head and "compl tok/q" in head and head.endswith("s/q |")
    md = markdown_report(payload)
    assert "Table 11" in md and "Judge `fake-judge`: 8 calls" in md


def test_cost_table_and_old_payloads() -> None:
    costs = {
        "vanilla": {
            "seconds_per_query": 0.5,
            "llm_calls_per_query": 1.0,
            "prompt_tokens_per_query": 1200.0,
            "completion_tokens_per_query": 80.0,
        },
        "old": {"llm_calls_per_query": 0.0},  # results.json from before the cost columns
    }
    lines = cost_table(costs).splitlines()
    assert lines[2] == "| `vanilla` | 0.500 | 1.00 | 1,200 | 80 | 1,280 |"
    assert lines[3] == "| `old` | – | 0.00 | – | – | – |"
