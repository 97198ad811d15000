"""The evaluation runner end to end: results.json, the Markdown table, the plots, index reuse."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from paretorag.eval.cli import eval_command, parse_ks
from paretorag.eval.report import metric_label, pareto_front, quality_metric
from paretorag.eval.results_doc import render
from paretorag.eval.runner import parse_chunking, run_eval

DATA = Path(os.environ.get("PARETORAG_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"benchmark data not found at {DATA} (set PARETORAG_DATA)"
)


def _check_outputs(out: Path) -> dict:
    payload = json.loads((out / "results.json").read_text())
    assert (out / "results.md").read_text().startswith("# ")
    for png in ("pareto_latency.png", "pareto_index_tokens.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return payload


@needs_data
@pytest.mark.slow
def test_vanilla_on_20_musique_questions_with_minilm(tmp_path: Path) -> None:
    """The CI slice: 20 MuSiQue dev questions over their own 368 paragraphs, real MiniLM embedder."""
    kwargs = dict(limit=20, corpus="own", out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    payload = run_eval(DATA, "musique_dev200", ["vanilla"], **kwargs)
    saved = _check_outputs(tmp_path / "out")
    assert saved["methods"] == payload["methods"]
    m = payload["methods"]["vanilla"]
    assert m["n_questions"] == 20 and m["n_with_gold"] == 20
    r = m["metrics"]
    # monotone in k, and the definitions nest: all <= fraction <= any
    for a, b in [(1, 2), (2, 5), (5, 10)]:
        assert r[f"recall@{a}"] <= r[f"recall@{b}"]
        assert r[f"context_recall@{a}"] <= r[f"context_recall@{b}"]
    for k in (1, 2, 5, 10):
        assert r[f"recall_all@{k}"] <= r[f"recall@{k}"] <= r[f"recall_any@{k}"]
    # dense MiniLM retrieval over 368 passages finds most gold paragraphs in the top 10
    assert r["recall@10"] >= 0.6 and r["recall@5"] >= 0.4
    assert 0.0 <= r["f1"] <= 1.0 and "em" in r and "rouge_l" in r
    assert m["index_cost"]["llm_tokens"] == 0 and m["index_cost"]["seconds_per_stage"]["embed"] > 0
    assert m["query_cost"]["llm_calls_per_query"] == 0.0  # the offline reader answers without an LLM
    assert m["reader"] == "reader" and 0.0 <= r["guess_em"] <= r["em"] + 1.0
    assert r["abstain_answerable"] is not None or r["abstain_unanswerable"] is not None
    q0 = payload["questions"]["vanilla"][0]
    assert len(q0["doc_ids"]) == 10 and q0["mode"] == "dense" and q0["retrieved"][0]["score"] > 0
    # a re-run reuses the index and gives the same numbers
    again = run_eval(DATA, "musique_dev200", ["vanilla"], **kwargs)
    assert again["index"]["built_now"] is False
    assert again["methods"]["vanilla"]["metrics"] == r
    assert (
        again["methods"]["vanilla"]["index_cost"]["seconds_per_stage"] == m["index_cost"]["seconds_per_stage"]
    )


@needs_data
def test_two_methods_multiple_choice_hash_embedder(tmp_path: Path) -> None:
    payload = run_eval(
        DATA,
        "quality",
        ["vanilla", "zeroshot"],
        limit=3,
        ks=(2, 5),
        corpus="own",
        embedder="hash",
        out_dir=tmp_path / "out",
    )
    _check_outputs(tmp_path / "out")
    assert set(payload["methods"]) == {"vanilla", "zeroshot"}
    v, z = payload["methods"]["vanilla"]["metrics"], payload["methods"]["zeroshot"]["metrics"]
    assert "choice_accuracy" in v and "recall@2" not in v  # no gold passages in QuALITY
    assert z["context_recall@5"] == 0.0  # zeroshot retrieves nothing
    assert quality_metric(payload) == "choice_accuracy"
    assert payload["dataset"]["n_passages"] == 1 and payload["dataset"]["multiple_choice"]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "| `zeroshot` |" in md and "MC acc" in md
    doc = render([payload], "python -m paretorag.eval.results_doc")
    assert doc.startswith("# Results") and "## quality-own: vanilla, zeroshot" in doc
    assert "(results/quality/pareto_latency.png)" in doc
    assert "| quality-own | 3 | 1 | `zeroshot` |" in doc


@needs_data
def test_retrieval_only_and_cli(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)  # keep "eval" a sub-command
    out = tmp_path / "cli"
    args = f"eval --data {DATA} --subset popqa --methods vanilla --limit 5 --k 2,5 --corpus own"
    args += f" --embedder hash --retrieval-only --out {out}"
    result = CliRunner().invoke(app, args.split())
    assert result.exit_code == 0, result.output
    payload = _check_outputs(out)
    m = payload["methods"]["vanilla"]
    assert set(m["metrics"]) == {
        f"{p}@{k}" for p in ("recall", "recall_all", "recall_any", "context_recall") for k in (2, 5)
    }
    assert m["query_cost"]["llm_calls_per_query"] == 0.0 and "generation" not in m["latency"]
    assert (out / ".index-cache").is_dir()
    assert "R@5" in result.output


def test_parse_ks_and_labels() -> None:
    assert parse_ks("5, 2,2") == [2, 5]
    with pytest.raises(ValueError, match="--k"):
        parse_ks("two")
    with pytest.raises(ValueError, match="--k"):
        parse_ks("0,5")
    assert parse_ks("1,100") == [1, 100]
    with pytest.raises(ValueError, match="at most 100"):  # the k limit of RAG.query
        parse_ks("1,101")
    assert metric_label("recall_any@5") == "R-any@5" and metric_label("context_recall@2") == "CR@2"


def test_pareto_front() -> None:
    # (latency, quality): b dominates c; a is fastest; d is best
    xs, ys = [1.0, 2.0, 3.0, 10.0], [0.3, 0.5, 0.4, 0.9]
    assert pareto_front(xs, ys) == [0, 1, 3]
    assert pareto_front([1.0, 1.0], [0.2, 0.6]) == [1]
    assert pareto_front([], []) == []


def test_cli_error_names_the_fix(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["eval", "--data", str(tmp_path), "--subset", "nope"])
    assert result.exit_code == 2
    assert "unknown subset 'nope'" in result.output


def _small_cached_run(tmp_path: Path) -> dict[str, Any]:
    """``run_eval`` settings for three questions, retrieval only, on an index cached in ``tmp_path``."""
    return dict(
        limit=3,
        ks=(2,),
        corpus="own",
        embedder="hash",
        retrieval_only=True,
        plots=False,
        out_dir=tmp_path / "out",
        cache_dir=tmp_path / "cache",
    )


@needs_data
def test_an_eval_builds_only_the_structures_of_its_methods(tmp_path: Path) -> None:
    """An eval serves exactly the methods it runs: a later run does not build (or keep
    updating) what an earlier one asked for, and a structure asked for again is reused."""
    from paretorag.storage.manifest import Manifest

    kwargs = _small_cached_run(tmp_path)
    first = run_eval(DATA, "musique_dev200", ["vanilla", "bm25"], **kwargs)
    index_dir = Path(first["config"]["index_dir"])
    bm25_dir = index_dir / "structures" / Manifest.load(index_dir).structures["bm25"]["dir"]
    stamp = bm25_dir.stat().st_mtime_ns

    run_eval(DATA, "musique_dev200", ["vanilla", "raptor"], **kwargs)  # builds and commits raptor_tree
    m = Manifest.load(index_dir)
    assert m.config.methods == ["vanilla", "raptor"]  # a change of the corpus would update these alone
    assert "raptor_tree" in m.structures
    assert bm25_dir.is_dir() and m.structures["bm25"]["dir"] == bm25_dir.name  # kept: same chunks

    again = run_eval(DATA, "musique_dev200", ["bm25"], **kwargs)
    m = Manifest.load(index_dir)
    assert (
        m.config.methods == ["bm25"] and (index_dir / "structures" / m.structures["bm25"]["dir"]) == bm25_dir
    )
    assert bm25_dir.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert again["methods"]["bm25"]["metrics"] == first["methods"]["bm25"]["metrics"]


@needs_data
def test_builder_settings_of_an_earlier_run_do_not_leak_into_the_next(tmp_path: Path) -> None:
    """A run without ``--set`` builds with the defaults, whatever an earlier run on the same
    cached index set; the earlier setting's structure stays cached for when it is asked again."""
    from paretorag.storage.manifest import Manifest

    kwargs = _small_cached_run(tmp_path)
    first = run_eval(DATA, "musique_dev200", ["bm25"], builders={"bm25": {"k1": 0.9}}, **kwargs)
    index_dir = Path(first["config"]["index_dir"])
    assert Manifest.load(index_dir).config.builders == {"bm25": {"k1": 0.9}}
    tuned = Manifest.load(index_dir).structures["bm25"]["dir"]
    run_eval(DATA, "musique_dev200", ["bm25"], **kwargs)
    m = Manifest.load(index_dir)
    assert m.config.builders == {} and m.structures["bm25"]["dir"] != tuned
    run_eval(DATA, "musique_dev200", ["bm25"], builders={"bm25": {"k1": 0.9}}, **kwargs)
    assert Manifest.load(index_dir).structures["bm25"]["dir"] == tuned  # cached, not rebuilt


