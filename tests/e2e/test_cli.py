"""The CLI through typer's runner, plus one real subprocess running the README's demo steps."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from paretorag.cli import app

from ..conftest import ROOT

runner = CliRunner()


def _corpus(tmp_path: Path) -> Path:
    src = tmp_path / "docs"
    src.mkdir()
    (src / "owls.md").write_text("# Owls\n\nThe snowy owl lives in the Arctic tundra. It hunts lemmings.\n")
    (src / "bees.html").write_text(
        "<html><head><title>Bees</title><style>p{}</style></head><body><p>Honey bees dance to share where flowers are.</p>"
        "<script>var x=1;</script></body></html>"
    )
    return src


def test_index_query_inspect_insert_delete(tmp_path):
    src = _corpus(tmp_path)
    ix = str(tmp_path / "ix")
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash"])
    assert r.exit_code == 0, r.output
    assert "added 2, updated 0, unchanged 0, removed 0" in r.output
    r = runner.invoke(app, ["query", "Where does the snowy owl live?", "--index", ix, "--json", "-k", "1"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data) >= {"answer", "method", "mode", "contexts", "citations", "usage", "timings_ms"}
    assert set(data) >= {"text", "evidence", "confidence", "found", "answered_by"}
    assert data["answered_by"] == "reader" and isinstance(data["found"], bool)
    assert data["contexts"][0]["title"] == "owls" and "tundra" in data["text"]
    assert (
        data["evidence"]
        and data["evidence"][0]["passage"] == 1
        and "tundra" in data["evidence"][0]["sentence"]
    )
    assert set(data["contexts"][0]) == {"chunk_id", "doc_id", "title", "text", "score"}
    assert set(data["usage"]) == {"llm_calls", "prompt_tokens", "completion_tokens"}
    # "second_hop" where the reader retrieved again (its seconds are part of "generation")
    assert set(data["timings_ms"]) - {"second_hop"} == {"retrieval", "generation", "total"}
    r = runner.invoke(app, ["query", "bees", "--index", ix, "--context-only", "--json"])
    ctx = json.loads(r.stdout)
    assert ctx["answer"] == "" and ctx["usage"]["llm_calls"] == 0
    assert "var x" not in ctx["contexts"][0]["text"] and "dance" in ctx["contexts"][0]["text"]

    extra = tmp_path / "more.txt"
    extra.write_text("Penguins live in the Southern Hemisphere.")
    r = runner.invoke(app, ["insert", str(extra), "--index", ix])
    assert r.exit_code == 0 and "added 1" in r.output
    r = runner.invoke(app, ["inspect", "--index", ix, "--json"])
    stats = json.loads(r.stdout)
    assert stats["counts"]["documents"] == 3 and len(stats["documents"]) == 3
    pid = next(d["doc_id"] for d in stats["documents"] if d["title"] == "more")
    r = runner.invoke(app, ["delete", pid, "--index", ix])
    assert r.exit_code == 0 and "deleted 1" in r.output
    r = runner.invoke(app, ["inspect", "--index", ix])
    assert r.exit_code == 0 and "documents': 2" in r.output


def test_cli_errors_are_clear(tmp_path):
    r = runner.invoke(app, ["query", "x", "--index", str(tmp_path / "none")])
    assert r.exit_code == 2 and "not a paretorag index" in r.output
    src = _corpus(tmp_path)
    ix = str(tmp_path / "ix")
    runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash"])
    r = runner.invoke(app, ["query", "  ", "--index", ix])
    assert r.exit_code == 2 and "question is empty" in r.output
    r = runner.invoke(app, ["query", "x", "--index", ix, "--method", "nosuch"])
    assert r.exit_code == 2 and "unknown method 'nosuch'" in r.output
    r = runner.invoke(app, ["query", "q", "--index", ix, "--method", "entity-wlak"])
    assert r.exit_code == 2 and "did you mean 'entity-walk'?" in r.output
    r = runner.invoke(app, ["index", str(tmp_path / "missing.txt"), "--index", ix])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_readme_demo_commands_in_a_real_subprocess(tmp_path):
    """The README's `make demo` steps: index the project's docs, ask a question (real MiniLM)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ix = str(tmp_path / "demo-index")

    def paretorag(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "paretorag.cli", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    paretorag("index", "README.md", "docs", "--index", ix, "--methods", "fusion")
    data = json.loads(
        paretorag(
            "query", "What happens when indexing is killed halfway?", "--index", ix, "-k", "3", "--json"
        )
    )
    assert len(data["contexts"]) == 3 and data["citations"]
    assert data["method"] == "fusion"  # the recommended method, as `make demo` asks without --method
    top = data["contexts"][0]  # the page on crashes (docs/operations.md), or the README's summary of it
    assert top["title"] in ("operations", "README") and "SIGKILL" in top["text"]
    assert data["found"] and "SIGKILL" in data["answer"] and data["citations"][0]["title"] == top["title"]
    makefile = (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    # the third question asks a short fact the README's results table states: a span, exactly
    question = "How many passages does the MuSiQue dev corpus have?"
    assert question in makefile
    data = json.loads(paretorag("query", question, "--index", ix, "-k", "3", "--json"))
    stated = re.search(r"musique_dev200 \(\d+ q, ([\d,]+) passages\)", readme)
    assert stated is not None and data["found"] and data["answer"] == stated.group(1)
    assert "make demo" in readme and "make test" in readme
    assert "paretorag index README.md docs --index demo-index --methods fusion" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_builder_settings_from_the_cli(tmp_path):
    src = _corpus(tmp_path)
    ix = tmp_path / "ix"
    args = ["index", str(src), "--index", str(ix), "--embedder", "hash", "--methods", "e2graphrag"]
    r = runner.invoke(app, [*args, "--set", "tree.g=3", "--set", "entity_graph.n_process=1"])
    assert r.exit_code == 0, r.output
    m = json.loads((ix / "manifest.json").read_text())
    assert m["config"]["builders"] == {"tree": {"g": 3}, "entity_graph": {"n_process": 1}}
    tree_dir = m["structures"]["tree"]["dir"]
    graph_dir = m["structures"]["entity_graph"]["dir"]
    # a runtime-only setting (processes) keeps the structure; an output setting rebuilds it
    r = runner.invoke(app, [*args, "--set", "entity_graph.n_process=2", "--set", "tree.g=2"])
    assert r.exit_code == 0, r.output
    m = json.loads((ix / "manifest.json").read_text())
    assert m["structures"]["entity_graph"]["dir"] == graph_dir
    assert m["structures"]["tree"]["dir"] != tree_dir
    r = runner.invoke(app, [*args, "--set", "tree.nope=1"])
    assert r.exit_code == 2 and "no setting 'nope'" in r.output
    r = runner.invoke(app, [*args, "--set", "tree"])
    assert r.exit_code == 2 and "STRUCTURE.SETTING=VALUE" in r.output


def test_user_text_with_brackets_is_printed_not_parsed_as_markup(tmp_path):
    src = tmp_path / "src [draft]"
    src.mkdir()
    (src / "[bold]otters[red].md").write_text(
        "# Otters\n\nSee [/wiki/otter] for more: the otter [red]eats[/red] fish in rivers :smile:.\n"
    )
    ix = str(tmp_path / "ix [1]")
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["query", "What does the otter eat?", "--index", ix, "-k", "1"])
    assert r.exit_code == 0, r.output
    assert "[/wiki/otter]" in r.stdout and "[red]eats[/red]" in r.stdout and ":smile:" in r.stdout
    assert "[bold]otters[red]" in r.stdout  # the title, as written
    r = runner.invoke(app, ["inspect", "--index", ix, "--documents"])
    assert r.exit_code == 0, r.output
    assert "[bold]otters[red]" in r.stdout and "src [draft]" in r.stdout
    r = runner.invoke(app, ["index", str(tmp_path / "missing [x].txt"), "--index", ix])
    assert r.exit_code == 2 and "missing [x].txt" in r.output


def test_progress_and_problems_go_to_stderr_results_to_stdout(tmp_path):
    src = _corpus(tmp_path)
    (src / "photo.png").write_bytes(b"\x89PNG")
    ix = str(tmp_path / "ix")
    r = runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("added 2, updated 0") and r.stdout.count("\n") == 1
    assert "chunking" in r.stderr and "embedding chunks" in r.stderr and "photo.png" in r.stderr
    r = runner.invoke(app, ["query", "owl", "--index", ix, "--json"])
    json.loads(r.stdout)  # only the JSON object


def test_progress_bar_labels_are_distinct(tmp_path):
    from contextlib import contextmanager

    from paretorag import RAG
    from paretorag.providers.embedders import HashEmbedder

    labels: list[str] = []

    class Recorder:
        @contextmanager
        def task(self, description, total):
            labels.append(description)

            class _T:
                def advance(self, n=1):
                    pass

            yield _T()

    src = _corpus(tmp_path)
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32), methods=["e2graphrag", "g2cons-concept"])
    rag.index([src], progress=Recorder())
    assert len(labels) == len(set(labels)) >= 4, labels


