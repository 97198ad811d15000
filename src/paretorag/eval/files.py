"""Reading the benchmark files: JSON Lines with errors that name the file, the line and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path} not found; check --data and the subset name")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{path}:{lineno} is not a JSON object ({exc}); fix or remove the line"
                ) from exc
            if not isinstance(row, dict):
                raise InputError(f"{path}:{lineno} must be a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


__all__ = ["read_jsonl"]
