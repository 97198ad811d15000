"""Building and loading an index directory, stage by stage.

Stages of a commit (unified framework §3: graph building and index construction):

1. ``ingest``: new documents are chunked and stored, one SQLite transaction each;
2. ``embed``: chunk vectors, batch by batch into the embedding cache (by text hash);
3. ``vectors``: the ``.npy`` + faiss files for the live chunk set;
4. structures required by the configured methods (independent builders in parallel);
5. the manifest is replaced atomically: the commit point.

A run killed anywhere leaves the previous manifest, which names only complete files,
so the index loads as it was; a re-run skips stored documents, cached vectors and
finished structures, and ends identical to an uninterrupted run. Writers hold the
index's writer lock (:mod:`paretorag.lock`); on Ctrl-C, builder threads stop at their
next step (:mod:`paretorag.cancel`) and finished structures stay on disk for the re-run.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .cancel import CancellableLLM, CancellableProgress, check
from .chunking import chunk_document
from .diskerrors import disk_errors
from .errors import ConfigError, DamagedIndexError, MissingStructureError
from .graphs.base import Builder, builder_class, get_builder
from .lock import collect_garbage
from .manifest import IndexConfig, Manifest
from .methods.base import get_method
from .progress import NullProgress, Progress
from .providers.base import LLM, Embedder, Tokenizer
from .providers.nlp_workers import stop_all as stop_workers
from .providers.wrappers import CachedLLM, CountingLLM
from .store import ChunkTable, Store, text_hash
from .structures import StructureData, has_structure, load_structure, save_structure, structure_dirname
from .types import ContextItem, Document, FloatArray, Scored, Usage
from .vectors import VectorIndex

if TYPE_CHECKING:
    from .distributed import RayCluster

EMBED_BATCH = 64
CONFIG_KEY = "manifest.config"  # the committed configuration, kept in SQLite too
STOP_GRACE_S = 10.0  # how long an interrupted build waits for its threads to reach a step


def vector_stem(fingerprint: str, titles: bool) -> str:
    """The name of the chunk-vector files for a chunk set and embedding setting.

    Text-only vectors keep the plain name older indexes used, so an index built before
    titles were embedded re-embeds under the default setting instead of passing as titled.
    """
    return f"chunks-{fingerprint[:16]}" + ("-titled" if titles else "")


def vector_files(stem: str) -> tuple[str, str, str]:
    """The three files of a committed chunk-vector set, under ``vectors/``."""
    return f"{stem}.npy", f"{stem}.faiss", f"{stem}.ids.txt"


class CachedEmbedder:
    """An embedder whose vectors are cached in the index by text hash (batched commits).

    With a ``cluster`` (:class:`paretorag.distributed.RayCluster`), the batches missing
    from the cache are embedded by Ray tasks with the embedder ``spec`` and committed
    as they arrive.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: Store,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        *,
        cluster: RayCluster | None = None,
        spec: str = "",
    ) -> None:
        self.inner = embedder
        self.cluster = cluster
        self.spec = spec
        self._cancel = cancel or threading.Event()
        self.name = embedder.name
        self.dim = embedder.dim
        self._store = store
        self._progress = progress or NullProgress()
        self.computed = 0  # texts embedded by the model (cache misses)

    def embed(self, texts: list[str], *, description: str = "") -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        found = self._store.get_vectors(self.name, sorted(set(hashes)))
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found:
                todo.setdefault(h, t)
        if todo:
            items = list(todo.items())
            batches = [items[i : i + EMBED_BATCH] for i in range(0, len(items), EMBED_BATCH)]
            with self._progress.task(description or "embedding", total=len(items)) as task:
                for b, vecs in self._vectors(batches):
                    check(self._cancel)
                    batch = batches[b]
                    self.computed += len(batch)
                    pairs = [(h, vecs[j]) for j, (h, _) in enumerate(batch)]
                    self._store.put_vectors(self.name, pairs)
                    found.update(pairs)
                    task.advance(len(batch))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    def _vectors(self, batches: list[list[tuple[str, str]]]) -> Iterator[tuple[int, np.ndarray]]:
        """``(i, vectors of batches[i])``: here, in order, or by the cluster as tasks finish."""
        if self.cluster is not None:
            yield from self.cluster.embed(self.spec, [[t for _, t in b] for b in batches])
            return
        for i, batch in enumerate(batches):
            check(self._cancel)
            yield i, self.inner.embed([t for _, t in batch])


