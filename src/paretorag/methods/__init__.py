"""Registered methods. Importing a method module registers it."""

from __future__ import annotations

import importlib

from .base import (
    METHODS,
    IndexView,
    Method,
    QueryOptions,
    Retrieval,
    available_methods,
    get_method,
    recommended_method,
    register,
    register_preset,
)
from .pipeline import Pipeline

# Modules that register methods (and the builders they need). Add new ones here.
_MODULES = (
    "paretorag.methods.dense",
    "paretorag.methods.hybrid",
    "paretorag.methods.g2cons",
    "paretorag.methods.e2graphrag",
    "paretorag.methods.unified",
    "paretorag.methods.graphrag",
    "paretorag.methods.tog",
    "paretorag.methods.hipporag2",
    "paretorag.methods.ea_graphrag",
    "paretorag.methods.walk",
    "paretorag.methods.fusion",
    "paretorag.methods.linear",
)


def _load_all() -> None:
    for mod in _MODULES:
        importlib.import_module(mod)


__all__ = [
    "METHODS",
    "IndexView",
    "Method",
    "Pipeline",
    "QueryOptions",
    "Retrieval",
    "available_methods",
    "get_method",
    "recommended_method",
    "register",
    "register_preset",
]
