"""ONNX Runtime sessions from a pre-optimized copy, kept per process; the cold query's warm-up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from paretorag.answering.reader.neural import (  # noqa: E402
    VARIANTS,
    batch_arrays,
    encode,
    load_span_model,
    shipped_span_model,
)
from paretorag.cli import warmup  # noqa: E402
from paretorag.providers import ort_session  # noqa: E402

MODEL = shipped_span_model() / VARIANTS["int8"]


@pytest.fixture(autouse=True)
def _fresh_sessions():
    ort_session.forget_sessions()
    yield
    ort_session.forget_sessions()


def _feeds() -> dict[str, np.ndarray]:
    model = load_span_model(shipped_span_model())
    texts = ["The lighthouse keeper counted the ships that passed Cape Wrath in 1912.", "None came back."]
    return batch_arrays(encode(model.tokenizer, "Who counted the ships?", texts))


def _plain(path: Path) -> object:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def test_a_session_from_the_optimized_copy_computes_the_same_numbers(tmp_path):
    feeds = _feeds()
    session = ort_session.cpu_session(MODEL, threads=1, cache=tmp_path)
    copy = ort_session.optimized_path(MODEL, tmp_path)
    assert copy.is_file() and copy.parent == tmp_path / ort_session.OPTIMIZED_DIR
    for got, want in zip(session.run(None, feeds), _plain(MODEL).run(None, feeds), strict=True):
        assert np.array_equal(got, want)
    # one session per file and threads in a process; other threads settings get their own
    assert ort_session.cpu_session(MODEL, threads=1, cache=tmp_path) is session
    assert ort_session.cpu_session(MODEL, threads=2, cache=tmp_path) is not session


def test_a_damaged_copy_is_dropped_and_the_model_file_serves(tmp_path):
    feeds = _feeds()
    ort_session.cpu_session(MODEL, threads=1, cache=tmp_path)
    copy = ort_session.optimized_path(MODEL, tmp_path)
    copy.write_bytes(b"not a model")
    ort_session.forget_sessions()
    session = ort_session.cpu_session(MODEL, threads=1, cache=tmp_path)
    assert not copy.exists()
    assert np.array_equal(session.run(None, feeds)[0], _plain(MODEL).run(None, feeds)[0])


def test_a_cache_that_cannot_be_written_leaves_the_model_file_to_serve(tmp_path):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder would be")
    session = ort_session.cpu_session(MODEL, threads=1, cache=blocked)
    assert session.run(None, _feeds())[0].shape[0] == 2
    assert list(tmp_path.iterdir()) == [blocked]


def _index(tmp_path: Path, config: dict[str, object]) -> Path:
    ix = tmp_path / "ix"
    ix.mkdir(parents=True)
    (ix / "manifest.json").write_text(json.dumps({"format_version": 1, "config": config}))
    return ix


def test_the_warm_up_starts_what_the_query_will_load(tmp_path):
    ix = _index(tmp_path, {"embedder": "minilm", "llm": "extractive"})
    assert warmup.plan(ix, reader=None, llm=None, answer=True) == ("minilm", True)
    assert warmup.plan(ix, reader="extractive", llm=None, answer=True) == ("minilm", False)
    assert warmup.plan(ix, reader=None, llm=None, answer=False) == ("minilm", False)
    assert warmup.plan(ix, reader=None, llm="openai:gpt-4o-mini", answer=True) == ("minilm", False)
    assert warmup.plan(ix, reader="reader", llm="openai:gpt-4o-mini", answer=True) == ("minilm", True)
    generative = _index(tmp_path / "g", {"embedder": "hash:64", "llm": "openai:gpt-4o-mini"})
    assert warmup.plan(generative, reader=None, llm=None, answer=True) == (None, False)
    assert warmup.start(generative, reader=None, llm=None, answer=True) is None
    assert warmup.plan(tmp_path / "missing", reader=None, llm=None, answer=True) == (None, False)


CHILD = """
import json, sys, threading
from pathlib import Path

class Watch:
    seen = []
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread().name == "paretorag-warm-up":
            self.seen.append(name)
        return None

from paretorag.cli import warmup
from paretorag.providers import ort_session
watch = Watch()
sys.meta_path.insert(0, watch)
thread = warmup.start(Path(sys.argv[1]), reader=None, llm=None, answer=True)
thread.join(timeout=120)
print(json.dumps({"alive": thread.is_alive(), "seen": watch.seen, "sessions": len(ort_session._SESSIONS)}))
"""


def test_the_warm_up_thread_imports_nothing_in_a_fresh_process(tmp_path):
    """Run where nothing is loaded yet, as in a cold ``paretorag query``: a module the thread
    imported while the main thread imports the reader could be handed half-initialized."""
    import subprocess

    ix = _index(tmp_path, {"embedder": "minilm", "llm": "extractive"})
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ix)], capture_output=True, text=True, timeout=180, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"alive": False, "seen": [], "sessions": 2}, (
        out.stderr
    )  # the embedder's and the span model's


def test_the_warmed_span_model_is_the_one_the_reader_uses(tmp_path, monkeypatch):
    from paretorag.answering.reader import neural
    from paretorag.answering.reader.core import Reader

    monkeypatch.setattr(neural, "_LOADED", {})
    ix = _index(tmp_path, {"embedder": "hash:64", "llm": "extractive"})
    thread = warmup.start(ix, reader=None, llm=None, answer=True)
    assert thread is not None
    thread.join(timeout=120)
    (session,) = ort_session._SESSIONS.values()
    assert Reader().span_model.session is session


def test_a_changed_model_file_gets_a_new_copy_and_the_old_one_goes(tmp_path):
    import os
    import shutil

    model = tmp_path / "m" / "reader-int8.onnx"
    model.parent.mkdir()
    shutil.copyfile(MODEL, model)
    other = tmp_path / "n" / "reader-int8.onnx"  # another model file of the same name stays
    other.parent.mkdir()
    shutil.copyfile(MODEL, other)
    cache = tmp_path / "cache"
    ort_session.cpu_session(model, threads=1, cache=cache)
    ort_session.cpu_session(other, threads=1, cache=cache)
    first = ort_session.optimized_path(model, cache)
    st = model.stat()
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # the model file changed
    ort_session.cpu_session(model, threads=1, cache=cache)
    second = ort_session.optimized_path(model, cache)
    assert second != first and second.is_file() and not first.exists()
    assert ort_session.optimized_path(other, cache).is_file()
    assert len(list((cache / ort_session.OPTIMIZED_DIR).iterdir())) == 2
