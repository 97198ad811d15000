"""Building an index on a Ray cluster (``paretorag index ... --ray [ADDRESS]``).

The heavy per-item work of a build runs as Ray tasks; everything that writes stays in
the driver, the one process holding the index's writer lock (:mod:`paretorag.storage.lock`):

=========================  ==========================  ====================================
work                       where                       how it is written
=========================  ==========================  ====================================
reading files              driver                      (documents go to tasks as text)
chunking                   Ray tasks, documents        driver stores each document with its
                           in batches                  chunks, in input order, one SQLite
                                                       transaction each
embedding (chunk vectors,  Ray tasks, 64 texts each    driver writes each batch into the
and every text a builder                               embedding cache (by text hash)
embeds: concept                                        as it arrives
sentences, reports)
spaCy entity extraction    Ray tasks, 64 chunks each   driver writes each batch into the
(``entity_graph``)                                     per-chunk extraction cache
graphs, BM25, faiss,       driver                      as without Ray
manifest
=========================  ==========================  ====================================

Every result a task returns is committed by the driver before it counts as done, and
every input is looked up in the same caches first, so a run killed anywhere (the driver,
or a worker past Ray's retries) resumes where the last committed batch ended: stored
documents, cached vectors and cached extractions are not computed again. Workers
compute exactly what the single-process build computes (the same chunker, embedder
and spaCy pipeline, built on each worker from the index's configuration), so the index
is the same; only the grouping of texts into forward passes differs, which moves
vectors by float rounding at most.

Workers need paretorag and its models installed (the same versions as the driver);
nothing but texts, settings and result arrays travels between processes.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from ..errors import ConfigError, MissingDependencyError, ProviderError
from ..types import Chunk, Document

EXTRACT_BATCH = 64  # chunks per spaCy task
CHUNK_DOCS = 256  # documents per chunking task
CHUNK_CHARS = 1 << 21  # ... or about this many characters, whichever comes first
LOCAL = "local"


# -- what runs on a worker -----------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _worker_embedder(spec: str) -> Any:
    """The embedder of ``spec``, built once per worker process (models load at first use)."""
    from ..providers.embedder_spec import make_embedder

    return make_embedder(spec)


def embed_task(spec: str, texts: list[str]) -> np.ndarray:
    """Vectors of ``texts`` by the embedder ``spec`` (a Ray task)."""
    return np.asarray(_worker_embedder(spec).embed(texts), dtype=np.float32)


def embed_spans_task(
    spec: str, texts: list[str], spans: list[list[tuple[int, int]]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One forward pass per text (a Ray task): the text vectors, and per text the
    L2-normalized mean of its token embeddings over each of its character ``spans``
    (:func:`paretorag.providers.embedders.pool_spans`; G2ConS Eq. 1 sentences)."""
    from ..providers.embedders import embed_with_spans

    return embed_with_spans(_worker_embedder(spec), texts, spans)


def chunk_task(
    spec: str, size: int, overlap: int, by: str, docs: list[list[Any]]
) -> list[list[tuple[str, int, int, int, str, int]]]:
    """Chunks of documents given as ``[doc_id, title, text, source, presplit]`` (a Ray task):
    per document, ``(chunk_id, order, start, end, text, n_tokens)`` of each chunk."""
    from ..ingest.chunking import chunk_document
    from ..providers.embedders import RegexTokenizer

    tokenizer = getattr(_worker_embedder(spec), "tokenizer", None) or RegexTokenizer()
    out = []
    for doc_id, title, text, source, presplit in docs:
        doc = Document(doc_id, title, text, source, bool(presplit))
        chunks = chunk_document(doc, tokenizer, size=size, overlap=overlap, by=by)
        out.append([(c.chunk_id, c.order, c.start, c.end, c.text, c.n_tokens) for c in chunks])
    return out


