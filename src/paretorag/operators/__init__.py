"""Registered retrieval operators (unified framework §6.1, plus E2GraphRAG's and G2ConS's own).

Every operator is called as ``op(index, state) -> Scored`` (:mod:`.base`). Operator
modules are listed in :data:`_MODULES`, the one place where they are registered.
"""

from __future__ import annotations

import importlib

from .base import OPERATORS, Operator, available_operators, get_operator, operator_class, register_operator

# Modules that register operators. Add new ones here.
_MODULES = (
    "paretorag.operators.dense",
    "paretorag.operators.sparse",
    "paretorag.operators.question",
    "paretorag.operators.node",
    "paretorag.operators.relation",
    "paretorag.operators.chunk",
    "paretorag.operators.subgraph",
    "paretorag.operators.beam",
    "paretorag.operators.community",
    "paretorag.operators.context",
    "paretorag.operators.e2graphrag",
    "paretorag.operators.e2graphrag_evidence",
    "paretorag.operators.concepts",
    "paretorag.operators.g2cons_paths",
    "paretorag.operators.hipporag2",
    "paretorag.operators.routing",
    "paretorag.operators.walk",
    "paretorag.operators.fusion",
    "paretorag.operators.linear",
)


def load_operators() -> None:
    """Import every operator module (idempotent)."""
    for mod in _MODULES:
        importlib.import_module(mod)


__all__ = [
    "OPERATORS",
    "Operator",
    "available_operators",
    "get_operator",
    "load_operators",
    "operator_class",
    "register_operator",
]
