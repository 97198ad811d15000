"""Registered methods. Importing a method module registers it."""

from __future__ import annotations

import importlib
import pkgutil

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

# every module of this package but the framework's own registers methods: a new method is
# one new file (or a class in an existing one), found here without a list to edit
_FRAMEWORK = {"base", "pipeline", "steps"}


def _modules() -> list[str]:
    return sorted(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__) if m.name not in _FRAMEWORK)


_LOADED: list[str] = []  # the modules imported, once (every get_method asks)


def _load_all() -> None:
    if _LOADED:
        return
    mods = _modules()
    for mod in mods:
        importlib.import_module(mod)
    _LOADED.extend(mods)


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
