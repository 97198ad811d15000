"""What the CLI prints where: results on stdout, bars, notes and errors on stderr; the summary
never glued to a bar (in a terminal too); no empty line before an error; no library DEBUG lines.

Each command runs as a real process (``python -m paretorag.cli``), with stdout and stderr
captured apart, or both on one pseudo-terminal as a user sees them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..server_util import write_corpus

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "100"}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paretorag.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def on_terminal(*args: str, timeout: float = 90) -> tuple[int, str]:
    """Run with stdout and stderr on one pseudo-terminal; the screen's text, escapes removed."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**ENV, "TERM": "xterm"},
        close_fds=True,
    )
    os.close(slave)
    data = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            data += chunk
    finally:
        proc.wait(timeout)
        os.close(master)
    return proc.returncode, ANSI.sub("", data.decode("utf-8", "replace"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli-output")
    write_corpus(root / "src")
    return root


@pytest.fixture(scope="module")
def index_run(corpus) -> tuple[Path, subprocess.CompletedProcess[str]]:
    ix = corpus / "ix"
    r = cli(
        "index", str(corpus / "src"), "--index", str(ix), "--embedder", "hash:64", "--methods", "vanilla,bm25"
    )
    return ix, r


def test_index_prints_only_its_summary_on_stdout(index_run):
    _, r = index_run
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [r.stdout.strip()]  # one line
    assert re.fullmatch(
        r"added 6, updated 0, unchanged 0, removed 0; index has 6 documents, 6 chunks \(\d+\.\d s\)\n",
        r.stdout,
    )
    assert "chunking" in r.stderr and "embedding chunks" in r.stderr  # the bars are on stderr
    assert "DEBUG" not in r.stderr and "Building index" not in r.stderr


def test_query_results_on_stdout_and_nothing_else(index_run):
    ix, _ = index_run
    r = cli(
        "query", "What do otters eat?", "--index", str(ix), "--method", "bm25", "--json", "--context-only"
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # the whole of stdout is the one answer
    assert data["method"] == "bm25" and data["contexts"][0]["title"] == "otters"
    assert "DEBUG" not in r.stderr and "Building index" not in r.stderr
    plain = cli("query", "What do otters eat?", "--index", str(ix), "--method", "bm25", "--context-only")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("[1] otters (")
    assert "DEBUG" not in plain.stderr and "Otters eat fish" not in plain.stderr


def test_summary_is_not_glued_to_a_bar_on_a_terminal(corpus):
    ix = corpus / "ix-tty"
    rc, screen = on_terminal(
        "index", str(corpus / "src"), "--index", str(ix), "--embedder", "hash:64", "--methods", "vanilla"
    )
    assert rc == 0, screen
    lines = [line.split("\r")[-1] for line in screen.replace("\r\n", "\n").split("\n")]
    summary = [line for line in lines if "added 6, updated 0" in line]
    assert summary and all(line.startswith("added 6, updated 0") for line in summary), screen
    assert "ETAadded" not in screen.replace(" ", "") and "━added" not in screen


def test_an_error_comes_without_an_empty_line_before_it(index_run, tmp_path):
    ix, _ = index_run
    missing = tmp_path / "nowhere"
    r = cli("index", str(missing), "--index", str(ix))
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("error: nothing to index: "), repr(r.stderr)
    rc, screen = on_terminal("index", str(missing), "--index", str(ix))
    assert rc == 2
    assert screen.lstrip("\r").startswith("error: nothing to index: "), repr(screen)


def test_inspect_cuts_no_value_at_80_columns(corpus):
    ix = corpus / "ix-inspect"
    args = ["--embedder", "hash:64", "--methods", "g2cons-concept,lightrag-local", "--llm", "fake"]
    built = cli("index", str(corpus / "src"), "--index", str(ix), *args)
    assert built.returncode == 0, built.stderr
    r = subprocess.run(
        [sys.executable, "-m", "paretorag.cli", "inspect", "--index", str(ix)],
        capture_output=True,
        text=True,
        env={**ENV, "COLUMNS": "80"},
        timeout=90,
    )
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout, r.stdout  # no value ends in an ellipsis
    rows = [line for line in r.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert rows and max(len(line) for line in rows) <= 80, r.stdout
    for whole in ("build.concept_graph", "index.rkg", "concept_graph", "texts embedded", "spans pooled"):
        assert whole in r.stdout, whole