def extract_task(settings: dict[str, Any], texts: list[str]) -> list[list[Any]]:
    """spaCy entity terms per sentence and token count of each text (a Ray task): the
    answer of :func:`paretorag.providers.nlp.entity_worker` for one shard."""
    from ..providers.nlp import entity_worker

    return entity_worker(settings)(texts)


# -- the driver's side -----------------------------------------------------------------
class RayCluster:
    """Chunking, embedding and spaCy extraction of an index build as Ray tasks.

    Pass it to :meth:`paretorag.RAG.index` (``rag.index(paths, cluster=RayCluster())``)
    or use ``paretorag index ... --ray [ADDRESS]``. It connects (or starts a local
    cluster) at the first task, so a run with nothing to compute starts nothing; as a
    context manager, leaving disconnects (and stops a cluster it started).

    Parameters
    ----------
    address : str, optional
        ``None`` or ``"local"``: start a local cluster of ``num_cpus`` CPUs in this
        process. ``"auto"``: the cluster this machine belongs to (``ray start --head``
        or ``ray start --address=...``). ``"ray://HOST:10001"``: a remote cluster
        through Ray Client. ``"HOST:6379"``: join a cluster's head node directly.
    num_cpus : int, optional
        CPUs of a local cluster (default: all of this machine's); ignored otherwise.
    max_retries : int
        Times Ray runs a task again when its worker dies (Ray's default, 3).
    in_flight : int, optional
        Tasks submitted ahead of the results (default twice the cluster's CPUs): bounds
        the memory that results waiting to be written can take.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        max_retries: int = 3,
        in_flight: int | None = None,
    ) -> None:
        if num_cpus is not None and (isinstance(num_cpus, bool) or num_cpus < 1):
            raise ConfigError(f"num_cpus must be a positive number of CPUs, got {num_cpus!r}")
        if address is not None and not address.strip():
            raise ConfigError("the Ray address is empty; use local, auto, ray://HOST:10001 or HOST:6379")
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.in_flight = in_flight
        self._ray: Any = None
        self._started = False  # this object started ray (and shuts it down)
        self._tasks: dict[str, Any] = {}
        self.tasks_run = {"chunk": 0, "embed": 0, "embed_spans": 0, "extract": 0}

    # -- connecting --------------------------------------------------------------------
    def __enter__(self) -> RayCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def local(self) -> bool:
        return self.address is None or self.address == LOCAL

    def start(self) -> None:
        """Connect to the cluster (or start the local one); a no-op when connected."""
        if self._ray is not None:
            return
        try:
            import ray
        except ImportError as exc:
            raise MissingDependencyError(
                "--ray needs Ray: pip install 'paretorag[ray]' (or pip install ray) "
                "on this machine and on every node of the cluster"
            ) from exc
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
            if self.local:
                # workers import paretorag from where this process does
                path = os.pathsep.join(p for p in sys.path if p)
                options.update(
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    runtime_env={"env_vars": {"PYTHONPATH": path}},
                )
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(
                    f"cannot reach the Ray cluster at {self.address!r} ({exc}); start one with "
                    "`ray start --head` and pass --ray auto (or ray://HOST:10001)"
                ) from exc
            self._started = True
        self._ray = ray
        remote = ray.remote(num_cpus=1, max_retries=self.max_retries)
        self._tasks = {
            "embed": remote(embed_task),
            "embed_spans": remote(embed_spans_task),
            "chunk": remote(chunk_task),
            "extract": remote(extract_task),
        }

    def close(self) -> None:
        """Disconnect (stopping the local cluster this object started)."""
        if self._ray is not None and self._started:
            self._ray.shutdown()
        self._ray = None
        self._started = False

    def cpus(self) -> int:
        """CPUs of the cluster (at least 1)."""
        self.start()
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    # -- running tasks -----------------------------------------------------------------
    def _unordered(self, kind: str, calls: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """``(i, result)`` of ``task(*calls[i])`` as tasks finish, a bounded number in flight.

        Leaving early (an error, Ctrl-C) cancels the tasks not finished.
        """
        self.start()
        ray = self._ray
        task = self._tasks[kind]
        limit = self.in_flight or 2 * self.cpus()
        pending: dict[Any, int] = {}
        todo = iter(enumerate(calls))

        def submit() -> None:
            while len(pending) < limit:
                nxt = next(todo, None)
                if nxt is None:
                    return
                pending[task.remote(*nxt[1])] = nxt[0]

        submit()
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        cause = getattr(exc, "cause", None) or exc  # the worker's exception, not its trace
                        raise ProviderError(f"a Ray {kind} task failed: {cause}") from exc
                    self.tasks_run[kind] += 1
                    yield i, value
                submit()
        finally:
            for ref in pending:
                ray.cancel(ref)

    def _ordered(self, kind: str, calls: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        """Results of ``task(*calls[i])`` in call order (finished ones wait for earlier ones)."""
        waiting: dict[int, Any] = {}
        nxt = 0
        for i, value in self._unordered(kind, calls):
            waiting[i] = value
            while nxt in waiting:
                yield waiting.pop(nxt)
                nxt += 1

    def chunk(
        self, spec: str, docs: Sequence[Document], size: int, overlap: int, by: str = "sentences"
    ) -> Iterator[list[Chunk]]:
        """The chunks of each document, in order (:func:`paretorag.ingest.chunking.chunk_document`)."""
        groups: list[list[Document]] = []
        chars = 0
        for doc in docs:
            if not groups or len(groups[-1]) >= CHUNK_DOCS or chars >= CHUNK_CHARS:
                groups.append([])
                chars = 0
            groups[-1].append(doc)
            chars += len(doc.text)
        calls = [
            (spec, size, overlap, by, [[d.doc_id, d.title, d.text, d.source, d.presplit] for d in g])
            for g in groups
        ]
        for group, result in zip(groups, self._ordered("chunk", calls), strict=True):
            for doc, rows in zip(group, result, strict=True):
                yield [Chunk(cid, doc.doc_id, o, a, b, t, n, doc.title) for cid, o, a, b, t, n in rows]

    def embed(self, spec: str, batches: Sequence[list[str]]) -> Iterator[tuple[int, np.ndarray]]:
        """``(i, vectors of batches[i])`` as batches finish (by the embedder of ``spec``)."""
        return self._unordered("embed", [(spec, b) for b in batches])

    def embed_spans(
        self, spec: str, batches: Sequence[tuple[list[str], list[list[tuple[int, int]]]]]
    ) -> Iterator[tuple[int, tuple[np.ndarray, list[np.ndarray]]]]:
        """``(i, (vectors, span vectors per text))`` of ``batches[i] = (texts, spans)`` as
        batches finish: each text's vector and its spans' pooled vectors from one pass."""
        return self._unordered("embed_spans", [(spec, texts, spans) for texts, spans in batches])

    def extract(self, settings: dict[str, Any], texts: Sequence[str]) -> Iterator[tuple[list[Any], int]]:
        """(entity terms per sentence, token count) of each text, in order (spaCy, ``settings``
        as :meth:`paretorag.providers.nlp.EntityExtractor.worker_settings` gives them)."""
        calls = [(settings, list(texts[i : i + EXTRACT_BATCH])) for i in range(0, len(texts), EXTRACT_BATCH)]
        for result in self._ordered("extract", calls):
            for sentences, n_tokens in result:
                yield sentences, int(n_tokens)


def check_embedder(spec: str, name: str, make: Callable[[str], Any]) -> None:
    """Refuse a build whose workers would embed with another model than the driver's."""
    worker_name = make(spec).name
    if worker_name != name:
        raise ConfigError(
            f"Ray workers build the embedder from the index's setting {spec!r} ({worker_name}), "
            f"but this index embeds with {name}; open it with embedder={spec!r} "
            "(an embedder object cannot be sent to workers)"
        )


__all__ = ["RayCluster", "check_embedder", "chunk_task", "embed_task", "extract_task"]
