"""The VDB chunk operator (unified framework §6.1 and its appendix): dense top-k over chunk vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...types import Scored
from .base import Operator, check_positive_int, register_operator

if TYPE_CHECKING:
    from ..query import IndexView, State


@register_operator
class ChunkVDB(Operator):
    """Top-k chunks by inner product with the question's vector (exact faiss search).

    VanillaRAG's only step, and the chunk VDB of VGraphRAG / CheapRAG (unified
    framework, Table 9).

    Parameters
    ----------
    k : int
        Number of chunks (5).
    """

    name = "chunk.vdb"
    kind = "chunk"
    produces = "chunk"
    structures = ("vectors",)
    paper = "unified-framework §6.1, Table 9 (chunk VDB)"

    def __init__(self, *, k: int = 5) -> None:
        self.k = k

    def run(self, index: IndexView, state: State) -> Scored:
        return index.dense_search(state.vector(index), check_positive_int(self, "k", self.k))
