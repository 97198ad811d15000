"""ONNX Runtime CPU sessions: one per model file and process, from a pre-optimized copy.

Creating a session optimizes the model's graph first (operator fusion, constant folding):
a session of the MiniLM embedder took 0.27 s to make here, the span reader's 0.13 s, paid
by every cold ``paretorag query``. ONNX Runtime can save the graph it optimized
(``SessionOptions.optimized_model_filepath``); a session made from that copy starts in
0.11 s / 0.04 s and computes the same numbers (checked bit for bit in the tests). The
copy is saved at the "extended" level, whose fused operators run on any CPU (the "all"
level adds layout changes for the machine at hand, which the session then applies again,
cheaply), in the user cache beside the embedder's export, named by the source file's
path, size and modification time and by the ONNX Runtime version, so an edited model or
an upgraded runtime gets a new copy (and the old one is deleted). Where the cache cannot
be written the session is made from the model file as before.

Sessions are kept per (file, threads) for the life of the process, so two embedders or
readers over one model share one session (``InferenceSession.run`` is thread-safe), and a
session started early on another thread (:mod:`paretorag.cli.warmup`) is the one the
query uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError, ProviderError

OPTIMIZED_DIR = "ort-optimized"

_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str, int, int, int], threading.Lock] = {}
_SESSIONS: dict[tuple[str, int, int, int], Any] = {}


def _ort() -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise MissingDependencyError("ONNX models need onnxruntime: pip install onnxruntime") from exc
    return ort


def ort_errors() -> tuple[type[BaseException], ...]:
    """ONNX Runtime's own exception classes (they derive from ``Exception`` only); none
    before onnxruntime is imported, when none can have been raised."""
    ort = sys.modules.get("onnxruntime")
    if ort is None:
        return ()
    state = ort.capi.onnxruntime_pybind11_state
    names = ("Fail", "InvalidArgument", "NoSuchFile", "InvalidProtobuf", "RuntimeException")
    return tuple(getattr(state, n) for n in names if hasattr(state, n))


def _options(ort: Any, threads: int, level: Any) -> Any:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # no spin-waiting: a query is one short pass, and a spinning thread steals the core
    # another process (or the other half of a 2-thread pass) needs
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def optimized_path(path: Path, cache: Path) -> Path:
    """Where the optimized copy of ``path`` lives under ``cache`` (it may not exist yet):
    ``STEM-WHERE-WHAT.onnx``, ``WHERE`` naming the model file's path and ``WHAT`` its size,
    modification time and the ONNX Runtime version."""
    ort = _ort()
    st = path.stat()
    where = _digest(str(path.resolve()))
    what = _digest(f"{st.st_size}|{st.st_mtime_ns}|{ort.__version__}")
    return cache / OPTIMIZED_DIR / f"{path.stem}-{where}-{what}.onnx"


def _drop_stale(target: Path) -> None:
    """Delete the copies of the same model file made before it (or the runtime) changed."""
    prefix = target.name.rsplit("-", 1)[0] + "-"
    for old in target.parent.glob(f"{prefix}*.onnx"):
        if old != target:
            with contextlib.suppress(OSError):
                old.unlink()


def _optimized_copy(path: Path, cache: Path | None) -> Path | None:
    """The optimized copy of ``path``, saved now when missing; None where it cannot be saved."""
    if cache is None:
        return None
    ort = _ort()
    target = optimized_path(path, cache)
    if target.is_file():
        return target
    tmp = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    errors: tuple[type[BaseException], ...] = (OSError, *ort_errors())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        opts = _options(ort, 1, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        opts.optimized_model_filepath = str(tmp)
        ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        os.replace(tmp, target)
        _drop_stale(target)
    except errors:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return target


def cpu_session(path: Path, *, threads: int, cache: Path | None = None) -> Any:
    """The CPU session of the model file ``path`` with ``threads`` intra-op threads.

    Made once per process (later calls, from any thread, get the same session; a call
    made while another thread creates it waits for that one) with all graph
    optimizations, from the optimized copy under ``cache`` (saved there by the first
    process that needs it); ``cache=None`` optimizes the model file at every start.
    """
    ort = _ort()
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, threads)
    with _LOCK:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        session = _SESSIONS.get(key)
        if session is None:
            session = _SESSIONS[key] = _create(ort, path, threads, cache)
    return session


def _create(ort: Any, path: Path, threads: int, cache: Path | None) -> Any:
    opts = _options(ort, threads, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    errors = ort_errors()
    copy = _optimized_copy(path, cache)
    if copy is not None:
        try:
            return ort.InferenceSession(str(copy), opts, providers=["CPUExecutionProvider"])
        except errors:  # a damaged copy: drop it, the model file itself still serves
            with contextlib.suppress(OSError):
                copy.unlink()
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except errors as exc:
        raise ProviderError(
            f"ONNX Runtime cannot load {path} ({exc}); export or install the model again"
        ) from exc


def forget_sessions() -> None:
    """Drop the kept sessions (tests; a process that replaced a model file in place)."""
    with _LOCK:
        _SESSIONS.clear()
        _KEY_LOCKS.clear()
