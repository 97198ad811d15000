"""``paretorag methods`` as a reader wants it: 80 columns, the recommended method first.

Each method takes two lines: its name, the structures it needs (beyond the chunk vectors
every index has) and where it calls the LLM; then a one-line description. Presets (a
method with other settings, such as the E2GraphRAG ablations) follow, one line each.
``paretorag methods --json`` keeps the full record (:func:`paretorag.retrieval.catalog.methods`).
"""

from __future__ import annotations

from typing import Any

WIDTH = 80
NAME_W = 20
NEEDS_W = 34


def _needs(row: dict[str, Any]) -> str:
    needs = [s for s in row.get("requires", []) if s != "vectors"]
    return ", ".join(needs) or "-"


def _llm_calls(row: dict[str, Any]) -> str:
    """Where the method calls an LLM besides writing the answer: while indexing, per query."""
    from ..graphs.base import builder_class

    index = any(builder_class(s).uses_llm for s in row.get("requires", []) if s != "vectors")
    if row.get("needs_generative"):
        query = "query (generative)"
    elif row.get("uses_llm"):
        query = "query"
    else:
        query = ""
    if row.get("generation") == "map-reduce":
        query = query or "answer map-reduce"
    return " + ".join(p for p in ("index" if index else "", query) if p) or "none"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _description(row: dict[str, Any]) -> str:
    return " ".join(str(row.get("doc", "")).replace("``", "").split())


def render(rows: list[dict[str, Any]], width: int = WIDTH) -> str:
    """The rows of :func:`paretorag.retrieval.catalog.methods` as text at most ``width`` columns wide."""
    methods = [r for r in rows if not r.get("preset_of")]
    presets = [r for r in rows if r.get("preset_of")]
    methods.sort(key=lambda r: (not r.get("recommended", False), r["name"]))
    lines = [f"  {'method':<{NAME_W - 2}}{'needs':<{NEEDS_W}}LLM calls"]
    for r in methods:
        mark = "* " if r.get("recommended") else "  "
        head = f"{mark}{r['name']:<{NAME_W - 2}}{_clip(_needs(r), NEEDS_W - 1):<{NEEDS_W}}{_llm_calls(r)}"
        lines.append(_clip(head, width))
        lines.append(_clip("      " + _description(r), width))
    if presets:
        lines += ["", "presets (a method above with other settings; same needs):"]
        for r in sorted(presets, key=lambda r: r["name"]):
            lines.append(_clip(f"  {r['name']}: {_description(r)}", width))
    lines += [
        "",
        "* recommended: what query, serve and the web page use when no method is given.",
        "LLM calls: while indexing and per query, besides writing the answer.",
        "Full records: paretorag methods --json",
    ]
    return "\n".join(_clip(line, width) for line in lines) + "\n"


__all__ = ["WIDTH", "render"]
