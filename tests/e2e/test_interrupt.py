"""Ctrl-C stops a write promptly, exits 130, says what was kept, and a re-run resumes;
SIGTERM does the same and exits 143, in any command but the servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.progress import RichProgress

CHILD = Path(__file__).parents[1] / "interrupt_child.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _corpus(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"doc{i:03d}.txt").write_text(
            " ".join(f"Person {i} met Alice Smith in Paris on day {j} near the river." for j in range(12))
        )
    return root


STOPS = {  # signal -> (exit code, what stderr says)
    signal.SIGINT: (130, "interrupted: kept"),
    signal.SIGTERM: (143, "stopped (SIGTERM): kept"),
}


@pytest.mark.parametrize("sig", list(STOPS), ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize(("stage", "marker", "n_docs"), [("embed", "embed", 60), ("structure", "llm", 24)])
def test_ctrl_c_stops_promptly_and_a_rerun_resumes(tmp_path, stage, marker, n_docs, sig):
    corpus = _corpus(tmp_path / "src", n_docs)
    ix = tmp_path / "ix"
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), stage, str(ix), str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == marker:
            break
    time.sleep(0.3)
    t0 = time.perf_counter()
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    seconds = time.perf_counter() - t0
    code, said = STOPS[sig]
    assert proc.returncode == code, stderr
    assert said in stderr and "run the same command again to resume" in stderr.lower()
    assert "Traceback" not in stderr
    assert seconds < 8.0, f"took {seconds:.1f} s to stop"  # 48 s before: the tree ran to its end
    # nothing was committed half-way, and the same command finishes the job
    with RAG.open(ix, create=False, embedder="hash:32") as rag:
        assert rag.manifest.vectors == "" and rag.store.counts()["documents"] == n_docs
    args = ["index", str(corpus), "--index", str(ix), "--embedder", "hash:32", "--chunk-size", "60"]
    r = CliRunner().invoke(app, [*args, "--chunk-overlap", "10"])
    assert r.exit_code == 0, r.output
    with RAG.open(ix, create=False, embedder="hash:32") as rag:
        assert rag.manifest.counts["documents"] == n_docs and rag.check() == []


def test_an_interrupted_stage_does_not_show_as_done():
    with RichProgress() as progress:
        with pytest.raises(KeyboardInterrupt), progress.task("embedding chunks", total=10) as task:
            task.advance(3)
            raise KeyboardInterrupt
        (shown,) = progress._progress.tasks
    assert shown.completed == 3


def test_sigterm_stops_chat_with_a_message_and_exit_143(tmp_path):
    ix = tmp_path / "ix"
    args = ["index", str(_corpus(tmp_path / "src", 2)), "--index", str(ix), "--embedder", "hash:32"]
    assert CliRunner().invoke(app, [*args, "--methods", "vanilla"]).exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "paretorag.cli", "chat", "--index", str(ix), "--context-only"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("Where did Alice Smith meet Person 1?\n")
    proc.stdin.flush()
    assert proc.stdout.readline().startswith("[1] ")  # it answered, and waits for the next line
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert stderr.rstrip().endswith("paretorag: stopped (SIGTERM)") and "Traceback" not in stderr
