"""The embedding cache of an index: every text is embedded at most once (build stage 2).

:class:`CachedEmbedder` looks vectors up by text hash in the index's SQLite before any
model call and commits what it computes batch by batch, so an interrupted run resumes
after the last committed batch; it also pools the span vectors that builders ask for
from a chunk's own forward pass (:meth:`CachedEmbedder.embed_spans`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..cancel import check, pause_point
from ..errors import ConfigError
from ..progress import NullProgress, Progress
from ..providers.base import Embedder
from ..providers.counting import record
from ..providers.embedders import embed_with_spans
from ..storage.store import Store, text_hash

if TYPE_CHECKING:
    from .distributed import RayCluster

EMBED_BATCH = 64  # windows per batch: a text longer than the model reads is several
_T = TypeVar("_T")
SPAN_SUFFIX = "#span"  # cache namespace of span vectors pooled from a text's own pass


def span_key(text: str, span: tuple[int, int]) -> str:
    """Cache key of the vector of ``text[a:b]`` pooled from the pass over ``text``."""
    return text_hash(f"{span[0]}:{span[1]}\0{text}")


def _unit(v: np.ndarray) -> np.ndarray:
    """``v`` L2-normalized (as the windowed embedders pool their windows), in float32."""
    n = float(np.linalg.norm(v))
    return (v / n if n > 0 else v).astype(np.float32)


def window_batches(items: Sequence[_T], windows: Sequence[int], size: int = EMBED_BATCH) -> list[list[_T]]:
    """``items`` in order, in batches of at most ``size`` windows (``windows[i]``: those of
    item ``i``; an item of more windows is a batch of its own), so that a batch of long
    chunks costs what a batch of short passages does and the bar moves as often."""
    out: list[list[_T]] = []
    batch: list[_T] = []
    used = 0
    for item, n in zip(items, windows, strict=True):
        if batch and used + n > size:
            out.append(batch)
            batch, used = [], 0
        batch.append(item)
        used += n
    if batch:
        out.append(batch)
    return out


class CachedEmbedder:
    """An embedder whose vectors are cached in the index by text hash (batched commits).

    Every text is embedded at most once per index: vectors are looked up by text hash
    before any model call, and one lock makes builders that run in parallel threads
    wait for each other's batches instead of embedding the same texts twice (the model
    runs one batch at a time anyway). Model calls are counted per build stage
    (:mod:`paretorag.providers.counting`).

    With a ``cluster`` (:class:`paretorag.indexing.distributed.RayCluster`), the batches missing
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
            # a text longer than the model reads is embedded window by window through this cache
            # and pooled as the model pools its windows (their sum, normalized), so the window
            # vectors that `fusion` keeps for long chunks (graphs/chunk_windows.py) need no second pass
            parts = {h: self._split(t) for h, t in todo.items()}
            long = {h: p for h, p in parts.items() if len(p) > 1}
            pieces = {text_hash(w): w for p in long.values() for w in p}
            found.update(self._store.get_vectors(self.name, sorted(set(pieces) - set(found))))
            wanted = {h: t for h, t in todo.items() if h not in long}
            wanted.update((h, w) for h, w in pieces.items() if h not in found and h not in wanted)
            items = list(wanted.items())  # each one window: a short text, or a long text's window
            batches = window_batches(items, [1] * len(items))
            with self._progress.task(
                self._label(description, list(todo), {h: len(p) for h, p in parts.items()}),
                total=len(items),
            ) as task:
                for b, vecs in self._vectors(batches):
                    check(self._cancel)
                    batch = batches[b]
                    whole = sum(1 for h, _ in batch if h in todo and h not in long)
                    self.computed += whole
                    record("embed_texts", whole)
                    if len(batch) > whole:
                        record("embed_windows", len(batch) - whole)
                    record("embed_batches")
                    pairs = [(h, vecs[j]) for j, (h, _) in enumerate(batch)]
                    self._store.put_vectors(self.name, pairs)
                    found.update(pairs)
                    task.advance(len(batch))
                    pause_point("mid-embedding")
            if long:
                pooled = [
                    (h, _unit(np.sum([found[text_hash(w)] for w in p], axis=0))) for h, p in long.items()
                ]
                self._store.put_vectors(self.name, pooled)
                found.update(pooled)
                self.computed += len(pooled)
                record("embed_texts", len(pooled))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    def _split(self, text: str) -> list[str]:
        """The windows the model reads ``text`` in (``[text]`` when it fits or the model has none)."""
        limit = getattr(self.inner, "max_tokens", None)
        split = getattr(self.inner, "windows", None)
        if limit is None or split is None or len(text) <= limit:
            return [text]
        return list(split(text)) or [text]

    def windows(self, text: str) -> int:
        """The model's passes over ``text``: its windows when it is longer than the model
        reads (:meth:`~paretorag.providers.embedders.WindowedEmbedder.windows`), else 1."""
        return len(self._split(text))

    @staticmethod
    def _label(description: str, items: Sequence[object], counts: dict[str, int]) -> str:
        """The bar's label; it counts windows, so it says how many texts they hold."""
        label = description or "embedding"
        n = sum(counts.values())
        return label if n == len(items) else f"{label} ({len(items)} texts, {n} windows)"

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
            counts = {h: self.windows(t) for h, (t, _) in items}
            batches = window_batches(items, [counts[h] for h, _ in items])
            with self._progress.task(
                self._label(description, items, counts), total=sum(counts.values())
            ) as task:
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
                    task.advance(sum(counts[h] for h, _ in batch))
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


class Labelled:
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
