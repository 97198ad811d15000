"""Planning a commit: which structures the configured methods need, where each one's
files go for this chunk set, and what the chunk-vector pass must pool for them.

A name covers everything its content depends on (the chunk set's fingerprint, the
settings, the builder's version and its inputs), so a file that exists is finished:
an interrupted run is resumed by building only the names not on disk yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConfigError
from ..graphs.base import Builder, builder_class, get_builder
from ..retrieval.methods.base import available_methods, get_method
from ..storage.backend import IndexBackend
from ..storage.manifest import IndexConfig
from ..storage.store import ChunkTable
from ..storage.structures import structure_dirname


def vector_stem(fingerprint: str, titles: bool, ann: str = "exact") -> str:
    """The name of the chunk-vector files for a chunk set, embedding setting and faiss kind.

    Text-only vectors keep the plain name older indexes used, so an index built before
    titles were embedded re-embeds under the default setting instead of passing as titled;
    an approximate faiss index (``ann`` ``hnsw`` or ``ivf``) adds its kind.
    """
    return (
        f"chunks-{fingerprint[:16]}" + ("-titled" if titles else "") + ("" if ann == "exact" else f"-{ann}")
    )


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
    from ..retrieval.methods.base import METHODS, recommended_method

    names = [n for n in available_methods() if not METHODS[n].preset]
    needing = [n for n in names if structure in required_structures([n])]
    if not needing:
        return "<a method that needs it>"
    preferred = [structure, *configured, recommended_method()]
    return next(
        (n for n in preferred if n in needing),
        min(needing, key=lambda n: (len(required_structures([n])), n)),
    )


# LLM specs that answer with the offline reader by default (they generate no answers)
OFFLINE_ANSWERERS = ("extractive", "reader")
READER_STRUCTURE = "reader_spans"


def planned_structures(config: IndexConfig) -> list[str]:
    """What a commit builds: the methods' structures, plus the offline reader's sentence
    spans where the reader answers (an index whose LLM generates answers does not need them),
    plus the structures a method reads where they exist (``optional_structures``: an index
    built before them still answers, and gets them at its next commit)."""
    names = required_structures(config.methods)
    if config.llm in OFFLINE_ANSWERERS and READER_STRUCTURE not in names:
        names.append(READER_STRUCTURE)
    for m in config.methods:  # read where present (fusion's window vectors), never required
        names.extend(s for s in get_method(m).optional_structures if s not in names)
    return names


def structure_plan(config: IndexConfig, fingerprint: str) -> tuple[dict[str, Builder], dict[str, str]]:
    """Builders of the structures the configured methods need (dependencies first) and
    the directory each output must have for this chunk set and these settings."""
    builders: dict[str, Builder] = {}
    dirnames: dict[str, str] = {}
    for name in planned_structures(config):
        b = builders[name] = get_builder(name, **config.builders.get(name, {}))
        settings = {"params": b.identity(), "inputs": [dirnames[d] for d in b.requires]}
        dirnames[name] = structure_dirname(name, fingerprint, settings, b.version)
    return builders, dirnames


def pooled_spans(
    plan: tuple[dict[str, Builder], dict[str, str]],
    backend: IndexBackend,
    chunks: ChunkTable,
    texts: list[str],
    pools_tokens: bool,
) -> list[list[tuple[int, int]]] | None:
    """Character spans of each chunk text that the builders still to run want pooled from
    the chunk's own pass (e.g. the concept graph's sentences), or None when none does
    or the embedder gives no token embeddings (``pools_tokens``)."""
    builders, dirnames = plan
    wanted = [
        s
        for name, b in builders.items()
        if not backend.has_structure(dirnames[name]) and (s := b.chunk_spans(chunks, texts)) is not None
    ]
    # on a Ray cluster the same pass runs as the cluster's tasks (embed_spans_task)
    if not wanted or not pools_tokens:
        return None
    return [sorted(set().union(*(w[i] for w in wanted))) for i in range(len(texts))]