class _Labelled:
    """A :class:`CachedEmbedder` whose progress bar carries a given label."""

    def __init__(self, inner: CachedEmbedder, label: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.label = label

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts, description=self.label)


def required_structures(methods: Sequence[str]) -> list[str]:
    """Structures needed by the methods, dependencies first (``vectors`` excluded: always built)."""
    order: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name == "vectors" or name in order:
            return
        if name in trail:
            raise ConfigError(f"structure dependency cycle: {' -> '.join((*trail, name))}")
        for dep in builder_class(name).requires:
            visit(dep, (*trail, name))
        order.append(name)

    for m in methods:
        for s in get_method(m).requires:
            visit(s, ())
    return order


def structure_plan(config: IndexConfig, fingerprint: str) -> tuple[dict[str, Builder], dict[str, str]]:
    """Builders of the structures the configured methods need (dependencies first) and
    the directory each output must have for this chunk set and these settings."""
    builders: dict[str, Builder] = {}
    dirnames: dict[str, str] = {}
    for name in required_structures(config.methods):
        b = builders[name] = get_builder(name, **config.builders.get(name, {}))
        settings = {"params": b.identity(), "inputs": [dirnames[d] for d in b.requires]}
        dirnames[name] = structure_dirname(name, fingerprint, settings, b.version)
    return builders, dirnames


class _BuildContext:
    def __init__(self, index: IndexWriter, chunks: ChunkTable, built: dict[str, StructureData]) -> None:
        self.chunks = chunks
        self.embedder: Embedder = index.embedder
        self.tokenizer = index.tokenizer
        self.progress = CancellableProgress(index.progress, index.cancel)
        self.workers = index.manifest.config.workers
        self.cluster = index.cluster  # a Ray cluster for spaCy extraction, or None
        self._index = index
        self._built = built

    def llm(self, stage: str) -> LLM:
        return self._index.llm_for(stage)

    def structure(self, name: str) -> StructureData:
        try:
            return self._built[name]
        except KeyError:
            raise MissingStructureError(f"structure {name!r} must be built before it is used") from None

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        return self._index.store.get_kv_many(keys)

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        self._index.store.put_kv_many(items)


