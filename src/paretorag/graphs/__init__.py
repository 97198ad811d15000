"""Structure builders, registered by name in one place (:data:`_MODULES`).

``index`` builds the structures that the configured methods ``require``; a builder
module registers its classes with :func:`paretorag.graphs.base.register_builder` and is
listed here, so every builder is known without importing any method.
"""

from __future__ import annotations

import importlib

# Modules that register builders. Add new ones here.
_MODULES = (
    "paretorag.graphs.tree",
    "paretorag.graphs.entities",
    "paretorag.graphs.concepts",
    "paretorag.graphs.kg",
    "paretorag.graphs.passages",
    "paretorag.graphs.raptor",
    "paretorag.graphs.communities",
    "paretorag.graphs.bm25",
    "paretorag.graphs.core_kg",
    "paretorag.graphs.fact_graph",
    "paretorag.graphs.linear",
    "paretorag.graphs.reader_spans",
    "paretorag.graphs.chunk_windows",
)


def load_builders() -> None:
    """Import every builder module (idempotent)."""
    for mod in _MODULES:
        importlib.import_module(mod)
