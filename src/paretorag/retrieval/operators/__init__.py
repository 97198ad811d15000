"""Registered retrieval operators (unified framework §6.1, plus E2GraphRAG's and G2ConS's own).

Every operator is called as ``op(index, state) -> Scored`` (:mod:`.base`). Operator
modules are listed in :data:`_MODULES`, the one place where they are registered. Steps
that run a whole method (``ea-graphrag.path``, ``g2cons.second``) are registered by
:mod:`paretorag.retrieval.methods.steps`: operators never look a method up.
"""

from __future__ import annotations

import importlib

from .base import OPERATORS, Operator, available_operators, get_operator, operator_class, register_operator

# Modules that register operators. Add new ones here.
_MODULES = (
    "paretorag.retrieval.operators.dense",
    "paretorag.retrieval.operators.sparse",
    "paretorag.retrieval.operators.question",
    "paretorag.retrieval.operators.node",
    "paretorag.retrieval.operators.relation",
    "paretorag.retrieval.operators.chunk",
    "paretorag.retrieval.operators.subgraph",
    "paretorag.retrieval.operators.beam",
    "paretorag.retrieval.operators.community",
    "paretorag.retrieval.operators.context",
    "paretorag.retrieval.operators.e2graphrag",
    "paretorag.retrieval.operators.e2graphrag_evidence",
    "paretorag.retrieval.operators.concepts",
    "paretorag.retrieval.operators.g2cons_paths",
    "paretorag.retrieval.operators.hipporag2",
    "paretorag.retrieval.operators.routing",
    "paretorag.retrieval.operators.walk",
    "paretorag.retrieval.operators.fusion",
    "paretorag.retrieval.operators.linear",
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
