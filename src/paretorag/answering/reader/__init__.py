"""The offline reader: short answers with their evidence, comparisons, yes/no, abstention.

See :mod:`paretorag.answering.reader.core` for the stages. Training lives apart, in
:mod:`paretorag.training.reader` (nothing at query time imports it).
"""

from .candidates import FEATURES, Passage
from .core import NOT_FOUND, Evidence, Reader, ReaderLLM, ReaderResult, passages_of

__all__ = [
    "FEATURES",
    "NOT_FOUND",
    "Evidence",
    "Passage",
    "Reader",
    "ReaderLLM",
    "ReaderResult",
    "passages_of",
]
