"""Structure builders (unified framework §3 stages 1-2: graph building, index construction).

A builder turns the index's chunks into one named structure, stored as
``structures/<name>/arrays.npz`` (numeric or fixed-width string arrays, loaded
with ``allow_pickle=False``) plus ``meta.json``. Builders are registered by name;
methods list the structures they ``require`` and ``index`` builds only those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..errors import ConfigError
from ..params import Params
from ..storage.structures import StructureData as StructureData

if TYPE_CHECKING:
    from ..progress import Progress
    from ..providers.base import LLM, Embedder, Tokenizer
    from ..storage.store import ChunkTable


class BuildContext(Protocol):
    """What a builder may use. Provided by :class:`paretorag.indexing.build.IndexBuildContext`."""

    @property
    def chunks(self) -> ChunkTable: ...

    @property
    def embedder(self) -> Embedder:
        """The index's embedder, cached by text hash."""
        ...

    @property
    def tokenizer(self) -> Tokenizer: ...

    @property
    def progress(self) -> Progress: ...

    @property
    def workers(self) -> int: ...

    @property
    def embed_titles(self) -> bool:
        """Whether chunk vectors embed ``"title\ntext"`` (see ``ChunkTable.embedded_texts``)."""
        ...

    def llm(self, stage: str) -> LLM:
        """The configured LLM, cached and counted under ``stage`` (e.g. ``"index.tree"``)."""
        ...

    def structure(self, name: str) -> StructureData:
        """A structure built earlier in this run (listed in the builder's ``requires``)."""
        ...

    def cache_get(self, keys: list[str]) -> dict[str, Any]:
        """Per-chunk results cached in the index by an earlier build (JSON values)."""
        ...

    def cache_put(self, items: list[tuple[str, Any]]) -> None:
        """Cache per-chunk results (JSON values) so that an insert redoes only new chunks."""
        ...

    def previous(self, name: str) -> StructureData | None:
        """The committed structure ``name`` (built for an earlier chunk set) that a builder
        may update instead of building afresh; None when there is none or a full rebuild
        was asked for (``paretorag index --rebuild NAME``)."""
        ...


def previous_structure(ctx: BuildContext, name: str) -> StructureData | None:
    """``ctx.previous(name)``, or None for a context that keeps no earlier structures."""
    get = getattr(ctx, "previous", None)
    return get(name) if callable(get) else None


class Builder(Params):
    """Base class of structure builders. Subclasses set ``name`` and implement ``build``."""

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    uses_llm: ClassVar[bool] = False
    version: ClassVar[int] = 1  # bump when the output of the same settings changes
    # settings that change how a structure is built but not what is built (processes,
    # batch sizes, concurrency): left out of the structure's identity, so no rebuild
    runtime_params: ClassVar[tuple[str, ...]] = ()

    def identity(self) -> dict[str, Any]:
        """The settings that define the output (``get_params`` minus ``runtime_params``)."""
        return {k: v for k, v in self.get_params(deep=False).items() if k not in self.runtime_params}

    def chunk_spans(self, chunks: ChunkTable, texts: list[str]) -> list[list[tuple[int, int]]] | None:
        """Character spans of each chunk's embedded text (``texts``) whose vectors this
        builder will read pooled from the chunk's own pass (``ctx.embedder.embed_spans``);
        the chunk-vector stage computes them in the same forward pass. None: no such spans.
        """
        return None

    def build(self, ctx: BuildContext) -> StructureData:
        raise NotImplementedError


BUILDERS: dict[str, type[Builder]] = {}


def register_builder(cls: type[Builder]) -> type[Builder]:
    """Class decorator adding a builder to the registry under ``cls.name``."""
    if not cls.name:
        raise ConfigError(f"builder {cls.__name__} has no name")
    BUILDERS[cls.name] = cls
    return cls


def builder_class(name: str) -> type[Builder]:
    """The registered builder class of structure ``name`` (ConfigError listing the known ones)."""
    from . import load_builders

    load_builders()
    try:
        return BUILDERS[name]
    except KeyError:
        raise ConfigError(f"unknown structure {name!r}; known: {sorted(BUILDERS)}") from None


def available_builders() -> list[str]:
    """Names of every registered structure builder."""
    from . import load_builders

    load_builders()
    return sorted(BUILDERS)


def get_builder(name: str, **params: Any) -> Builder:
    """A builder by registered name; unknown settings raise ConfigError listing the valid ones."""
    return builder_class(name)().set_params(**params)


COMMIT_EVERY = 256  # per-text results written to the index's cache at a time


@dataclass
class CachedRun:
    """What :func:`cached_per_text` found: each text's value, in order, and what this run did."""

    values: list[Any]
    n_tokens: int  # tokens processed by this run (not the cached texts')
    computed: int  # texts processed by this run


def cached_per_text(
    ctx: BuildContext,
    prefix: str,
    salt: str,
    texts: list[str],
    extract: Callable[[list[str]], Iterable[tuple[Any, int]]],
    label: str,
) -> CachedRun:
    """Per-text results (spaCy extractions) cached in the index by text and ``salt``.

    ``extract`` runs on the texts the cache lacks (each once) and yields ``(value, n_tokens)``
    per text; results are committed every ``COMMIT_EVERY`` texts, so a killed build does not
    redo them, and an insert runs on its new texts only.
    """
    from ..storage.store import text_hash

    keys = [f"{prefix}:{text_hash(salt + chr(0) + t)}" for t in texts]
    cached = ctx.cache_get(sorted(set(keys)))
    todo = sorted({k: i for i, k in reversed(list(enumerate(keys))) if k not in cached}.values())
    n_tokens = 0
    fresh: list[tuple[str, Any]] = []
    with ctx.progress.task(label, total=len(todo)) as bar:
        # nothing to extract (a delete): the extractor, and its spaCy pipeline, is never started
        found = extract([texts[i] for i in todo]) if todo else ()
        for i, (value, n) in zip(todo, found, strict=True):
            fresh.append((keys[i], {"sentences": value, "n_tokens": n}))
            n_tokens += n
            bar.advance()
            if len(fresh) >= COMMIT_EVERY:  # committed batches are not redone after a crash
                ctx.cache_put(fresh)
                cached.update(fresh)
                fresh = []
    if fresh:
        ctx.cache_put(fresh)
        cached.update(fresh)
    return CachedRun([cached[k]["sentences"] for k in keys], n_tokens, len(todo))
