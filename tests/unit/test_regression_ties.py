"""The framework regression's comparison lets near-tied ids move and catches everything else."""

from __future__ import annotations

import copy
from typing import Any

from ..regression_retrievals import (
    TOL,
    merge_ranges,
    permuted_ranges,
    ranking_difference,
    retrieval_difference,
    tie_groups,
)

IDS = ["a", "b", "c", "d", "e"]
SIMS = [0.9, 0.5, 0.5 + TOL / 2, 0.3, 0.1]  # b and c tie


def test_tie_groups_are_runs_of_neighbours_within_the_tolerance() -> None:
    assert tie_groups(SIMS) == [(0, 1), (1, 3), (3, 4), (4, 5)]
    assert tie_groups([0.4, 0.4, 0.4 + TOL / 2, 0.4 + TOL]) == [(0, 4)]  # a chain of ties
    assert tie_groups([0.4, 0.4 + 2 * TOL]) == [(0, 1), (1, 2)]
    assert tie_groups([]) == []


def test_the_same_ranking_agrees() -> None:
    assert ranking_difference(IDS, SIMS, list(IDS), list(SIMS)) is None


def test_near_tied_ids_may_swap() -> None:
    got, sims = ["a", "c", "b", "d", "e"], [0.9, 0.5 + TOL / 2, 0.5, 0.3, 0.1]
    assert ranking_difference(IDS, SIMS, got, sims) is None


def test_a_swap_of_ids_further_apart_than_the_tolerance_is_caught() -> None:
    sims = [0.9, 0.5, 0.5 + 3 * TOL, 0.3, 0.1]
    got = ["a", "c", "b", "d", "e"]
    diff = ranking_difference(IDS, sims, got, [0.9, 0.5 + 3 * TOL, 0.5, 0.3, 0.1])
    assert diff is not None and "position 1" in diff
    assert ranking_difference(IDS, SIMS, ["a", "b", "c", "e", "d"], [0.9, 0.5, 0.5, 0.1, 0.3]) is not None


def test_a_missing_or_extra_id_is_caught() -> None:
    assert "4 ids where 5" in (ranking_difference(IDS, SIMS, IDS[:4], SIMS[:4]) or "")
    assert ranking_difference(IDS, SIMS, [*IDS, "f"], [*SIMS, 0.05]) is not None
    # another id in the middle, even one whose cosine ties the one it replaces
    assert ranking_difference(IDS, SIMS, ["a", "x", "c", "d", "e"], SIMS) is not None


def test_a_cosine_that_moved_is_caught_even_in_the_same_order() -> None:
    sims = [0.9, 0.5, 0.5, 0.3 - 3 * TOL, 0.1]
    diff = ranking_difference(IDS, SIMS, list(IDS), sims)
    assert diff is not None and diff.startswith("d: cosine")


def test_a_tie_at_the_cut_may_bring_in_another_id() -> None:
    # the recording kept "e" and left out a candidate "f" with the same cosine
    assert (
        ranking_difference(IDS, SIMS, ["a", "b", "c", "d", "f"], [0.9, 0.5, 0.5, 0.3, 0.1 + TOL / 2]) is None
    )
    # a newcomer that does not tie the id it replaced is a different result
    diff = ranking_difference(IDS, SIMS, ["a", "b", "c", "d", "f"], [0.9, 0.5, 0.5, 0.3, 0.1 + 3 * TOL])
    assert diff is not None and "position 4" in diff
    # within the last tie group, only the replaced id's own tie counts
    sims = [0.9, 0.5, 0.3, 0.1, 0.1]
    ok = ranking_difference(IDS, sims, ["a", "b", "c", "e", "f"], [0.9, 0.5, 0.3, 0.1, 0.1])
    assert ok is None
    assert ranking_difference(IDS, sims, ["a", "b", "c", "e", "f"], [0.9, 0.5, 0.3, 0.1, 0.2]) is not None


