"""Evaluation harness: benchmark loaders, metrics, the runner, reports and Pareto plots.

See ``docs/evaluation.md``. :func:`paretorag.eval.runner.run_eval` is the entry point
(``paretorag eval`` on the command line); :func:`paretorag.eval.loaders.load_dataset`
reads any benchmark into :class:`~paretorag.eval.schema.Dataset`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loaders import available_subsets, load_dataset
    from .schema import Dataset, Passage, Question

__all__ = ["Dataset", "Passage", "Question", "available_subsets", "load_dataset"]

# imported on first use, so `paretorag --help` (which registers `eval` from .cli) loads no numpy
_LAZY = {
    "available_subsets": ".loaders",
    "load_dataset": ".loaders",
    "Dataset": ".schema",
    "Passage": ".schema",
    "Question": ".schema",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
