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
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .cancel import CancellableLLM, CancellableProgress, check, pause_point
from .chunking import chunk_document
from .diskerrors import disk_errors
from .errors import ConfigError, DamagedIndexError, MissingStructureError
from .graphs.base import Builder, builder_class, get_builder
from .lock import collect_garbage
from .manifest import IndexConfig, Manifest
from .methods.base import available_methods, get_method
from .progress import NullProgress, Progress
from .providers.base import LLM, Embedder, Tokenizer
from .providers.counting import ModelCalls, counting, record
from .providers.embedders import embed_with_spans
from .providers.nlp_workers import stop_all as stop_workers
from .providers.notices import run_in_context
from .providers.wrappers import CachedLLM, CountingLLM
from .store import ChunkTable, Store, text_hash
from .structures import StructureData, has_structure, load_structure, save_structure, structure_dirname
from .types import Chunk, ContextItem, Document, FloatArray, Scored, Usage
from .vectors import VectorIndex, resolve_ann

if TYPE_CHECKING:
    from .distributed import RayCluster

EMBED_BATCH = 64
SPAN_SUFFIX = "#span"  # cache namespace of span vectors pooled from a text's own pass
CONFIG_KEY = "manifest.config"  # the committed configuration, kept in SQLite too
STOP_GRACE_S = 10.0  # how long an interrupted build waits for its threads to reach a step


def vector_stem(fingerprint: str, titles: bool, ann: str = "exact") -> str:
    """The name of the chunk-vector files for a chunk set, embedding setting and faiss kind.

    Text-only vectors keep the plain name older indexes used, so an index built before
    titles were embedded re-embeds under the default setting instead of passing as titled;
    an approximate faiss index (``ann`` ``hnsw`` or ``ivf``) adds its kind.
    """
    return (
        f"chunks-{fingerprint[:16]}" + ("-titled" if titles else "") + ("" if ann == "exact" else f"-{ann}")
    )


def vector_files(stem: str) -> tuple[str, str, str]:
    """The three files of a committed chunk-vector set, under ``vectors/``."""
    return f"{stem}.npy", f"{stem}.faiss", f"{stem}.ids.txt"


def span_key(text: str, span: tuple[int, int]) -> str:
    """Cache key of the vector of ``text[a:b]`` pooled from the pass over ``text``."""
    return text_hash(f"{span[0]}:{span[1]}\0{text}")


