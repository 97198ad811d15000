"""Evaluation harness: benchmark loaders, metrics, the runner, reports and Pareto plots.

See ``docs/evaluation.md``. :func:`paretorag.eval.runner.run_eval` is the entry point
(``paretorag eval`` on the command line); :func:`paretorag.eval.loaders.load_dataset`
reads any benchmark into :class:`~paretorag.eval.schema.Dataset`.
"""

from __future__ import annotations

from .loaders import available_subsets, load_dataset
from .schema import Dataset, Passage, Question

__all__ = ["Dataset", "Passage", "Question", "available_subsets", "load_dataset"]
