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

import threading
from pathlib import Path
from types import ModuleType

from ..answering.span_files import SPAN_THREADS, VARIANTS, configured_span_model, loaded_variant
from ..errors import ParetoragError
from ..providers.embedder_spec import minilm_variant
from ..storage.manifest import Manifest

OFFLINE_LLMS = ("extractive", "reader")  # index LLMs whose answers the offline reader gives


def plan(index_dir: Path, *, reader: str | None, llm: str | None, answer: bool) -> tuple[str | None, bool]:
    """What to start for a query: the index's embedder spec when it is the packaged MiniLM
    (None: another embedder, nothing local to start) and whether the span reader will read
    (``reader``, ``llm``: the query's options; ``answer``: not ``--context-only``)."""
    try:
        if isinstance(index_dir, str):  # a postgresql:// URL
            from ..storage.backend import open_backend

            manifest = open_backend(index_dir).load_manifest()
        else:  # the manifest alone: the models start before the rest imports
            manifest = Manifest.load(index_dir)
    except ParetoragError:
        return None, False  # the query reports it
    if manifest is None:
        return None, False
    offline = llm is None and manifest.config.llm in OFFLINE_LLMS
    span = answer and (reader == "reader" or (reader is None and offline))
    spec = manifest.config.embedder
    return (spec if minilm_variant(spec) is not None else None), span


def _warm(
    variant: str | None,
    model: Path | None,
    span_file: Path | None,
    onnx_embedder: ModuleType,
    ort_session: ModuleType,
) -> None:
    """The thread's work: sessions only, through modules the caller imported (no import here)."""
    try:
        if variant is not None and model is not None:
            onnx_embedder.start_session(model, variant)
        if span_file is not None:
            ort_session.cpu_session(span_file, threads=SPAN_THREADS, cache=onnx_embedder.cache_root())
    except (ParetoragError, OSError, ValueError, RuntimeError):
        return  # the query meets the same error and reports it


def start(index_dir: Path, *, reader: str | None, llm: str | None, answer: bool) -> threading.Thread | None:
    """Start the warm-up thread for a query on ``index_dir`` (None when there is nothing to start).

    What the thread calls is imported here first: a module that two threads import at once
    can be handed half-initialized to one of them when their imports wait on each other
    (a package's ``__init__`` on one side, one of its modules on the other), which is what
    the thread importing the reader's own modules did."""
    embedder, span = plan(index_dir, reader=reader, llm=llm, answer=answer)
    variant = minilm_variant(embedder) if embedder is not None else None
    span_file = None
    if span:
        folder, mode = configured_span_model()
        if folder and mode != "off":
            span_file = Path(folder) / VARIANTS[loaded_variant(folder)]
    try:
        import onnxruntime  # noqa: F401

        from ..providers import onnx_embedder, ort_session
    except ImportError:
        return None
    model = None
    if variant is not None and onnx_embedder.backend_setting() != "torch":
        model = onnx_embedder.default_model_path()  # imports the model's package: here, not on the thread
    if model is None and span_file is None:
        return None
    # not a daemon: the interpreter waits for it at exit, since ONNX Runtime aborts the process
    # when it is torn down while a thread is still creating a session in it
    thread = threading.Thread(
        target=_warm, args=(variant, model, span_file, onnx_embedder, ort_session), name="paretorag-warm-up"
    )
    thread.start()
    return thread