class CachedEmbedder:
    """An embedder whose vectors are cached in the index by text hash (batched commits).

    Every text is embedded at most once per index: vectors are looked up by text hash
    before any model call, and one lock makes builders that run in parallel threads
    wait for each other's batches instead of embedding the same texts twice (the model
    runs one batch at a time anyway). Model calls are counted per build stage
    (:mod:`paretorag.providers.counting`).

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
        self._lock = threading.Lock()
        self.computed = 0  # texts embedded by the model (cache misses)

    def embed(self, texts: list[str], *, description: str = "") -> np.ndarray:
        with self._lock:
            return self._embed(texts, description)

    def _embed(self, texts: list[str], description: str) -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        found = self._store.get_vectors(self.name, sorted(set(hashes)))
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found:
                todo.setdefault(h, t)
        record("embed_cached", len(set(hashes)) - len(todo))
        if todo:
            items = list(todo.items())
            batches = [items[i : i + EMBED_BATCH] for i in range(0, len(items), EMBED_BATCH)]
            with self._progress.task(description or "embedding", total=len(items)) as task:
                for b, vecs in self._vectors(batches):
                    check(self._cancel)
                    batch = batches[b]
                    self.computed += len(batch)
                    record("embed_texts", len(batch))
                    record("embed_batches")
                    pairs = [(h, vecs[j]) for j, (h, _) in enumerate(batch)]
                    self._store.put_vectors(self.name, pairs)
                    found.update(pairs)
                    task.advance(len(batch))
                    pause_point("mid-embedding")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    @property
    def pools_tokens(self) -> bool:
        """Whether the model gives token embeddings (``token_embeddings``) for :meth:`embed_spans`."""
        return callable(getattr(self.inner, "token_embeddings", None))

    def embed_spans(
        self, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]], *, description: str = ""
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Text vectors and, per text, its spans' vectors, from one forward pass per text.

        A span's vector is the L2-normalized mean of the token embeddings of the text's
        own pass over the span (:func:`~paretorag.providers.embedders.pool_spans`); a span
        with no token gets a zero row. Both kinds are cached (spans under the model name
        plus ``#span``, keyed by span and text); a text whose vector and spans are all
        cached costs nothing, and a cached text vector is kept as it was.
        """
        if not self.pools_tokens:
            raise ConfigError(
                f"embedder {self.name!r} gives no token embeddings; "
                "use concept_graph.sentence_vectors='separate' with it"
            )
        with self._lock:
            return self._embed_spans(texts, spans, description)

    def _embed_spans(
        self, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]], description: str
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        span_model = self.name + SPAN_SUFFIX
        hashes = [text_hash(t) for t in texts]
        skeys = [[span_key(t, s) for s in sp] for t, sp in zip(texts, spans, strict=True)]
        found = self._store.get_vectors(self.name, sorted(set(hashes)))
        sfound = self._store.get_vectors(span_model, sorted({k for row in skeys for k in row}))
        todo: dict[str, tuple[str, dict[tuple[int, int], str]]] = {}  # text hash -> (text, span -> key)
        for i, h in enumerate(hashes):
            missing = {s: k for s, k in zip(spans[i], skeys[i], strict=True) if k not in sfound}
            if h not in found or missing:
                todo.setdefault(h, (texts[i], {}))[1].update(missing)
        record("embed_cached", len(set(hashes)) - len(todo))
        if todo:
            items = list(todo.items())
            batches = [items[i : i + EMBED_BATCH] for i in range(0, len(items), EMBED_BATCH)]
            with self._progress.task(description or "embedding", total=len(items)) as task:
                for b, (vecs, pooled) in self._span_vectors(batches):
                    check(self._cancel)
                    batch = batches[b]
                    self.computed += len(batch)
                    record("embed_texts", len(batch))
                    record("embed_batches")
                    pairs: list[tuple[str, np.ndarray]] = []
                    span_pairs: list[tuple[str, np.ndarray]] = []
                    for j, (h, (_, want)) in enumerate(batch):
                        if h not in found:
                            pairs.append((h, vecs[j]))
                        span_pairs.extend(zip(want.values(), pooled[j], strict=True))
                    record("pooled_spans", len(span_pairs))
                    self._store.put_vectors(self.name, pairs)
                    self._store.put_vectors(span_model, span_pairs)
                    found.update(pairs)
                    sfound.update(span_pairs)
                    task.advance(len(batch))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        span_out = [
            np.asarray([sfound[k] for k in row], dtype=np.float32).reshape(len(row), self.dim)
            for row in skeys
        ]
        return out, span_out

    def _span_vectors(
        self, batches: list[list[tuple[str, tuple[str, dict[tuple[int, int], str]]]]]
    ) -> Iterator[tuple[int, tuple[np.ndarray, list[np.ndarray]]]]:
        """``(i, (text vectors, pooled span vectors per text))`` of ``batches[i]``, one
        forward pass per text: here, in order, or by the cluster as tasks finish."""
        if self.cluster is not None:
            calls = [([t for _, (t, _) in b], [list(want) for _, (_, want) in b]) for b in batches]
            yield from self.cluster.embed_spans(self.spec, calls)
            return
        for i, batch in enumerate(batches):
            check(self._cancel)
            yield (
                i,
                embed_with_spans(self.inner, [t for _, (t, _) in batch], [list(w) for _, (_, w) in batch]),
            )

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

    @property
    def pools_tokens(self) -> bool:
        return self.inner.pools_tokens

    def embed_spans(
        self, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.inner.embed_spans(texts, spans, description=self.label)


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

    known = set(available_methods())
    for m in methods:
        if m not in known:
            raise ConfigError(
                f"the index is configured for method {m!r}, which this version of paretorag does not "
                "have; re-open it with the methods to keep and --replace-methods "
                "(RAG.open(..., methods=[...], replace_methods=True))"
            )
        for s in get_method(m).requires:
            visit(s, ())
    return order


def method_needing(structure: str, configured: Sequence[str] = ()) -> str:
    """A method whose ``index --methods`` builds ``structure``: the one named after it, else
    one the index is configured for, else the recommended one, else the one needing least."""
    from .methods.base import METHODS, recommended_method

    names = [n for n in available_methods() if not METHODS[n].preset]
    needing = [n for n in names if structure in required_structures([n])]
    if not needing:
        return "<a method that needs it>"
    preferred = [structure, *configured, recommended_method()]
    return next(
        (n for n in preferred if n in needing),
        min(needing, key=lambda n: (len(required_structures([n])), n)),
    )


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
        self.embed_titles = index.manifest.config.embed_titles
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
            from .providers.embedder_spec import make_embedder

            check_embedder(spec, embedder.name, make_embedder)
        self.embedder = CachedEmbedder(embedder, store, progress, self.cancel, cluster=cluster, spec=spec)
        self.tokenizer = tokenizer
        self._llm_factory = llm_factory
        self._llm: LLM | None = None
        self.usage = usage
        self.progress = progress or NullProgress()
        self.timings: dict[str, float] = {}
        self.calls = ModelCalls()  # embedder texts/batches and spaCy documents per stage

    def llm_for(self, stage: str) -> LLM:
        if self._llm is None:
            self._llm = CachedLLM(self._llm_factory(), self.store)
        return CountingLLM(CancellableLLM(self._llm, self.cancel), self.usage, stage, self.tokenizer)

    # -- stage 1 --------------------------------------------------------------
    def ingest(
        self, docs: Sequence[Document], replaces: Mapping[str, Sequence[str]] | None = None
    ) -> tuple[int, int]:
        """Chunk and store new documents; returns (added, unchanged).

        ``replaces`` maps a key to the stored ids its documents replace: those are marked
        deleted and the key's new documents stored in one transaction (an edited file).
        """
        if self.cluster is not None:
            return self._ingest_on(self.cluster, docs, replaces or {})
        cfg = self.manifest.config
        added = unchanged = 0
        t0 = time.perf_counter()
        with self.progress.task("chunking", total=len(docs)) as task, self._storing(replaces or {}) as store:
            for doc in docs:
                if self.store.has_document(doc.doc_id):
                    unchanged += 1
                else:
                    chunks = chunk_document(
                        doc, self.tokenizer, size=cfg.chunk_size, overlap=cfg.chunk_overlap
                    )
                    store(doc, chunks)
                    added += 1
                task.advance()
        if added:
            self.timings["ingest"] = time.perf_counter() - t0
        return added, unchanged

    @contextmanager
    def _storing(
        self, replaces: Mapping[str, Sequence[str]]
    ) -> Iterator[Callable[[Document, list[Chunk]], None]]:
        """A function that stores one chunked document: at once in its own transaction, or,
        for a key with stored documents to replace, with the key's others at the end, in the
        transaction that marks the replaced ones deleted."""
        held: dict[str, list[tuple[Document, list[Chunk]]]] = {k: [] for k, old in replaces.items() if old}

        def store(doc: Document, chunks: list[Chunk]) -> None:
            if doc.key in held:
                held[doc.key].append((doc, chunks))
            else:
                self.store.add_document(doc, chunks)

        yield store
        for key, pairs in held.items():
            check(self.cancel)
            self.store.replace_documents(replaces[key], pairs)

    def _ingest_on(
        self, cluster: RayCluster, docs: Sequence[Document], replaces: Mapping[str, Sequence[str]]
    ) -> tuple[int, int]:
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
            with self._storing(replaces) as store:
                for doc, chunks in zip(todo, chunked, strict=True):
                    check(self.cancel)
                    store(doc, chunks)
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
        texts = chunks.embedded_texts(titles)
        spans = self._pass_spans(chunks, texts, fp)
        pause_point("before-embedding")
        with counting(self.calls, "vectors"):
            if spans is None:
                vectors = self.embedder.embed(texts, description="embedding chunks")
            else:  # one pass per chunk gives its vector and its builders' span vectors
                vectors, _ = self.embedder.embed_spans(texts, spans, description="embedding chunks")
        if self.embedder.computed > before:  # time only real work, not cache reads
            self.timings["embed"] = time.perf_counter() - t0
        ann = resolve_ann(m.config.ann, len(chunks))
        stem = vector_stem(fp, titles, ann)
        vdir = self.root / "vectors"
        if m.vectors != stem or not all((vdir / f).is_file() for f in vector_files(stem)):
            t1 = time.perf_counter()
            VectorIndex(vectors, kind=ann).save(vdir, stem)
            ids = vdir / f"{stem}.ids.txt"
            tmp = vdir / f".{stem}.ids.txt.tmp"
            with disk_errors(ids):
                tmp.write_text("\n".join(chunks.ids), encoding="utf-8")
                os.replace(tmp, ids)
            self.timings["vectors"] = time.perf_counter() - t1
        structures = self._build_structures(chunks, fp)
        if (m.vectors or "").startswith(vector_stem(fp, titles=False)):
            # the chunks are unchanged: structures of methods no longer configured (dropped
            # by replace_methods) stay valid and are kept; the first change of the chunks drops them
            sdir = self.root / "structures"
            for name, info in m.structures.items():
                if name not in structures and has_structure(sdir, info["dir"]):
                    structures[name] = info
        m.vectors = stem
        m.structures = structures
        m.counts = {**self.store.counts(), "vector_dim": int(self.embedder.dim)}
        m.models = {"embedder": self.embedder.name, "tokenizer": self.tokenizer.name, "llm": m.config.llm}
        m.usage = self.usage.to_json()
        # model calls of the stages that ran this time (a cache-only stage keeps its old figures)
        m.model_calls = {**m.model_calls, **self._model_calls()}
        # the latest time each stage did real work (a cache-only pass keeps the old figure)
        m.timings = {**m.timings, **{k: round(v, 4) for k, v in self.timings.items()}}
        m.generation += 1
        # a second copy of the configuration, for `paretorag repair` if both manifest files are lost
        self.store.put_kv(CONFIG_KEY, {"config": m.to_json()["config"], "models": m.models})
        pause_point("before-commit")
        m.save(self.root)
        self.store.purge_deleted()
        collect_garbage(self.root, stem, [s["dir"] for s in structures.values()])

    def _pass_spans(
        self, chunks: ChunkTable, texts: list[str], fp: str
    ) -> list[list[tuple[int, int]]] | None:
        """Character spans of each chunk text that builders want pooled from the chunk's
        own pass (e.g. the concept graph's sentences), or None when none does."""
        builders, dirnames = structure_plan(self.manifest.config, fp)
        sdir = self.root / "structures"
        wanted = [
            s
            for name, b in builders.items()
            if not has_structure(sdir, dirnames[name]) and (s := b.chunk_spans(chunks, texts)) is not None
        ]
        # on a Ray cluster the same pass runs as the cluster's tasks (embed_spans_task)
        if not wanted or not self.embedder.pools_tokens:
            return None
        return [sorted(set().union(*(w[i] for w in wanted))) for i in range(len(texts))]

    def _model_calls(self) -> dict[str, dict[str, int]]:
        """This commit's embedder and spaCy calls per stage (LLM calls are in ``usage``)."""
        return self.calls.to_json()

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
                        running[pool.submit(run_in_context(self._build_one), builders[n], chunks, built)] = n
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
        with counting(self.calls, f"build.{builder.name}"):
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
        # threads sharing this view load each structure and memo once: one lock per key
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _once(self, key: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

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

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        if self.vectors is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self.vectors.matrix[rows]

    def structure(self, name: str) -> StructureData:
        found = self._structures.get(name)
        if found is not None:
            return found
        with self._once("structure:" + name):
            return self._load_structure(name)

    def _load_structure(self, name: str) -> StructureData:
        if name not in self._structures:
            info = self.manifest.structures.get(name)
            if info is None:
                method = method_needing(name, self.manifest.config.methods)
                raise MissingStructureError(
                    f"this index has no {name!r} structure; build it with "
                    f"`paretorag index --index {self.root} --methods {method}` "
                    f"(or RAG.open(..., methods=[{method!r}]).build())"
                )
            self._structures[name] = load_structure(self.root / "structures", info["dir"])
        return self._structures[name]

    def cached(self, key: str, factory: Callable[[], Any]) -> Any:
        if key in self._memo:
            return self._memo[key]
        with self._once("memo:" + key):
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
