"""``manifest.json``: format version, configuration, models, counts, stage status, usage.

The manifest is the index's commit point: it is replaced atomically, and it names the
vector files and structure directories in use. Anything not named there is ignored
(and cleaned up by the next successful commit). Each commit increments ``generation``
(readers reload when it changes) and leaves a copy in ``manifest.json.bak``, so that
``paretorag repair`` can recover the configuration if the manifest is damaged.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DamagedIndexError, IndexFormatError
from .diskerrors import disk_errors

FORMAT_VERSION = 1
FILENAME = "manifest.json"
BACKUP = "manifest.json.bak"


@dataclass
class IndexConfig:
    """Build settings of an index (stored in the manifest; a serialization, not a second system)."""

    methods: list[str] = field(default_factory=lambda: ["vanilla"])
    llm: str = "extractive"
    embedder: str = "minilm"
    chunk_size: int = 1200
    chunk_overlap: int = 100
    chunking: str = "sentences"  # where chunks may end: "sentences", or "sections" (headings, paragraphs)
    workers: int = 2
    embed_titles: bool = True  # chunk vectors embed "title\ntext" (part of the vectors' identity)
    ann: str = "auto"  # faiss index: exact | hnsw | ivf | auto (exact below 1M vectors)
    builders: dict[str, dict[str, Any]] = field(default_factory=dict)  # structure -> settings

    def validate(self) -> None:
        if self.chunk_size <= 0 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_size={self.chunk_size}, chunk_overlap={self.chunk_overlap}: need size > 0 and 0 <= overlap < size"
            )
        if self.chunking not in ("sections", "sentences"):
            raise ConfigError(f"chunking must be sections or sentences, got {self.chunking!r}")
        if self.ann not in ("auto", "exact", "hnsw", "ivf"):
            raise ConfigError(f"ann must be auto, exact, hnsw or ivf, got {self.ann!r}")
        if self.workers <= 0:
            raise ConfigError(f"workers must be positive, got {self.workers}")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known.setdefault("chunking", "sentences")  # indexes written before the setting were chunked so
        return cls(**known)


@dataclass
class Manifest:
    config: IndexConfig
    format_version: int = FORMAT_VERSION
    models: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    vectors: str = ""  # stem of the committed chunk vectors under vectors/
    structures: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {dir, seconds, ...}
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # stage -> {embed_texts, embed_batches, embed_cached, pooled_spans, spacy_docs}: model calls
    model_calls: dict[str, dict[str, int]] = field(default_factory=dict)
    generation: int = 0  # incremented by every commit

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = asdict(self.config)
        return d

    def save(self, directory: Path, *, backup: bool = True) -> None:
        """Replace the manifest atomically (then its backup copy)."""
        text = json.dumps(self.to_json(), indent=2, sort_keys=True)
        names = (FILENAME, BACKUP) if backup else (FILENAME,)
        for name in names:
            tmp = directory / f".{name}.tmp"
            try:
                with disk_errors(directory / name):
                    with open(tmp, "w", encoding="utf-8") as fh:
                        fh.write(text)
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.replace(tmp, directory / name)
            finally:
                tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, name: str = FILENAME) -> Manifest | None:
        """The manifest (None if there is none); a damaged one raises :class:`DamagedIndexError`."""
        path = directory / name
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DamagedIndexError(
                f"{path} is damaged ({exc}); run `paretorag repair --index {directory}`"
            ) from exc
        return cls.from_json(data, str(directory), str(path))

    @classmethod
    def from_json(cls, data: Any, index: str, where: str = "") -> Manifest:
        """The manifest of ``data`` (read from ``where`` in the index ``index``); a damaged
        or newer one raises."""
        where = where or f"the manifest of {index}"
        if not isinstance(data, dict):
            raise DamagedIndexError(f"{where} is damaged; run `paretorag repair --index {index}`")
        version = data.get("format_version")
        if not isinstance(version, int):
            raise DamagedIndexError(f"{where} has no format_version; run `paretorag repair --index {index}`")
        if version > FORMAT_VERSION:
            raise IndexFormatError(
                f"{index} was written by a newer paretorag (index format {version}, this version reads "
                f"<= {FORMAT_VERSION}); upgrade paretorag (pip install -U paretorag) or use another --index"
            )
        return cls(
            config=IndexConfig.from_json(data.get("config", {})),
            format_version=version,
            models=dict(data.get("models", {})),
            counts=dict(data.get("counts", {})),
            vectors=str(data.get("vectors", "")),
            structures=dict(data.get("structures", {})),
            usage=dict(data.get("usage", {})),
            timings=dict(data.get("timings", {})),
            model_calls={str(k): dict(v) for k, v in dict(data.get("model_calls", {})).items()},
            generation=int(data.get("generation", 0)),
        )


def not_an_index(root: Path) -> str:
    """Why ``root`` opens no index, and the fix: the near name of an index beside it ("did you
    mean --index ix-fusion?", by difflib), else the indexes beside it, else how to build one
    or name one in ``paretorag.toml``."""
    head = f"{root} is not a paretorag index (no {FILENAME})"
    parent = root.parent
    try:
        indexes = sorted(p.name for p in parent.iterdir() if p.name != root.name and (p / FILENAME).is_file())
    except OSError:  # the parent is missing or unreadable: no neighbour to suggest
        indexes = []
    close = difflib.get_close_matches(root.name, indexes, n=1, cutoff=0.6)
    if close:
        return f"{head}; did you mean --index {parent / close[0]}?"
    if indexes:
        shown = ", ".join(str(parent / n) for n in indexes[:5]) + (", ..." if len(indexes) > 5 else "")
        return (
            f"{head}; indexes beside it: {shown}. Pass one with --index, or build this one with "
            f"`paretorag index FILES --index {root}`"
        )
    return (
        f"{head}; build it with `paretorag index FILES --index {root}` first, or name an existing index "
        'with --index DIR, or once in paretorag.toml ([index] path = "DIR") or $PARETORAG_INDEX'
    )