class IndexWriter:
    """The write side of an index directory (used by :class:`paretorag.RAG`)."""

    def __init__(
        self,
        root: Path,
        store: Store,
        manifest: Manifest,
        embedder: Embedder,
        tokenizer: Tokenizer,
        llm_factory: Callable[[], LLM],
        usage: Usage,
        progress: Progress | None = None,
        cluster: RayCluster | None = None,
    ) -> None:
        self.root = root
        self.store = store
        self.manifest = manifest
        self.cancel = threading.Event()  # set on Ctrl-C: builder threads stop at their next step
        self.cluster = cluster
        spec = manifest.config.embedder
        if cluster is not None:
            from .distributed import check_embedder
            from .providers.embedders import make_embedder

            check_embedder(spec, embedder.name, make_embedder)
        self.embedder = CachedEmbedder(embedder, store, progress, self.cancel, cluster=cluster, spec=spec)
        self.tokenizer = tokenizer
        self._llm_factory = llm_factory
        self._llm: LLM | None = None
        self.usage = usage
        self.progress = progress or NullProgress()
        self.timings: dict[str, float] = {}

    def llm_for(self, stage: str) -> LLM:
        if self._llm is None:
            self._llm = CachedLLM(self._llm_factory(), self.store)
        return CountingLLM(CancellableLLM(self._llm, self.cancel), self.usage, stage, self.tokenizer)

    # -- stage 1 --------------------------------------------------------------
    def ingest(self, docs: Sequence[Document]) -> tuple[int, int]:
        """Chunk and store new documents; returns (added, unchanged)."""
        if self.cluster is not None:
            return self._ingest_on(self.cluster, docs)
        cfg = self.manifest.config
        added = unchanged = 0
        t0 = time.perf_counter()
        with self.progress.task("chunking", total=len(docs)) as task:
            for doc in docs:
                if self.store.has_document(doc.doc_id):
                    unchanged += 1
                else:
                    chunks = chunk_document(
                        doc, self.tokenizer, size=cfg.chunk_size, overlap=cfg.chunk_overlap
                    )
                    self.store.add_document(doc, chunks)
                    added += 1
                task.advance()
        if added:
            self.timings["ingest"] = time.perf_counter() - t0
        return added, unchanged

    def _ingest_on(self, cluster: RayCluster, docs: Sequence[Document]) -> tuple[int, int]:
        """:meth:`ingest` with the chunking done by Ray tasks; documents are stored here,
        in input order, each in its own transaction (a re-run skips them)."""
        cfg = self.manifest.config
        t0 = time.perf_counter()
        new: dict[str, Document] = {}
        for doc in docs:
            if doc.doc_id not in new and not self.store.has_document(doc.doc_id):
                new[doc.doc_id] = doc
        todo = list(new.values())
        with self.progress.task("chunking (Ray)", total=len(docs)) as task:
            task.advance(len(docs) - len(todo))
            chunked = cluster.chunk(cfg.embedder, todo, cfg.chunk_size, cfg.chunk_overlap)
            for doc, chunks in zip(todo, chunked, strict=True):
                check(self.cancel)
                self.store.add_document(doc, chunks)
                task.advance()
        if todo:
            self.timings["ingest"] = time.perf_counter() - t0
        return len(todo), len(docs) - len(todo)

    # -- stages 2-5 -----------------------------------------------------------
    def commit(self) -> None:
        """Bring vectors and structures up to date with the live documents, then commit."""
        m = self.manifest
        chunks = self.store.chunk_table()
        fp = chunks.fingerprint()
        t0 = time.perf_counter()
        before = self.embedder.computed
        titles = m.config.embed_titles
        vectors = self.embedder.embed(chunks.embedded_texts(titles), description="embedding chunks")
        if self.embedder.computed > before:  # time only real work, not cache reads
            self.timings["embed"] = time.perf_counter() - t0
        stem = vector_stem(fp, titles)
        vdir = self.root / "vectors"
        if m.vectors != stem or not all((vdir / f).is_file() for f in vector_files(stem)):
            t1 = time.perf_counter()
            VectorIndex(vectors).save(vdir, stem)
            ids = vdir / f"{stem}.ids.txt"
            tmp = vdir / f".{stem}.ids.txt.tmp"
            with disk_errors(ids):
                tmp.write_text("\n".join(chunks.ids), encoding="utf-8")
                os.replace(tmp, ids)
            self.timings["vectors"] = time.perf_counter() - t1
        structures = self._build_structures(chunks, fp)
        m.vectors = stem
        m.structures = structures
        m.counts = {**self.store.counts(), "vector_dim": int(self.embedder.dim)}
        m.models = {"embedder": self.embedder.name, "tokenizer": self.tokenizer.name, "llm": m.config.llm}
        m.usage = self.usage.to_json()
        # the latest time each stage did real work (a cache-only pass keeps the old figure)
        m.timings = {**m.timings, **{k: round(v, 4) for k, v in self.timings.items()}}
        m.generation += 1
        # a second copy of the configuration, for `paretorag repair` if both manifest files are lost
        self.store.put_kv(CONFIG_KEY, {"config": m.to_json()["config"], "models": m.models})
        m.save(self.root)
        self.store.purge_deleted()
        collect_garbage(self.root, stem, [s["dir"] for s in structures.values()])

    def _build_structures(self, chunks: ChunkTable, fp: str) -> dict[str, dict[str, Any]]:
        builders, dirnames = structure_plan(self.manifest.config, fp)
        names = list(builders)
        sdir = self.root / "structures"
        done: dict[str, dict[str, Any]] = {}
        built: dict[str, StructureData] = {}
        pending = list(names)
        for name in names:  # finished by an earlier (interrupted) run: reuse
            if has_structure(sdir, dirnames[name]):
                built[name] = load_structure(sdir, dirnames[name])
                prev = self.manifest.structures.get(name, {})
                seconds = prev.get("seconds") if prev.get("dir") == dirnames[name] else None
                done[name] = _structure_info(dirnames[name], built[name], seconds)
                pending.remove(name)
        if not pending:
            return done
        pool = ThreadPoolExecutor(max_workers=max(1, len(pending)), thread_name_prefix="paretorag-build")
        running: dict[Future[tuple[str, StructureData, float]], str] = {}
        try:
            while pending:
                for n in pending:  # start every builder whose inputs are built
                    if n not in running.values() and all(d in built for d in builder_class(n).requires):
                        running[pool.submit(self._build_one, builders[n], chunks, built)] = n
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    del running[fut]
                    name, data, seconds = fut.result()
                    save_structure(sdir, dirnames[name], data)  # kept for a re-run even if the rest fails
                    built[name] = data
                    done[name] = _structure_info(dirnames[name], data, seconds)
                    self.timings[f"build.{name}"] = seconds
                    pending.remove(name)
        except BaseException:
            self.cancel.set()  # the other builders stop at their next step
            stop_workers()  # and spaCy processes stop now, not after their shard
            pool.shutdown(wait=False, cancel_futures=True)
            wait(running, timeout=STOP_GRACE_S)
            raise
        pool.shutdown(wait=True)
        return done

    def _build_one(
        self, builder: Builder, chunks: ChunkTable, built: dict[str, StructureData]
    ) -> tuple[str, StructureData, float]:
        t0 = time.perf_counter()
        ctx = _BuildContext(self, chunks, built)
        ctx.embedder = _Labelled(self.embedder, f"embedding for {builder.name}")  # one bar label each
        data = builder.build(ctx)
        return builder.name, data, time.perf_counter() - t0


