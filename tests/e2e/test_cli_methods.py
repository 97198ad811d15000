"""Method names where a user types them: `paretorag methods` in 80 columns (recommended first,
--json the full record), "did you mean ...?" for a typo in query, index, eval and the server,
and adding a method's structures to an index without naming its files again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from paretorag.cli import app
from paretorag.errors import MissingStructureError
from paretorag.rag import RAG
from paretorag.retrieval import catalog
from paretorag.retrieval.methods.base import recommended_method

from ..server_util import build_index, live_server, write_corpus

runner = CliRunner()


@pytest.fixture(scope="module")
def ix(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli-methods")
    return build_index(root / "ix", write_corpus(root / "src"))


def test_methods_fits_80_columns_on_a_wide_terminal():
    r = subprocess.run(
        [sys.executable, "-m", "paretorag.cli", "methods"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"},
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert lines[0].split() == ["method", "needs", "LLM", "calls"]
    rec = recommended_method()
    assert lines[1].split()[:2] == ["*", rec]  # the recommended method first, marked
    assert lines[2].startswith("      ") and len(lines[2].strip()) > 20  # its one-line description
    rows = {line.split()[0]: line for line in lines[1:] if line[:2] == "  " and not line[2:3].isspace()}
    assert rows["lightrag-local"].split()[1:] == ["rkg", "index", "+", "query"]
    assert rows["vanilla"].split()[1:] == ["-", "none"]
    assert rows["kgp"].split()[1:] == ["passage_graph", "query", "(generative)"]
    named = {line.split()[1] for line in lines if line.startswith("* ")} | set(rows)
    presets = {line.split(":")[0].strip() for line in lines if line.startswith("  e2graphrag-no-")}
    every = {r["name"] for r in catalog.methods()}
    assert every <= named | presets | {r["name"] for r in catalog.methods() if r.get("preset_of")}
    assert "e2graphrag-no-fallback" in presets


def test_methods_json_keeps_the_full_record():
    r = runner.invoke(app, ["methods", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert rows[0]["name"] == recommended_method() and rows[0]["recommended"] is True
    lr = next(row for row in rows if row["name"] == "lightrag-local")
    assert {"requires", "uses_llm", "steps", "paper", "doc", "params"} <= set(lr)
    assert "rkg" in lr["requires"]


def test_a_typo_gets_did_you_mean_in_query_index_and_eval(ix, tmp_path):
    q = runner.invoke(app, ["query", "otters", "--index", str(ix), "--method", "lightrag-locl"])
    assert q.exit_code == 2 and "did you mean 'lightrag-local'" in q.output
    i = runner.invoke(app, ["index", "--index", str(ix), "--methods", "vanila"])
    assert i.exit_code == 2 and "did you mean 'vanilla'" in i.output
    e = runner.invoke(
        app,
        ["eval", "--data", str(tmp_path / "no-data"), "--subset", "no-subset", "--methods", "vanilla,hybird"],
    )
    assert e.exit_code == 2
    assert "did you mean 'hybrid'" in e.output  # before the data is even looked at


def test_a_typo_gets_the_near_name_not_the_whole_list(ix):
    r = runner.invoke(app, ["query", "otters", "--index", str(ix), "--method", "fusoin"])
    assert r.exit_code == 2, r.output
    msg = " ".join(r.stderr.split())
    assert "unknown method 'fusoin'; did you mean 'fusion'? see `paretorag methods`" in msg
    assert "vanilla" not in msg and "hipporag" not in msg  # not the 42 names
    r = runner.invoke(app, ["query", "otters", "--index", str(ix), "--method", "zzzz"])
    assert r.exit_code == 2 and "see `paretorag methods`" in r.stderr and "vanilla" not in r.stderr


def test_the_server_suggests_too(ix):
    pytest.importorskip("fastapi")
    from paretorag.server import create_app

    with live_server(create_app(ix)) as base:
        r = httpx.post(base + "/query", json={"question": "otters", "method": "vanila"}, timeout=30)
    assert r.status_code == 400
    assert "did you mean 'vanilla'" in r.text


def test_index_without_paths_adds_a_method_and_the_error_names_the_command(ix, tmp_path):
    import shutil

    copy = Path(shutil.copytree(ix, tmp_path / "ix"))
    q = runner.invoke(app, ["query", "otters", "--index", str(copy), "--method", "bm25", "--context-only"])
    assert q.exit_code == 2
    assert f"run `paretorag index --index {copy} --methods bm25`" in " ".join(q.output.split())
    # a structure read outside the method's requirements
    with RAG.open(copy, create=False) as rag, pytest.raises(MissingStructureError) as info:
        rag.view.structure("bm25")
    assert f"`paretorag index --index {copy} --methods bm25`" in str(info.value)
    built = runner.invoke(app, ["index", "--index", str(copy), "--methods", "bm25"])
    assert built.exit_code == 0, built.output
    assert built.stdout.strip() == f"built bm25 for the 6 documents in {copy}"
    q = runner.invoke(app, ["query", "otters", "--index", str(copy), "--method", "bm25", "--context-only"])
    assert q.exit_code == 0, q.output
    assert q.stdout.startswith("[1] otters (")


def test_index_without_paths_takes_the_llm_it_is_given(ix, tmp_path):
    import shutil

    copy = Path(shutil.copytree(ix, tmp_path / "ix"))
    built = runner.invoke(app, ["index", "--index", str(copy), "--methods", "bm25", "--llm", "fake"])
    assert built.exit_code == 0, built.output
    with RAG.open(copy, create=False) as rag:
        assert rag.manifest.config.llm == "fake" and "bm25" in rag.manifest.structures
