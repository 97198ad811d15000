"""What is registered, generated from the code: operators, methods and structure builders.

``paretorag operators`` and ``paretorag methods`` print these; the README's tables
are checked against them by the tests.
"""

from __future__ import annotations

from typing import Any

from ..graphs.base import available_builders, builder_class
from .methods import steps  # noqa: F401  (its steps run whole methods and register as operators)
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
        info["recommended"] = bool(info.get("recommended")) and not spec.preset
        out.append(info)
    return out


TABLE3_COLUMNS = ("node", "relationship", "chunk", "subgraph", "community")
# the papers' own operator families: their methods are outside Table 3 (docs/methods.md)
OWN_FAMILIES = ("e2graphrag", "g2cons", "ea-graphrag")


def table3() -> list[dict[str, Any]]:
    """The unified framework's Table 3, generated from the registered methods' operators.

    One row per method composed of registered operators (presets, and the methods with
    their own operator families, E2GraphRAG, G2ConS and EA-GraphRAG, left out): its graph (the structures it reads), the
    operators it composes per Table 3 column (``"link + ppr"``), its question
    conversion, whether it calls the LLM while retrieving (``"agent"`` when it needs a
    generative one) and how the answer is generated.
    """
    out = []
    for name in available_methods():
        spec = METHODS[name]
        if spec.preset:
            continue
        m = get_method(name)
        if not m.operators() or any(op.kind in OWN_FAMILIES for op in m.operators()):
            continue
        cols: dict[str, list[str]] = {c: [] for c in (*TABLE3_COLUMNS, "question")}
        for op in m.operators():
            short = op.name.split(".", 1)[1]
            if op.kind in cols and short not in cols[op.kind]:
                cols[op.kind].append(short)
        llm = "agent" if m.needs_generative else ("yes" if m.uses_llm else "no")
        row: dict[str, Any] = {
            "method": name,
            "graph": ", ".join(s for s in m.requires if s != "vectors") or "vectors",
            **{c: " + ".join(v) or "-" for c, v in cols.items()},
            "query_llm": llm,
            "generation": m.generation,
        }
        out.append(row)
    return out


def table3_markdown() -> str:
    """:func:`table3` as a Markdown table (the README's copy is checked against it)."""
    cols = ["method", "graph", "question", *TABLE3_COLUMNS, "query_llm", "generation"]
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for row in table3():
        cells = [f"`{row['method']}`", *(str(row[c]) for c in cols[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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


__all__ = ["TABLE3_COLUMNS", "builders", "methods", "operators", "table3", "table3_markdown"]
