"""Where the reader's neural span model lives and how it is asked for, without loading it.

The folder written by ``paretorag train-reader --neural`` (or shipped in ``paretorag/data/span``)
holds ``neural.json``, ``tokenizer.json`` and the ONNX file of each exported variant. This
module names those files and resolves the folder and mode a reader uses; it imports nothing
of the reader, so that a cold query can start the model's session on another thread while
the reader's own modules are still being imported (:mod:`paretorag.cli.warmup`).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ..errors import ConfigError

META_FILE = "neural.json"
TOKENIZER_FILE = "tokenizer.json"
VARIANTS = {"fp32": "reader.onnx", "int8": "reader-int8.onnx"}
SPAN_MODEL_ENV, SPAN_MODE_ENV = "PARETORAG_SPAN_MODEL", "PARETORAG_SPAN_MODE"
SPAN_MODES = ("compare", "fallback", "first", "off")
SPAN_PACK_ENV = "PARETORAG_SPAN_PACK"  # 1 / 0: read passages packed or one by one, whatever neural.json says
SPAN_THREADS = 2  # intra-op threads of the span model's session


def shipped_span_model() -> Path:
    """The folder of the span model shipped in the package (``paretorag/data/span``)."""
    return Path(str(resources.files("paretorag") / "data" / "span"))


def configured_span_model(folder: Path | str | None = None, mode: str | None = None) -> tuple[str, str]:
    """The span model folder and mode a reader uses: the given ones, else ``$PARETORAG_SPAN_MODEL``
    (else the shipped model, "" when there is none) and ``$PARETORAG_SPAN_MODE`` (else ``compare``)."""
    if folder is not None:
        where = str(folder)
    else:
        shipped = shipped_span_model()
        where = os.environ.get(SPAN_MODEL_ENV, "") or (
            str(shipped) if (shipped / META_FILE).is_file() else ""
        )
    how = mode if mode is not None else os.environ.get(SPAN_MODE_ENV, "compare")
    if how not in SPAN_MODES:
        raise ConfigError(f"span model mode {how!r}: use one of {', '.join(SPAN_MODES)} (${SPAN_MODE_ENV})")
    return where, how


def loaded_variant(folder: Path | str) -> str:
    """The variant a reader loads from ``folder``: its int8 export when there is one, else fp32."""
    return "int8" if (Path(folder) / VARIANTS["int8"]).is_file() else "fp32"
