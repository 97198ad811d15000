"""What is registered, generated from the code: operators, methods and structure builders.

``paretorag operators`` and ``paretorag methods`` print these; the README's tables
are checked against them by the tests.
"""

from __future__ import annotations

from typing import Any

from .graphs.base import available_builders, builder_class
from .methods.base import METHODS, available_methods, get_method
from .operators.base import available_operators, get_operator


def operators() -> list[dict[str, Any]]:
    """Every registered operator: name, kind, produces, consumes, requires, LLM use, paper, settings."""
    return [get_operator(name).describe() for name in available_operators()]


def methods() -> list[dict[str, Any]]:
    """Every registered method: name, paper, structures, LLM use, steps or preset, settings."""
    out = []
    for name in available_methods():
        info = get_method(name).describe()
        spec = METHODS[name]
        if spec.preset:
            info["preset_of"] = spec.cls.name
            info["preset"] = spec.preset
        info["doc"] = spec.doc
        out.append(info)
    return out


def builders() -> list[dict[str, Any]]:
    """Every registered structure builder: name, what it reads, LLM use, settings."""
    out = []
    for name in available_builders():
        cls = builder_class(name)
        out.append(
            {
                "name": name,
                "requires": list(cls.requires),
                "uses_llm": cls.uses_llm,
                "version": cls.version,
                "params": cls().get_params(deep=False),
                "doc": (cls.__doc__ or "").strip().split("\n", 1)[0],
            }
        )
    return out


__all__ = ["builders", "methods", "operators"]
