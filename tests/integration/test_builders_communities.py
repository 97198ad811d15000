"""GraphRAG communities (GraphRAG §2.3-2.4; unified framework §5): hierarchical Leiden, reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from paretorag.errors import ConfigError
from paretorag.graphs.base import builder_class, get_builder
from paretorag.graphs.communities import leiden_levels, parse_report
from paretorag.providers.base import Request
from paretorag.providers.llm import FakeLLM
from paretorag.storage.structures import StructureData

from ..builders_util import CORPUS, Ctx, round_trip, table

MORE = [
    "Steven Spielberg directed Jaws in California. Spielberg met George Lucas in California.",
    "George Lucas created Star Wars. Lucas founded Lucasfilm in California.",
]


def tkg() -> StructureData:
    return get_builder("tkg").build(Ctx(table(CORPUS + MORE)))  # type: ignore[arg-type]


def sbm(n_blocks: int = 4, size: int = 30, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    n = n_blocks * size
    block = np.arange(n) // size
    p = np.where(block[:, None] == block[None, :], 0.3, 0.01)
    a = np.triu(rng.random((n, n)) < p, 1)
    return sp.csr_matrix((a | a.T).astype(np.float32))


def test_hierarchical_leiden_invariants() -> None:
    adj = sbm()
    comms = leiden_levels(adj, max_cluster_size=10)
    level0 = [set(r.tolist()) for lv, _, r in comms if lv == 0]
    assert len(level0) >= 4 and set().union(*level0) == set(range(adj.shape[0]))
    assert sum(len(s) for s in level0) == adj.shape[0]  # a partition
    for lv, parent, rows in comms:
        if parent >= 0:
            plv, _, prow = comms[parent]
            assert lv == plv + 1 and set(rows.tolist()) <= set(prow.tolist()) and prow.size > 10
    assert max(lv for lv, _, _ in comms) >= 1  # blocks of 30 > 10 are split again
    assert [(lv, p, r.tolist()) for lv, p, r in comms] == [
        (lv, p, r.tolist()) for lv, p, r in leiden_levels(adj, max_cluster_size=10)
    ]


def test_offline_reports_and_round_trip(tmp_path: Path) -> None:
    src = tkg()
    data = get_builder("communities").build(Ctx(table(CORPUS + MORE), structures={"tkg": src}))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    c = g.communities
    assert c is not None and len(c) == data.meta["summary"]["communities"] > 0
    assert g.names == round_trip(src, tmp_path / "src").names  # the TKG itself is kept
    assert c.vectors is not None and c.vectors.shape[0] == len(c) and c.rating is not None
    assert all(r.startswith("# ") and "Entities:" in r for r in c.reports)
    assert float(c.rating.max()) == pytest.approx(10.0) and float(c.rating.min()) >= 0
    assert data.meta["summary"]["llm_calls"] == 0
    biggest = int(np.argmax(np.diff(c.members.indptr)))
    members = {g.names[int(i)] for i in c.members[biggest].indices}
    assert members & {"steven spielberg", "george lucas", "california", "barack obama"}


def test_llm_reports_parsed_with_one_retry() -> None:
    seen: list[str] = []

    def reply(req: Request) -> str:
        last = req.messages[-1].content
        if last.startswith("Your answer was not valid JSON"):
            return json.dumps({"title": "Retried", "summary": "Fixed.", "rating": "7.5"})
        seen.append(last)
        if len(seen) == 1:
            return "The community is about films."  # no JSON: retried once
        return '```json\n{"title": "Film people", "summary": "Directors.", "rating": 11, "findings": [{"summary": "A", "explanation": "B"}],}\n```'

    llm = FakeLLM(reply)
    data = get_builder("communities").build(Ctx(table(CORPUS + MORE), llm, {"tkg": tkg()}))  # type: ignore[arg-type]
    from paretorag.graphs.graph import graph_from_structure

    c = graph_from_structure(data).communities
    assert c is not None and c.rating is not None
    n = len(c)
    assert len(llm.requests) == n + 1 == data.meta["summary"]["llm_calls"]
    assert "-----Entities-----" in seen[0] and "id,entity,description" in seen[0]
    assert c.reports[0] == "# Retried\n\nFixed." and c.rating[0] == pytest.approx(7.5)
    if n > 1:
        assert c.reports[1].startswith("# Film people") and c.rating[1] == 10.0  # clamped to 0-10


def test_parse_report_rejects_incomplete() -> None:
    assert parse_report('{"title": "x"}') is None and parse_report("nope") is None
    assert parse_report('{"title": "x", "summary": "y", "rating": "high"}') == ("# x\n\ny", 0.0)


def test_requires_tkg_and_validates() -> None:
    assert builder_class("communities").requires == ("tkg",)
    with pytest.raises(ConfigError, match="max_cluster_size"):
        get_builder("communities", max_cluster_size=0).build(Ctx(table(), structures={"tkg": tkg()}))  # type: ignore[arg-type]
