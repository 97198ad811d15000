"""The embedder a spec names (``--embedder``, ``RAG.open(embedder=...)``, the index's manifest)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .embedders import DEFAULT_MODEL, HashEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder
from .onnx_embedder import minilm


def minilm_variant(spec: str | None) -> str | None:
    """The packaged MiniLM's variant a spec names ("fp32" or "int8"), None for another embedder."""
    if spec is None or spec in ("minilm", DEFAULT_MODEL):
        return "fp32"
    if spec in ("minilm-int8", f"{DEFAULT_MODEL}-int8"):
        return "int8"
    return None


def make_embedder(spec: str | None) -> Any:
    """An embedder from a spec: None/"minilm" (default), "minilm-int8", "hash[:DIM]", "st:PATH",
    "openai:MODEL:DIM".

    ``minilm`` runs on ONNX Runtime when its export gives the torch vectors, else on torch
    (``$PARETORAG_EMBEDDER_BACKEND``, :mod:`paretorag.providers.onnx_embedder`); both have
    the same name, so an index embedded by one is queried by the other.
    """
    variant = minilm_variant(spec)
    if variant is not None or spec is None:
        return minilm(variant or "fp32")
    if spec.startswith("hash"):
        _, _, dim = spec.partition(":")
        return HashEmbedder(int(dim) if dim else 64)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:])
    if spec.startswith("openai:"):
        parts = spec.split(":")
        if len(parts) != 3 or not parts[2].isdigit():
            raise ConfigError(
                f"embedder spec {spec!r}: use openai:MODEL:DIM, e.g. openai:text-embedding-3-small:1536"
            )
        return OpenAIEmbedder(parts[1], dim=int(parts[2]))
    raise ConfigError(
        f"unknown embedder {spec!r}; use minilm, minilm-int8, hash[:DIM], st:PATH or openai:MODEL:DIM"
    )


__all__ = ["make_embedder"]
