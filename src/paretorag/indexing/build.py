"""Building: new documents chunked and stored (stage 1), and the structure builders run
(stage 4), independent ones in parallel threads.

Each document is stored in its own SQLite transaction, and each structure is saved as
soon as it is built, so that a re-run skips both; on an error or Ctrl-C the other
builders stop at their next step (:mod:`paretorag.cancel`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..cancel import CancellableProgress, check
from ..errors import MissingStructureError
from ..graphs.base import Builder, builder_class
from ..ingest.chunking import chunk_document
from ..progress import Progress
from ..providers.base import LLM, Embedder, Tokenizer
from ..providers.counting import ModelCalls, counting
from ..providers.nlp_workers import stop_all as stop_workers
from ..providers.notices import run_in_context
from ..storage.backend import IndexBackend
from ..storage.manifest import IndexConfig
from ..storage.store import ChunkTable, Store
from ..storage.structures import StructureData
from ..types import Chunk, Document

if TYPE_CHECKING:
    from .distributed import RayCluster

STOP_GRACE_S = 10.0  # how long an interrupted build waits for its threads to reach a step


# -- stage 1 ------------------------------------------------------------------
def chunk_and_store(
    store: Store,
    docs: Sequence[Document],
    replaces: Mapping[str, Sequence[str]],
    *,
    config: IndexConfig,
    tokenizer: Tokenizer,
    progress: Progress,
    cancel: threading.Event,
) -> tuple[int, int]:
    """Chunk and store the documents not stored yet; returns (added, unchanged)."""
    added = unchanged = 0
    with progress.task("chunking", total=len(docs)) as task, _storing(store, replaces, cancel) as put:
        for doc in docs:
            if store.has_document(doc.doc_id):
                unchanged += 1
            else:
                chunks = chunk_document(
                    doc, tokenizer, size=config.chunk_size, overlap=config.chunk_overlap, by=config.chunking
                )
                put(doc, chunks)
                added += 1
            task.advance()
    return added, unchanged


def chunk_and_store_on(
    cluster: RayCluster,
    store: Store,
    docs: Sequence[Document],
    replaces: Mapping[str, Sequence[str]],
    *,
    config: IndexConfig,
    progress: Progress,
    cancel: threading.Event,
) -> tuple[int, int]:
    """:func:`chunk_and_store` with the chunking done by Ray tasks; documents are stored
    here, in input order, each in its own transaction (a re-run skips them)."""
    new: dict[str, Document] = {}
    for doc in docs:
        if doc.doc_id not in new and not store.has_document(doc.doc_id):
            new[doc.doc_id] = doc
    todo = list(new.values())
    with progress.task("chunking (Ray)", total=len(docs)) as task:
        task.advance(len(docs) - len(todo))
        chunked = cluster.chunk(
            config.embedder, todo, config.chunk_size, config.chunk_overlap, config.chunking
        )
        with _storing(store, replaces, cancel) as put:
            for doc, chunks in zip(todo, chunked, strict=True):
                check(cancel)
                put(doc, chunks)
                task.advance()
    return len(todo), len(docs) - len(todo)


@contextmanager
def _storing(
    store: Store, replaces: Mapping[str, Sequence[str]], cancel: threading.Event
) -> Iterator[Callable[[Document, list[Chunk]], None]]:
    """A function that stores one chunked document: at once in its own transaction, or,
    for a key with stored documents to replace, with the key's others at the end, in the
    transaction that marks the replaced ones deleted."""
    held: dict[str, list[tuple[Document, list[Chunk]]]] = {k: [] for k, old in replaces.items() if old}

    def put(doc: Document, chunks: list[Chunk]) -> None:
        if doc.key in held:
            held[doc.key].append((doc, chunks))
        else:
            store.add_document(doc, chunks)

    yield put
    for key, pairs in held.items():
        check(cancel)
        store.replace_documents(replaces[key], pairs)


# -- stage 4 ------------------------------------------------------------------
class IndexBuildContext:
    """What a builder may use while the index is written
    (implements :class:`paretorag.graphs.base.BuildContext`)."""

    def __init__(
        self,
        chunks: ChunkTable,
        built: dict[str, StructureData],
        *,
        embedder: Embedder,
        tokenizer: Tokenizer,
        progress: Progress,
        cancel: threading.Event,
        config: IndexConfig,
        cluster: RayCluster | None,
        llm_for: Callable[[str], LLM],
        store: Store,
        previous: Callable[[str], StructureData | None] | None = None,
    ) -> None:
        self.chunks = chunks
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.progress = CancellableProgress(progress, cancel)
        self.workers = config.workers
        self.embed_titles = config.embed_titles
        self.cluster = cluster  # a Ray cluster for spaCy extraction, or None
        self._llm_for = llm_for
        self._store = store
        self._built = built
        self._previous = previous

    def llm(self, stage: str) -> LLM:
        return self._llm_for(stage)

    def structure(self, name: str) -> StructureData:
        try:
            return self._built[name]
        except KeyError:
            raise MissingStructureError(f"structure {name!r} must be built before it is used") from None

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        return self._store.get_kv_many(keys)

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        self._store.put_kv_many(items)

    def previous(self, name: str) -> StructureData | None:
        return self._previous(name) if self._previous is not None else None


ContextFactory = Callable[[Builder, dict[str, StructureData]], IndexBuildContext]


def build_structures(
    plan: tuple[dict[str, Builder], dict[str, str]],
    backend: IndexBackend,
    previous: Mapping[str, Mapping[str, Any]],
    context: ContextFactory,
    *,
    calls: ModelCalls,
    cancel: threading.Event,
    timings: dict[str, float],
    rebuild: Collection[str] = (),
) -> dict[str, dict[str, Any]]:
    """Build the planned structures not on disk yet (and those named in ``rebuild``, even
    when they are), each as soon as its inputs are built, and save each when it is done;
    returns what the manifest shows of every one.

    ``previous`` holds the committed manifest's structures (their build seconds are kept
    for the ones an earlier run finished); ``context(builder, built)`` gives a builder its
    context; build seconds go into ``timings``, model calls into ``calls``.
    """
    builders, dirnames = plan
    names = list(builders)
    done: dict[str, dict[str, Any]] = {}
    built: dict[str, StructureData] = {}
    pending = list(names)
    for name in names:  # finished by an earlier (interrupted) run: reuse
        if name not in rebuild and backend.has_structure(dirnames[name]):
            built[name] = backend.load_structure(dirnames[name])
            prev = previous.get(name, {})
            seconds = prev.get("seconds") if prev.get("dir") == dirnames[name] else None
            done[name] = structure_info(dirnames[name], built[name], seconds)
            pending.remove(name)
    if not pending:
        return done
    pool = ThreadPoolExecutor(max_workers=max(1, len(pending)), thread_name_prefix="paretorag-build")
    running: dict[Future[tuple[str, StructureData, float]], str] = {}
    try:
        while pending:
            for n in pending:  # start every builder whose inputs are built
                if n not in running.values() and all(d in built for d in builder_class(n).requires):
                    running[pool.submit(run_in_context(_build_one), builders[n], context, built, calls)] = n
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                del running[fut]
                name, data, seconds = fut.result()
                backend.save_structure(dirnames[name], data)  # kept for a re-run even if the rest fails
                built[name] = data
                done[name] = structure_info(dirnames[name], data, seconds)
                timings[f"build.{name}"] = seconds
                pending.remove(name)
    except BaseException:
        cancel.set()  # the other builders stop at their next step
        stop_workers()  # and spaCy processes stop now, not after their shard
        pool.shutdown(wait=False, cancel_futures=True)
        wait(running, timeout=STOP_GRACE_S)
        raise
    pool.shutdown(wait=True)
    return done


def _build_one(
    builder: Builder, context: ContextFactory, built: dict[str, StructureData], calls: ModelCalls
) -> tuple[str, StructureData, float]:
    t0 = time.perf_counter()
    ctx = context(builder, built)
    with counting(calls, f"build.{builder.name}"):
        data = builder.build(ctx)
    return builder.name, data, time.perf_counter() - t0


def structure_info(dirname: str, data: StructureData, seconds: float | None) -> dict[str, Any]:
    """What the manifest (and ``paretorag inspect``) shows of a structure."""
    info: dict[str, Any] = {"dir": dirname}
    if seconds is not None:
        info["seconds"] = round(seconds, 4)
    for key in ("summary", "stats"):
        extra = data.meta.get(key)
        if isinstance(extra, dict):
            info.update(extra)
    return info
