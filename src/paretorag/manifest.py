"""``manifest.json``: format version, configuration, models, counts, stage status, usage.

The manifest is the index's commit point: it is replaced atomically, and it names the
vector files and structure directories in use. Anything not named there is ignored
(and cleaned up by the next successful commit).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, IndexFormatError

FORMAT_VERSION = 1
FILENAME = "manifest.json"


@dataclass
class IndexConfig:
    """Build settings of an index (stored in the manifest; a serialization, not a second system)."""

    methods: list[str] = field(default_factory=lambda: ["vanilla"])
    llm: str = "extractive"
    embedder: str = "minilm"
    chunk_size: int = 1200
    chunk_overlap: int = 100
    workers: int = 2
    builders: dict[str, dict[str, Any]] = field(default_factory=dict)  # structure -> settings

    def validate(self) -> None:
        if self.chunk_size <= 0 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_size={self.chunk_size}, chunk_overlap={self.chunk_overlap}: need size > 0 and 0 <= overlap < size"
            )
        if self.workers <= 0:
            raise ConfigError(f"workers must be positive, got {self.workers}")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
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

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = asdict(self.config)
        return d

    def save(self, directory: Path) -> None:
        tmp = directory / f".{FILENAME}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, directory / FILENAME)

    @classmethod
    def load(cls, directory: Path) -> Manifest | None:
        path = directory / FILENAME
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise IndexFormatError(
                f"{path} is not readable JSON ({exc}); the index is damaged, index again"
            ) from exc
        version = data.get("format_version")
        if not isinstance(version, int):
            raise IndexFormatError(f"{path} has no format_version; it is not a paretorag index")
        if version > FORMAT_VERSION:
            raise IndexFormatError(
                f"{directory} was written by a newer paretorag (index format {version}, this version reads "
                f"<= {FORMAT_VERSION}); upgrade paretorag (pip install -U paretorag) or use another --index directory"
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
        )
