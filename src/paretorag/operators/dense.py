"""The VDB chunk operator (unified framework §6.3): dense top-k over chunk vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..types import FloatArray, Scored
from .base import Operator, check_positive_int

if TYPE_CHECKING:
    from ..methods.base import IndexView


class DenseChunks(Operator):
    """Top-k chunks by inner product with the query vector (exact search).

    Parameters
    ----------
    k : int
        Number of chunks.
    """

    requires = ("vectors",)

    def __init__(self, *, k: int = 5) -> None:
        self.k = k

    def __call__(self, index: IndexView, query_vector: FloatArray) -> Scored:
        return index.dense_search(query_vector, check_positive_int(self, "k", self.k))
