"""spaCy over all chunks on several cores (E2GraphRAG §3.1: extraction in parallel).

:func:`parallel_payloads` splits the texts into small shards that ``n_process`` worker
processes take from a common queue; results come back in input order. The pool knows
no pipeline: its settings name one, ``"entry": "MODULE:FUNCTION"``, a function that
takes the settings and returns the worker's ``texts -> JSON-able results`` (the entity
extractor's :func:`paretorag.providers.nlp.entity_worker`, the knowledge-graph
extractor's :func:`paretorag.providers.nlp_kg.kg_worker`), imported in the worker.
Workers are fresh interpreters (:class:`Worker`), not forks:

- the indexer runs builders in threads (the tree's LLM calls beside this
  extraction, §3.1), and forking while another thread is inside a BLAS call can
  hang the parent (seen with the extractive backend's numpy work);
- a fresh interpreter never re-imports the caller's ``__main__`` (as ``spawn`` and
  ``forkserver`` do), so scripts need no ``if __name__ == "__main__"`` guard.

A worker loads the model once (1-2 s); only texts and entity terms cross the pipe,
as JSON lines.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..errors import ConfigError, ProviderError

_WORKER_CODE = "import sys; from paretorag.providers.nlp_workers import worker_main; worker_main(sys.argv[1])"
_LIVE: set[Worker] = set()  # running workers, for stop_all()
_LIVE_LOCK = threading.Lock()


def stop_all() -> None:
    """Kill every running extraction process (an interrupted build): their shards are dropped,
    and the threads waiting on them see the end of the pipe at once."""
    with _LIVE_LOCK:
        workers = list(_LIVE)
    for w in workers:
        w.kill()


class Worker:
    """One extraction process running :func:`worker_main` (JSON lines on stdin/stdout)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER_CODE, json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=env,
            text=True,
            encoding="utf-8",
        )
        if self._proc.stdin is None or self._proc.stdout is None:  # both are pipes: never
            raise ProviderError("could not open the pipes of a spaCy extraction process")
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        with _LIVE_LOCK:
            _LIVE.add(self)

    def run(self, texts: list[str]) -> list[Any]:
        try:
            self._stdin.write(json.dumps(texts) + "\n")
            self._stdin.flush()
            line = self._stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self._proc.wait(timeout=30)
            self._err.seek(0)
            tail = self._err.read().decode("utf-8", "replace")[-2000:]
            raise ProviderError(
                f"a spaCy extraction process exited with code {self._proc.returncode}: {tail}"
            )
        return list(json.loads(line))

    def kill(self) -> None:
        """Stop at once (an interrupted build): the shard in progress is dropped."""
        self._proc.kill()

    def close(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self)
        with contextlib.suppress(BrokenPipeError):  # killed: nothing to flush
            self._stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._err.close()


def load_entry(cfg: dict[str, Any]) -> Callable[[list[str]], list[Any]]:
    """The worker function the settings' ``entry`` names, made from the settings."""
    module, _, name = str(cfg.get("entry", "")).partition(":")
    if not module.startswith("paretorag.") or not name:
        raise ConfigError(
            f"a spaCy worker's entry must be 'paretorag.MODULE:FUNCTION', got {cfg.get('entry')!r}"
        )
    make: Callable[[dict[str, Any]], Callable[[list[str]], list[Any]]] = getattr(
        importlib.import_module(module), name
    )
    return make(cfg)


def worker_main(settings_json: str) -> None:
    """A worker process's loop: a JSON list of texts in, a JSON list of results out, per line."""
    run = load_entry(json.loads(settings_json))
    for line in sys.stdin:
        sys.stdout.write(json.dumps(run(json.loads(line))) + "\n")
        sys.stdout.flush()


def parallel_payloads(texts: Sequence[str], settings: dict[str, Any], n_process: int) -> Iterator[Any]:
    """Each worker's JSON answer per text (``[payload, n_tokens]``), in input order."""
    step = max(1, min(settings["batch_size"], -(-len(texts) // (8 * n_process))))
    shards = [list(texts[i : i + step]) for i in range(0, len(texts), step)]
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(shards)):
        todo.put(i)
    done: dict[int, list[Any]] = {}
    cond = threading.Condition()
    engines: list[Worker] = []
    stopped = threading.Event()  # the caller stopped early (Ctrl-C, an error): kill, do not drain

    def serve() -> None:
        if stopped.is_set():
            return
        engine = Worker(settings)  # started in parallel: each loads the model once
        with cond:
            engines.append(engine)
        if stopped.is_set():
            engine.kill()
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                out = engine.run(shards[i])
                with cond:
                    done[i] = out
                    cond.notify_all()
        finally:
            engine.close()
            with cond:
                cond.notify_all()

    with ThreadPoolExecutor(max_workers=n_process, thread_name_prefix="paretorag-spacy") as pool:
        loops: list[Future[None]] = [pool.submit(serve) for _ in range(n_process)]
        completed = False
        try:
            for i in range(len(shards)):
                with cond:
                    while i not in done:
                        for f in loops:
                            if f.done():
                                f.result()  # re-raises a failed engine's error
                        if all(f.done() for f in loops):
                            raise ProviderError(f"spaCy extraction stopped before shard {i} of {len(shards)}")
                        cond.wait(0.5)
                    out = done.pop(i)
                yield from out
            completed = True
        finally:
            while True:  # stopped early or failed: no new shards
                try:
                    todo.get_nowait()
                except queue.Empty:
                    break
            if not completed:
                stopped.set()  # and no waiting for the shards in progress either
                with cond:
                    for engine in engines:
                        engine.kill()


__all__ = ["Worker", "load_entry", "parallel_payloads", "stop_all", "worker_main"]
