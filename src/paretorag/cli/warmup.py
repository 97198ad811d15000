"""Start the models a cold ``paretorag query`` will need while it imports the rest.

A query in a fresh process spends about a second importing paretorag's retrieval and
reader code (Python, one core) before it embeds the question, and then creates the
embedder's ONNX Runtime session and, for an offline answer, the span reader's: native
work that releases the interpreter. :func:`start` creates those sessions on a thread
as soon as the index is known, so on a machine with a second core they are ready
when the query asks (:mod:`paretorag.providers.ort_session` keeps one session per model
file and process, and a caller that arrives while it is being created waits for it).

The thread only guesses from the manifest what the query will load: a wrong guess costs
background CPU time, never a different answer, and any error is left for the query itself
to meet and report.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ..errors import ParetoragError

OFFLINE_LLMS = ("extractive", "reader")  # index LLMs whose answers the offline reader gives
LOCAL_EMBEDDERS = ("minilm", "minilm-int8", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8")


def plan(index_dir: Path, *, reader: str | None, llm: str | None, answer: bool) -> tuple[str | None, bool]:
    """What to start for a query: the embedder spec (None: nothing local to start) and whether
    the span reader will read (``reader``, ``llm``: the query's options; ``answer``: not
    ``--context-only``)."""
    try:
        config = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8")).get("config", {})
    except (OSError, ValueError, AttributeError):
        return None, False
    if not isinstance(config, dict):
        return None, False
    spec = config.get("embedder", "minilm")
    embedder = spec if spec in LOCAL_EMBEDDERS else None
    offline = llm is None and config.get("llm") in OFFLINE_LLMS
    span = answer and (reader == "reader" or (reader is None and offline))
    return embedder, span


def _warm(embedder: str | None, span: bool) -> None:
    try:
        if embedder is not None:
            from ..providers.embedder_spec import make_embedder

            make_embedder(embedder).load()
        if span:
            from ..answering.reader.neural import configured_span_model, load_span_model

            folder, mode = configured_span_model()
            if folder and mode != "off":
                load_span_model(folder)
    except (ParetoragError, OSError, ValueError, RuntimeError):
        return  # the query meets the same error and reports it


def start(index_dir: Path, *, reader: str | None, llm: str | None, answer: bool) -> threading.Thread | None:
    """Start the warm-up thread for a query on ``index_dir`` (None when there is nothing to start)."""
    embedder, span = plan(index_dir, reader=reader, llm=llm, answer=answer)
    if embedder is None and not span:
        return None
    # not a daemon: the interpreter waits for it at exit, since ONNX Runtime aborts the process
    # when it is torn down while a thread is still creating a session in it
    thread = threading.Thread(target=_warm, args=(embedder, span), name="paretorag-warm-up")
    thread.start()
    return thread
