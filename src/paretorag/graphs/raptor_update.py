"""Updating a RAPTOR tree when the chunk set changes, instead of building it again.

RAPTOR (§3) builds its tree once over a fixed corpus and says nothing of updates; this
is our extension, used by :class:`paretorag.graphs.raptor.RaptorTree` when the index
holds a tree built with the same settings for an earlier chunk set:

1. deleted chunks leave every cluster of layer 1; a cluster left empty is dropped;
2. each new chunk joins the layer-1 cluster whose centroid (the mean of its members'
   vectors, L2-normalized) is nearest by cosine: RAPTOR's clusters are Gaussian
   components over the same vectors, so the nearest centroid stands for the most
   probable component without refitting the mixtures;
3. a cluster whose members changed is summarized again (the same prompt as a fresh
   build) and embedded; if its texts now exceed ``max_cluster_tokens`` it is clustered
   again on its own first, as RAPTOR does for an oversized cluster;
4. one layer up, a cluster whose children were dropped, split or re-summarized is
   touched in turn, and so on to the top: only the branches above the change are
   summarized again; the others keep their summaries and vectors.

Drift: the clusters of an updated tree are the clusters of the last full build plus
the chunks placed since, not those a new clustering would find. When the chunks added
and removed since the last full build exceed :data:`DRIFT_LIMIT` of the leaves it had,
the tree is built afresh (and a tree that had no layers, or loses a whole layer, too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from ..storage.structures import StructureData
from .graph import graph_from_structure

if TYPE_CHECKING:
    from ..providers.base import LLM
    from .base import BuildContext

DRIFT_LIMIT = 0.2
"""Leaves added plus removed since the last full build, as a fraction of the leaves it had,
past which the tree is built afresh. RAPTOR's BIC search sizes the mixtures to the data: a
fifth more (or fewer) leaves moves the chosen number of clusters by about as much, and
clusters that keep absorbing chunks drift from what a new clustering would find. Below it,
an updated tree's recall is within the spread of fresh builds, but not its passages: on
2Wiki dev (1,028 passages, 15% inserted in three batches) recall@5 66.4 against 68.9 fresh
(the last 15% in file order) and 68.0 against 67.0 (a random 15%), the same top 5 for 43%
and 37% of questions; two fresh builds in different orders differ by 1.9 points of recall@5
(docs/performance.md)."""


class TreeBuilder(Protocol):
    """What growing a tree needs of its builder (:class:`paretorag.graphs.raptor.RaptorTree`)."""

    runtime_params: ClassVar[tuple[str, ...]]
    max_cluster_tokens: int

    def identity(self) -> dict[str, Any]: ...

    def summarize(
        self, ctx: BuildContext, llm: LLM, groups: list[list[str]]
    ) -> tuple[list[str], np.ndarray]: ...

    def _clusters(self, vectors: np.ndarray, tokens: np.ndarray) -> list[np.ndarray]: ...


@dataclass
class Cluster:
    """A summary node: its children (positions in the layer below; layer 0: chunk rows),
    its summary and the summary's vector (None until summarized)."""

    children: list[int]
    text: str = ""
    vector: np.ndarray | None = None


def tree_layers(prev: StructureData) -> tuple[list[str], list[list[Cluster]]]:
    """The chunk ids (leaves, in row order) and the summary layers of a stored tree."""
    g = graph_from_structure(prev)
    layer = np.asarray(prev.arrays["node_layer"], dtype=np.int64)
    first = {int(k): int(np.argmax(layer == k)) for k in np.unique(layer)}
    adj = g.adjacency.tocsr()
    vectors = g.node_vectors
    layers: list[list[Cluster]] = []
    for k in range(1, int(layer.max(initial=0)) + 1):
        out = []
        for row in np.flatnonzero(layer == k):
            nbrs = adj.indices[adj.indptr[row] : adj.indptr[row + 1]]
            kids = sorted(int(c) - first[k - 1] for c in nbrs if layer[c] == k - 1)
            vec = vectors[row] if vectors is not None else None
            out.append(Cluster(kids, g.descriptions[row], vec))
        layers.append(out)
    return g.names[: first.get(1, len(g.names))], layers


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def _same_settings(builder: TreeBuilder, prev: StructureData) -> bool:
    settings = prev.meta.get("settings")
    if not isinstance(settings, dict) or prev.meta.get("reduction") != "pca":
        return False
    kept = {k: v for k, v in settings.items() if k not in builder.runtime_params}
    return kept == builder.identity() and "node_layer" in prev.arrays


