"""The settings given to :meth:`paretorag.RAG.open`, applied to an index's configuration.

They are applied once when the index is opened and again by every writer after it
takes the writer lock and re-reads the manifest, so that a commit by another process in
between is neither lost nor undone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..graphs.base import get_builder
from ..retrieval.methods.base import available_methods, get_method
from ..storage.manifest import Manifest


@dataclass
class OpenSettings:
    """What ``RAG.open`` was asked to change (None: keep the index's value)."""

    methods: Sequence[str] | None = None
    replace_methods: bool = False
    llm: str | None = None
    embedder: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    chunking: str | None = None
    workers: int | None = None
    embed_titles: bool | None = None
    ann: str | None = None
    builders: dict[str, dict[str, Any]] = field(default_factory=dict)
    replace_builders: bool = False

    def apply(self, root: Path | str, manifest: Manifest) -> None:
        """Validate and merge into ``manifest.config``; settings fixed by stored documents raise."""
        cfg = manifest.config
        has_docs = bool(manifest.counts.get("documents"))
        if self.chunk_size is not None or self.chunk_overlap is not None:
            size = self.chunk_size or cfg.chunk_size
            overlap = cfg.chunk_overlap if self.chunk_overlap is None else self.chunk_overlap
            if self.chunk_overlap is None and overlap >= size:
                overlap = size // 12  # the kept overlap would not fit: the default's ratio, 100 of 1,200
            new = (size, overlap)
            if has_docs and new != (cfg.chunk_size, cfg.chunk_overlap):
                raise ConfigError(
                    f"{root} was chunked with size {cfg.chunk_size}/overlap {cfg.chunk_overlap}; "
                    "chunking cannot change once documents are indexed: use a new --index directory"
                )
            cfg.chunk_size, cfg.chunk_overlap = new
        if self.chunking is not None and self.chunking != cfg.chunking:
            if has_docs:
                raise ConfigError(
                    f"{root} was chunked by {cfg.chunking}; chunking cannot change once documents are "
                    "indexed: use a new --index directory"
                )
            cfg.chunking = self.chunking
        if self.workers is not None:
            cfg.workers = self.workers
        if self.embed_titles is not None:
            cfg.embed_titles = self.embed_titles  # the vectors are re-embedded at the next commit
        if self.ann is not None:
            cfg.ann = self.ann  # the faiss index is rebuilt at the next commit
        if self.replace_builders:
            cfg.builders = {}  # every builder at its defaults but those given
        if self.builders:
            available_methods()  # importing the methods registers their builders
        for bname, bsettings in self.builders.items():
            merged = {**cfg.builders.get(bname, {}), **bsettings}
            get_builder(bname, **merged)  # validates names and settings
            cfg.builders[bname] = merged
        if self.replace_methods:
            if not self.methods:
                raise ConfigError("replace_methods needs the methods to keep, e.g. methods=['vanilla']")
            cfg.methods = []  # the others' structures are kept until the chunks change (IndexWriter.commit)
        elif self.methods:
            _check_configured(root, cfg.methods)
        for m in self.methods or ([] if cfg.methods else ["vanilla"]):
            get_method(m)  # validates the name
            if m not in cfg.methods:
                cfg.methods.append(m)
        if self.llm is not None:
            cfg.llm = self.llm
        if self.embedder is not None:
            if has_docs and self.embedder != cfg.embedder:
                raise ConfigError(
                    f"{root} was embedded with {cfg.embedder!r}, not {self.embedder!r}; use a new --index directory"
                )
            cfg.embedder = self.embedder
        cfg.validate()


def _check_configured(root: Path | str, methods: Sequence[str]) -> None:
    """Every method the index is configured for must be registered: its structures are
    planned from the method's requirements (an index written by another version, or with
    a preset since removed, names one this version does not know)."""
    known = set(available_methods())
    unknown = [m for m in methods if m not in known]
    if unknown:
        keep = ",".join(m for m in methods if m in known) or "vanilla"
        raise ConfigError(
            f"{root} is configured for method(s) {', '.join(map(repr, unknown))}, which this version "
            f"of paretorag does not have; keep the others with `paretorag index PATH... --index {root} "
            f"--methods {keep} --replace-methods` (or RAG.open(..., methods=[...], replace_methods=True))"
        )


def parse_builder_settings(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["tree.g=4", "entity_graph.labels=[\"PERSON\"]"]`` -> ``{"tree": {"g": 4}, ...}`` (values as JSON, else text)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        structure, dot, name = key.partition(".")
        if not (eq and dot and structure and name):
            raise ConfigError(f"--set {item!r}: use STRUCTURE.SETTING=VALUE, e.g. --set tree.g=4")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(structure, {})[name] = value
    return out
