"""Importing a library without the optional packages it would load and not use.

Some libraries import every optional companion they find: thinc (spaCy's layer library)
imports torch, about a second, though ``en_core_web_sm`` runs on numpy; LightGBM imports
scikit-learn and pandas, about a second more (scikit-learn brings scipy.stats), though a
shipped model's ``Booster.predict`` needs neither. Each checks its companion with ``try:
import ... except ImportError``, so :func:`import_without` refuses those names to the
importing thread while it imports the library. Other threads, which may be importing the
same packages meanwhile (an index build imports scikit-learn and scipy in its threads),
see nothing; a package already loaded is not refused.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import threading
from collections.abc import Collection
from types import ModuleType
from typing import Any

_LOCK = threading.RLock()


class RefuseToThread(importlib.abc.MetaPathFinder):
    """An import finder that refuses some top-level packages to one thread only."""

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def import_without(module: str, refused: Collection[str]) -> ModuleType:
    """``module``, imported while this thread cannot import the packages ``refused``
    (those not loaded already); a module loaded before is returned as it is.

    One import at a time: while a thread imports, ``sys.modules`` already holds the
    half-initialized module, and a second thread must not take it.
    """
    with _LOCK:
        found = sys.modules.get(module)
        if found is not None:
            return found
        names = [n for n in refused if n not in sys.modules]
        finder = RefuseToThread(names) if names else None
        if finder is not None:
            sys.meta_path.insert(0, finder)
        try:
            return importlib.import_module(module)
        finally:
            if finder is not None:
                sys.meta_path.remove(finder)


__all__ = ["RefuseToThread", "import_without"]