def _structure_info(dirname: str, data: StructureData, seconds: float | None) -> dict[str, Any]:
    """What the manifest (and ``paretorag inspect``) shows of a structure."""
    info: dict[str, Any] = {"dir": dirname}
    if seconds is not None:
        info["seconds"] = round(seconds, 4)
    for key in ("summary", "stats"):
        extra = data.meta.get(key)
        if isinstance(extra, dict):
            info.update(extra)
    return info


class LoadedIndex:
    """The committed index as methods see it (implements :class:`paretorag.methods.IndexView`)."""

    def __init__(
        self,
        root: Path,
        store: Store,
        manifest: Manifest,
        embedder: Embedder,
        tokenizer: Tokenizer,
        llm_for: Callable[[str], LLM],
    ) -> None:
        self.root = root
        self.manifest = manifest
        vdir = root / "vectors"
        ids: list[str] = []
        if manifest.vectors:
            path = vdir / f"{manifest.vectors}.ids.txt"
            try:
                ids = [i for i in path.read_text(encoding="utf-8").split("\n") if i]
            except (OSError, ValueError) as exc:
                raise DamagedIndexError(
                    f"cannot read {path} ({exc}); run `paretorag repair --index {root}`"
                ) from exc
        self.chunks = store.chunk_table(ids) if ids else ChunkTable.from_chunks([])
        self.vectors = VectorIndex.load(vdir, manifest.vectors) if ids else None
        if self.vectors is not None and len(self.vectors) != len(ids):
            raise DamagedIndexError(
                f"{vdir / manifest.vectors}.npy has {len(self.vectors)} rows for {len(ids)} chunk ids; "
                f"run `paretorag repair --index {root}`"
            )
        self._embedder = embedder
        self._cached_embedder = CachedEmbedder(embedder, store)
        self._tokenizer = tokenizer
        self._llm_for = llm_for
        self._memo: dict[str, Any] = {}
        self._query_vectors: dict[str, FloatArray] = {}
        self._structures: dict[str, StructureData] = {}

    def embed_query(self, text: str) -> FloatArray:
        vec = self._query_vectors.get(text)
        if vec is None:
            if len(self._query_vectors) >= 4096:
                self._query_vectors.clear()
            vec = self._query_vectors[text] = self._embedder.embed([text])[0]
        return vec

    def forget_queries(self) -> None:
        """Drop memoized query vectors (so that timings include query embedding again)."""
        self._query_vectors.clear()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cached_embedder.embed(texts)

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        if self.vectors is None:
            return Scored.empty()
        return self.vectors.search(query_vector, k)

    def structure(self, name: str) -> StructureData:
        if name not in self._structures:
            info = self.manifest.structures.get(name)
            if info is None:
                raise MissingStructureError(
                    f"this index has no {name!r} structure; build it with "
                    f"`paretorag index PATH --index {self.root} --methods <a method that needs it>` "
                    "or RAG.open(..., methods=[...]).build()"
                )
            self._structures[name] = load_structure(self.root / "structures", info["dir"])
        return self._structures[name]

    def cached(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = factory()
        return self._memo[key]

    def llm(self, stage: str) -> LLM:
        return self._llm_for(stage)

    def count_tokens(self, text: str) -> int:
        return self._tokenizer.count([text])[0]

    def chunk_item(self, row: int, score: float) -> ContextItem:
        c = self.chunks
        return ContextItem(
            c.ids[row], c.doc_ids[row], c.titles[row], c.texts[row], float(score), int(c.n_tokens[row]), row
        )