def test_a_mistyped_index_gets_the_near_index_beside_it(tmp_path):
    lone = tmp_path / "ix-fusoin"
    r = runner.invoke(app, ["query", "x", "--index", str(lone)])  # no index anywhere near
    msg = " ".join(r.stderr.split())
    assert r.exit_code == 2 and "not a paretorag index" in msg
    assert f"paretorag index FILES --index {lone}" in msg and 'paretorag.toml ([index] path = "DIR")' in msg
    src = _corpus(tmp_path)
    runner.invoke(app, ["index", str(src), "--index", str(tmp_path / "ix-fusion"), "--embedder", "hash"])
    for cmd in (["query", "x"], ["inspect"], ["delete", "doc"], ["graph", "entities"]):
        r = runner.invoke(app, [*cmd, "--index", str(lone)])
        msg = " ".join(r.stderr.split())
        assert r.exit_code == 2 and f"did you mean --index {tmp_path / 'ix-fusion'}?" in msg, (cmd, r.output)
    r = runner.invoke(app, ["query", "x", "--index", str(tmp_path / "other")])  # not near: listed
    msg = " ".join(r.stderr.split())
    assert r.exit_code == 2 and f"indexes beside it: {tmp_path / 'ix-fusion'}" in msg


def test_version_help_texts_and_delete_hint(tmp_path):
    from paretorag import __version__

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"paretorag {__version__}"
    wide = {"COLUMNS": "250"}
    for cmd in ("query", "insert", "delete", "inspect"):
        r = runner.invoke(app, [cmd, "--help"], env=wide)
        assert "created if missing" not in r.stdout and "existing index" in r.stdout, cmd
    assert "created if missing" in runner.invoke(app, ["index", "--help"], env=wide).stdout
    src = _corpus(tmp_path)
    ix = str(tmp_path / "ix")
    runner.invoke(app, ["index", str(src), "--index", ix, "--embedder", "hash"])
    r = runner.invoke(app, ["delete", "0123456789abcdef", "--index", ix])
    assert r.exit_code == 2 and "unknown document ids: 0123456789abcdef" in r.stderr
    assert f"paretorag inspect --index {ix} --documents" in r.stderr
    r = runner.invoke(app, ["inspect", "--index", ix])
    assert "--documents" in r.stdout


def test_no_library_debug_lines_on_the_console(tmp_path):
    """bm25s sets its own logger to DEBUG; the CLI prints none of it (stderr holds progress only)."""
    src = _corpus(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    exe = [sys.executable, "-m", "paretorag.cli"]
    ix = str(tmp_path / "ix")
    r = subprocess.run(
        [*exe, "index", str(src), "--index", ix, "--embedder", "hash", "--methods", "bm25"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    q = subprocess.run(
        [*exe, "query", "otters", "--index", ix, "--method", "bm25", "--context-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert q.returncode == 0, q.stderr
    for out in (r.stdout, r.stderr, q.stdout, q.stderr):
        assert "DEBUG" not in out and "Building index from IDs" not in out


def test_serve_without_the_serve_extra_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the serve extra were not installed
    r = runner.invoke(app, ["serve", "--index", str(tmp_path / "ix")])
    assert r.exit_code != 0
    assert "pip install 'paretorag[serve]'" in r.output and "Traceback" not in r.output