@needs_data
def test_chunkings_compared_in_one_run_on_a_split_with_option_passages(tmp_path: Path) -> None:
    payload = run_eval(
        DATA,
        "quality@dev",
        ["vanilla"],
        limit=4,
        ks=(2, 5),
        corpus="own",
        embedder="hash",
        retrieval_only=True,
        out_dir=tmp_path / "out",
        plots=False,
        chunkings=["sentences:400", "sections:400"],
    )
    rows = payload["methods"]
    assert set(rows) == {"vanilla [sentences 400]", "vanilla [sections 400]"}
    assert rows["vanilla [sections 400]"]["chunking"] == {"by": "sections", "size": 400}
    assert payload["dataset"]["name"] == "quality@dev-own" and payload["dataset"]["n_questions"] == 4
    caches = sorted(p.name for p in (tmp_path / "out" / ".index-cache").iterdir() if p.is_dir())
    assert len(caches) == 2 and all(c.startswith("quality-") for c in caches)  # one index per chunking
    ops = [
        v
        for row in rows
        for q in payload["questions"][row]
        if (v := q["metrics"].get("option_passage@5")) is not None
    ]
    assert ops and set(ops) <= {0.0, 1.0}
    assert "OP@5" in (tmp_path / "out" / "results.md").read_text()
    with pytest.raises(ValueError, match="KIND\\[:SIZE\\]"):
        parse_chunking("pages:300")
    assert parse_chunking("600") == (600, "sections") and parse_chunking("sentences") == (1200, "sentences")


def test_question_split_is_stable_and_disjoint() -> None:
    from paretorag.eval.schema import Dataset, Question, question_fold

    qs = [Question(f"q{i}", "?", ["a"]) for i in range(200)]
    ds = Dataset(name="set", questions=qs, passages=[])
    dev, train = ds.split("dev"), ds.split("train")
    assert {q.qid for q in dev.questions}.isdisjoint({q.qid for q in train.questions})
    assert len(dev.questions) + len(train.questions) == 200 and 20 < len(dev.questions) < 60
    assert all(question_fold("set", q.qid) == 0 for q in dev.questions)
    assert dev.name == "set@dev" and Dataset(name="set", questions=qs[:50], passages=[]).split(
        "dev"
    ).questions == [q for q in dev.questions if int(q.qid[1:]) < 50]
    with pytest.raises(ValueError, match="nq_leval@dev"):
        ds.split("test")
