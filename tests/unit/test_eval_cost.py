"""Cost accounting: per-method indexing cost, usage deltas, the ledger of shared stages."""

from __future__ import annotations

import json
from pathlib import Path

from paretorag.eval.cost import base_ledger, method_index_cost, peak_rss_mb

STATS = {
    "timings": {"ingest": 1.0, "embed": 10.0, "vectors": 0.5, "build.tree": 30.0, "build.entity_graph": 4.0},
    "structures": {"tree": {"seconds": 30.0}, "entity_graph": {"seconds": 4.0}},
    "usage": {
        "index.tree": {"calls": 7, "prompt_tokens": 700, "completion_tokens": 70},
        "query.answer": {"calls": 3, "prompt_tokens": 300, "completion_tokens": 30},
    },
}
BASE = {"ingest": 1.0, "embed": 10.0, "vectors": 0.5}


def test_vanilla_pays_only_the_shared_stages() -> None:
    cost = method_index_cost("vanilla", STATS, BASE)
    assert cost["structures"] == []
    assert cost["seconds_total"] == 11.5
    assert cost["llm_calls"] == 0 and cost["llm_tokens"] == 0


def test_e2graphrag_pays_its_structures_and_their_llm_stages() -> None:
    cost = method_index_cost("e2graphrag", STATS, BASE)
    assert cost["structures"] == ["tree", "entity_graph"]
    assert cost["seconds_per_stage"]["build.tree"] == 30.0
    assert cost["seconds_total"] == 45.5
    assert cost["llm_calls"] == 7 and cost["llm_tokens"] == 770  # query stages are not indexing
    assert set(cost["stages"]) == {"index.tree"}


def test_ledger_keeps_first_measurement(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    first = base_ledger(index, {"timings": {"ingest": 2.0, "embed": 100.0, "vectors": 1.0}}, built_now=True)
    assert first == {"ingest": 2.0, "embed": 100.0, "vectors": 1.0}
    # a later commit re-timed embedding from the cache: the ledger keeps the real cost
    again = base_ledger(index, {"timings": {"ingest": 0.1, "embed": 0.2}}, built_now=False)
    assert again == first
    assert json.loads((tmp_path / "idx.cost.json").read_text()) == first


def test_peak_rss_is_positive() -> None:
    assert peak_rss_mb() > 10
