"""``zeroshot`` and ``vanilla`` (unified framework §7, the two baselines).

- ``zeroshot``: the LLM answers from its own knowledge, no retrieval.
- ``vanilla``: dense top-k chunks by cosine similarity to the question (VDB chunk
  operator); default k = 5 (EA-GraphRAG's setting for passage retrieval).
"""

from __future__ import annotations

from ..operators.base import check_positive_int
from ..operators.dense import DenseChunks
from ..types import Scored
from .base import IndexView, Method, QueryOptions, Retrieval, register


@register
class ZeroShot(Method):
    """Answer without retrieval (unified framework, ZeroShot baseline)."""

    name = "zeroshot"
    requires = ()
    paper = "unified-framework §7 (ZeroShot)"

    def __init__(self) -> None:
        pass

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        return Retrieval(Scored.empty(), mode="none", branch="no retrieval")


@register
class Vanilla(Method):
    """Dense top-k retrieval (unified framework, VanillaRAG).

    Parameters
    ----------
    k : int
        Chunks retrieved (default 5).
    """

    name = "vanilla"
    requires = ("vectors",)
    paper = "unified-framework §7 (VanillaRAG)"

    def __init__(self, *, k: int = 5) -> None:
        self.k = k

    def retrieve(self, index: IndexView, question: str, options: QueryOptions) -> Retrieval:
        k = check_positive_int(self, "k", options.k if options.k is not None else self.k)
        scored = DenseChunks(k=k)(index, index.embed_query(question))
        return Retrieval(scored, mode="dense", branch=f"dense top-{k}")