def grow(
    builder: TreeBuilder,
    ctx: BuildContext,
    llm: LLM,
    prev: StructureData,
    ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
) -> tuple[list[list[Cluster]], int, dict[str, Any], dict[str, int]] | None:
    """The layers of ``prev`` updated to the chunks ``ids`` (texts, vectors), the LLM calls
    made, what the manifest shows of the update, and the drift since the last full build;
    None when the tree must be built afresh (see the module docstring)."""
    if not _same_settings(builder, prev):
        return None
    old_ids, old_layers = tree_layers(prev)
    drift = prev.meta.get("drift") or {"base_leaves": len(old_ids), "changed_leaves": 0}
    row = {c: i for i, c in enumerate(ids)}
    known = set(old_ids)
    added = [i for i, c in enumerate(ids) if c not in known]
    removed = sum(1 for c in old_ids if c not in row)
    changed = int(drift["changed_leaves"]) + len(added) + removed
    if not old_layers or changed > DRIFT_LIMIT * int(drift["base_leaves"]):
        return None
    # old position in the layer below -> its new positions (none: dropped; several: split)
    below: list[list[int]] = [[row[c]] if c in row else [] for c in old_ids]
    dirty: set[int] = set()  # new positions below whose text changed
    below_texts, below_vecs = texts, vectors
    layers: list[list[Cluster]] = []
    calls = 0
    for depth, clusters in enumerate(old_layers, 1):
        staged: list[tuple[list[int], bool, Cluster]] = []
        for cl in clusters:
            kids = sorted({p for c in cl.children for p in below[c]})
            touched = any(len(below[c]) != 1 for c in cl.children) or any(p in dirty for p in kids)
            staged.append((kids, touched, cl))
        if depth == 1 and added:
            live = [i for i, (kids, _, _) in enumerate(staged) if kids]
            if not live:
                return None
            centroids = _unit(np.stack([below_vecs[staged[i][0]].mean(axis=0) for i in live]))
            for a, best in zip(added, np.argmax(_unit(below_vecs[added]) @ centroids.T, axis=1), strict=True):
                kids, _, cl = staged[live[int(best)]]
                staged[live[int(best)]] = (sorted([*kids, a]), True, cl)
        out: list[Cluster] = []
        mapping: list[list[int]] = []
        fresh: list[int] = []
        for kids, touched, cl in staged:
            if not kids:
                mapping.append([])
            elif not touched:
                mapping.append([len(out)])
                out.append(Cluster(kids, cl.text, cl.vector))
            else:
                mapping.append([])
                for part in _split(builder, ctx, kids, below_texts, below_vecs):
                    mapping[-1].append(len(out))
                    fresh.append(len(out))
                    out.append(Cluster(part))
        if not out:
            return None
        summaries, new_vecs = builder.summarize(
            ctx, llm, [[below_texts[k] for k in out[i].children] for i in fresh]
        )
        calls += len(fresh)
        for i, text, vec in zip(fresh, summaries, new_vecs, strict=True):
            out[i].text, out[i].vector = text, vec
        layers.append(out)
        below, dirty = mapping, set(fresh)
        below_texts = [cl.text for cl in out]
        below_vecs = np.stack([np.asarray(cl.vector, np.float32) for cl in out])
    info = {"mode": "incremental", "added_leaves": len(added), "removed_leaves": removed}
    return layers, calls, info, {"base_leaves": int(drift["base_leaves"]), "changed_leaves": changed}


def _split(
    builder: TreeBuilder, ctx: BuildContext, kids: list[int], texts: list[str], vectors: np.ndarray
) -> list[list[int]]:
    """A changed cluster as it is, or clustered again when its texts exceed the limit."""
    tokens = np.asarray(ctx.tokenizer.count([texts[k] for k in kids]), dtype=np.int64)
    if len(kids) < 2 or int(tokens.sum()) <= builder.max_cluster_tokens:
        return [kids]
    parts = builder._clusters(vectors[kids], tokens)
    return [sorted(kids[int(m)] for m in p) for p in parts if len(p)]
