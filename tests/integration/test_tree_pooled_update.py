"""E2GraphRAG's summary tree over pooled documents (``scope="corpus"``/``"auto"``) keeps the
order of the documents it grouped before: an insert changes only the groups at the end of the
sequence (every other prompt repeats, so the LLM cache answers it), a delete the groups from the
deleted document on; past the drift limit the documents are grouped afresh."""

from __future__ import annotations

from typing import Any

from paretorag.graphs.base import get_builder
from paretorag.graphs.tree import DRIFT_LIMIT
from paretorag.storage.structures import StructureData

from .test_builders_raptor_tree import summarizer
from .test_raptor_incremental import PrevCtx, _table

SETTINGS: dict[str, Any] = {"g": 3, "scope": "corpus", "grouping": "vector"}


def _build(rows: list[int], prev: StructureData | None = None) -> tuple[StructureData, set[str]]:
    llm = summarizer()
    data = get_builder("tree", **SETTINGS).build(PrevCtx(_table(rows), llm, prev))  # type: ignore[arg-type]
    return data, {r.task.texts and "\n".join(r.task.texts) for r in llm.requests}


def test_an_insert_summarizes_only_the_end_of_the_pooled_sequence() -> None:
    first, asked = _build(list(range(27)))
    assert first.meta["pooled"]["base"] == 27 and first.meta["stats"]["pooled"] == "grouped afresh"

    grown, asked_again = _build([*range(27), 27], first)
    assert grown.meta["stats"]["pooled"] == "order kept"
    assert grown.meta["pooled"]["doc_ids"] == [*first.meta["pooled"]["doc_ids"], "d27"]
    new = asked_again - asked
    # one new group per level at the end of the sequence: 28 leaves -> 10 -> 4 -> 2 summaries
    assert 1 <= len(new) <= 4 < len(asked_again)

    fresh, asked_fresh = _build([*range(27), 27])
    assert fresh.meta["stats"]["pooled"] == "grouped afresh" and len(asked_fresh - asked) > len(new)


def test_a_delete_keeps_the_order_of_the_others_and_drift_groups_afresh() -> None:
    first, _ = _build(list(range(24)))
    order = first.meta["pooled"]["doc_ids"]
    shrunk, _ = _build([r for r in range(24) if f"d{r}" != order[-1]], first)
    assert shrunk.meta["pooled"]["doc_ids"] == order[:-1] and shrunk.meta["pooled"]["changed"] == 1

    within = int(DRIFT_LIMIT * 24)  # 4 documents added: still the kept order
    kept, _ = _build(list(range(24 + within)), first)
    assert kept.meta["stats"]["pooled"] == "order kept" and kept.meta["pooled"]["changed"] == within
    regrouped, _ = _build(list(range(24 + within + 1)), first)
    assert regrouped.meta["stats"]["pooled"] == "grouped afresh"
    assert regrouped.meta["pooled"] == {
        "doc_ids": regrouped.meta["pooled"]["doc_ids"],
        "base": 29,
        "changed": 0,
    }


def test_document_scope_stores_no_pooled_order() -> None:
    llm = summarizer()
    data = get_builder("tree", g=3).build(PrevCtx(_table(list(range(6))), llm, None))  # type: ignore[arg-type]
    assert "pooled" not in data.meta