def test_moved_ranges_are_the_smallest_permuted_blocks() -> None:
    assert permuted_ranges(IDS, IDS) == []
    assert permuted_ranges(IDS, ["a", "c", "b", "d", "e"]) == [(1, 3)]
    assert permuted_ranges(IDS, ["b", "a", "c", "e", "d"]) == [(0, 2), (3, 5)]
    assert permuted_ranges(IDS, ["c", "d", "a", "b", "e"]) == [(0, 4)]  # two blocks swapped
    assert permuted_ranges(IDS, ["a", "b", "x", "d", "e"]) == [(2, 5)]  # another id: to the end
    assert merge_ranges([(3, 5), (0, 2), (1, 3), (4, 6)]) == [(0, 3), (3, 6)]  # touching ones stay apart


def test_a_recorded_move_lets_ids_of_different_cosines_swap_there_only() -> None:
    # a tie upstream (two concepts' cosines) swapped b and c, whose own cosines differ
    sims = [0.9, 0.5, 0.4, 0.3, 0.1]
    got = ["a", "c", "b", "d", "e"]
    got_sims = [0.9, 0.4, 0.5, 0.3, 0.1]
    assert ranking_difference(IDS, sims, got, got_sims) is not None
    assert ranking_difference(IDS, sims, got, got_sims, moves=[[1, 3]]) is None
    # the move does not reach d: swapping it is still caught
    assert ranking_difference(IDS, sims, ["a", "b", "d", "c", "e"], [0.9, 0.5, 0.3, 0.4, 0.1], moves=[[1, 3]])
    # nor does it let another id in
    assert ranking_difference(IDS, sims, ["a", "x", "b", "d", "e"], [0.9, 0.4, 0.5, 0.3, 0.1], moves=[[1, 3]])


def _retrieval(**changes: Any) -> dict[str, Any]:
    row = {
        "method": "e2graphrag",
        "params": {"dense_only": True},
        "question": "Who?",
        "mode": "global",
        "branch": "dense_only",
        "rows": [3, 1, 2],
        "row_sims": [0.7, 0.4, 0.4],
        "items": ["d#3", "d#1", "d#2"],
        "sims": [0.7, 0.4, 0.4],
        "context_sha": "0123456789abcdef",
        "row_moves": [],
        "item_moves": [],
    }
    row.update(changes)
    return row


def test_a_retrieval_compares_mode_branch_and_evidence_exactly() -> None:
    want = _retrieval()
    assert retrieval_difference(want, copy.deepcopy(want)) is None
    swapped = _retrieval(rows=[3, 2, 1], items=["d#3", "d#2", "d#1"])
    assert retrieval_difference(want, swapped) is None  # a tie; the evidence text is the same
    assert "mode" in (retrieval_difference(want, _retrieval(mode="local")) or "")
    assert "branch" in (retrieval_difference(want, _retrieval(branch="no_entity")) or "")
    assert "evidence" in (retrieval_difference(want, _retrieval(context_sha="fedcba9876543210")) or "")
    assert "rows" in (retrieval_difference(want, _retrieval(rows=[1, 3, 2])) or "")
    assert "items" in (retrieval_difference(want, _retrieval(items=["d#1", "d#3", "d#2"])) or "")
    moved = _retrieval(row_moves=[[0, 2]], item_moves=[[0, 2]])
    swapped = _retrieval(
        rows=[1, 3, 2], row_sims=[0.4, 0.7, 0.4], items=["d#1", "d#3", "d#2"], sims=[0.4, 0.7, 0.4]
    )
    assert retrieval_difference(moved, swapped) is None
    assert retrieval_difference(want, swapped) is not None


def test_another_evidence_text_is_accepted_only_with_an_item_swapped_in_at_a_tied_cut() -> None:
    want = _retrieval()
    cut = _retrieval(items=["d#3", "d#1", "d#9"], sims=[0.7, 0.4, 0.4], context_sha="fedcba9876543210")
    assert retrieval_difference(want, cut) is None
    same_items = _retrieval(items=["d#3", "d#2", "d#1"], context_sha="fedcba9876543210")
    assert "evidence" in (retrieval_difference(want, same_items) or "")
