"""Every answerer an index or a query can name: the providers' LLMs and the offline reader.

The offline reader (:mod:`paretorag.answering.reader`) is an answerer of this layer, not a
provider: :func:`make_llm` adds it by name to :func:`paretorag.providers.llm.make_llm`, so
providers never import the reader.
"""

from __future__ import annotations

from typing import Any

from ..providers.llm import make_llm as make_provider_llm


def _reader() -> Any:
    from .reader.core import ReaderLLM  # spaCy and the ranker load on the first question, not here

    return ReaderLLM()


ANSWERERS = {"reader": _reader}


def make_llm(spec: str | None) -> Any:
    """An LLM or the offline reader from a spec: ``extractive`` (default), ``reader``,
    ``openai:MODEL``, ``llamacpp[:GGUF_PATH]``, ``fake``."""
    return make_provider_llm(spec, named=ANSWERERS)


__all__ = ["ANSWERERS", "make_llm"]
