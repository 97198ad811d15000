"""The package's layout: packages by stage, every import pointing down, no cycle.

Imports are read from the source (``ast``), lazy ones inside functions and those under
``TYPE_CHECKING`` included. A package is one node (``retrieval`` and ``answering`` count
their sub-packages apart, as their parts are layers of their own); a top-level module is
a node of its own. docs/architecture.md draws the same picture.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import paretorag

PKG = Path(paretorag.__file__).parent

# lowest first; a node may import only nodes on lower rows (one row = one rank)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("types", "params"),
    ("textutil", "progress"),
    ("providers",),
    ("lgbm", "cancel", "kernels"),
    ("storage",),
    ("ingest",),
    ("graphs",),
    ("retrieval.query", "retrieval.router", "retrieval.ranking"),
    ("retrieval.operators",),
    ("retrieval.methods",),
    ("retrieval.catalog",),
    ("indexing", "answering.span_files"),
    ("answering.reader", "answering.context"),
    ("answering.answer",),
    ("answering.mapreduce", "answering.llms"),
    ("answering.answerer",),
    ("session",),
    ("rag",),
    ("config",),
    ("explore", "eval"),
    ("training",),
    ("server",),
    ("cli",),
    ("__init__",),
)
RANK = {node: rank for rank, row in enumerate(LAYERS) for node in row}
SPLIT = ("retrieval", "answering")  # packages whose sub-packages are layers of their own


def node_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] in SPLIT and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def imports() -> Iterator[tuple[str, str, str, int]]:
    """(importing node, imported node, file, line) for every paretorag import in the package."""
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("").parts
        is_init = rel[-1] == "__init__"
        module = ".".join(rel[:-1] if is_init else rel) or "__init__"
        package = list(rel[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                elif node.module and node.module.startswith("paretorag."):
                    target = node.module.removeprefix("paretorag.")
                else:
                    continue
                targets = [f"{target}.{a.name}" if target else a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [
                    a.name.removeprefix("paretorag.") for a in node.names if a.name.startswith("paretorag.")
                ]
            for target in targets:
                if target == "__version__":
                    continue
                yield node_of(module), node_of(target), str(path.relative_to(PKG)), node.lineno


def test_every_import_points_down_a_layer() -> None:
    unknown = sorted({n for a, b, _, _ in imports() for n in (a, b) if n not in RANK})
    assert not unknown, f"place these packages or modules in LAYERS (and docs/architecture.md): {unknown}"
    upward = [
        f"{file}:{line}: {a} imports {b}" for a, b, file, line in imports() if a != b and RANK[b] >= RANK[a]
    ]
    assert not upward, "imports back up (or sideways):\n" + "\n".join(upward)


def test_no_import_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for a, b, _, _ in imports():
        if a != b:
            graph.setdefault(a, set()).add(b)
    # depth-first search for a back edge
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not cycles, cycles


def test_few_modules_at_the_top() -> None:
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 12, top


def test_the_checks_see_an_upward_import() -> None:
    # the reader below the facade: an import of the facade from it would be reported
    assert RANK["rag"] > RANK["answering.reader"]
    assert node_of("retrieval.operators.fusion") == "retrieval.operators"
    assert node_of("storage.store") == "storage"
    found = {(a, b) for a, b, _, _ in imports()}
    assert ("retrieval.methods", "retrieval.operators") in found  # methods compose operators
    assert ("retrieval.operators", "retrieval.methods") not in found  # and never the reverse
