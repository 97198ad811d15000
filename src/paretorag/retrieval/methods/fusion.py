"""``fusion``: the recommended method. Dense, BM25 and entity-walk candidates, ordered by a
learned two-stage ranker whose second stage follows the bridge to the second hop (no LLM).

Three steps (:mod:`paretorag.retrieval.operators.fusion`):

1. ``dense``: the chunk VDB operator, the 50 best passages by cosine similarity;
2. ``walk``: the entity walk (``entity-walk``'s PPR over passages and their spaCy
   entities), restarting at the 5 best dense passages, its 30 best; the ``local`` solver,
   which walks the restart passages' neighbourhood only, so its cost does not grow with
   the corpus;
3. ``rank``: ``chunk.learned_fusion``, which adds the BM25 top 30, computes first-hop
   features for the union (about 70 passages), orders them with a LightGBM lambdarank
   model, then scores each against the first stage's best three passages (their titles,
   shared rare names and what the question asks beyond them) with a second model.

On a corpus of long documents (fewer than half of the chunks are whole documents) the
passage ranker, trained on passage corpora, is not used: ``fusion`` is then ``entity-walk``.
The preset ``fusion-long`` orders such corpora by a model trained on long documents (the
first-hop features and where each chunk sits in its document: its position, its heading
path against the question, its neighbours', its section's and its document's scores,
:func:`paretorag.retrieval.operators.fusion.long_features`), fused with dense retrieval's
order by reciprocal rank; ``fusion-long-model`` uses the model's order alone.

Index cost: the chunk vectors, BM25 and one spaCy pass (``entity_graph``); no LLM call. On a
corpus of long documents the long chunks' window vectors are kept too (``chunk_windows``,
pooled into the chunk vectors from the same pass).
Query cost: one query embedding, one dense search, one BM25 scoring, one PPR walk and two
LightGBM predictions over about 70 rows.
"""

from __future__ import annotations

from ..operators.dense import ChunkVDB
from ..operators.fusion import DENSE_DEPTH, ChunkLearnedFusion
from ..operators.walk import ChunkEntityWalk
from ..query import State
from .base import register, register_preset
from .pipeline import Pipeline, Steps


@register
class Fusion(Pipeline):
    """Learned fusion of dense, BM25 and entity-walk rankings, with a second hop: ``dense``, ``walk``, ``rank``.

    ``get_method("fusion", rank__model="DIR")`` uses a ranker written by
    ``paretorag train-ranker --out DIR``.
    """

    name = "fusion"
    paper = "LambdaMART (Burges 2010) over dense, BM25 and entity-walk (EA-GraphRAG §3.4.2) candidates"
    mode = "graph"
    recommended = True
    # the window vectors of long chunks, for the long-document ranker (graphs/chunk_windows.py)
    optional_structures = ("chunk_windows",)

    def default_steps(self) -> Steps:
        return [
            ("dense", ChunkVDB(k=DENSE_DEPTH)),
            ("walk", ChunkEntityWalk(k=30, solver="local")),
            ("rank", ChunkLearnedFusion(k=5)),
        ]

    def _branch(self, state: State) -> str:
        n = state.info.get("fusion_candidates", 0)
        if not n:
            return "the entity walk's order (a corpus of long documents)"
        if state.info.get("fusion_ranker") == "long documents":
            return f"the long-document ranker over {n} candidates"
        return f"learned fusion of {n} candidates"


register_preset(
    "fusion-long",
    Fusion,
    "fusion, ordering long documents by the long-document model fused with dense retrieval (RRF)",
    rank__long_order="dense",
)
register_preset(
    "fusion-long-model",
    Fusion,
    "fusion, ordering long documents by the long-document model alone",
    rank__long_order="model",
)

__all__ = ["Fusion"]
