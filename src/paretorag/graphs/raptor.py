"""RAPTOR's recursive summary tree (RAPTOR §3; unified framework §4 "Tree", §5 node index).

Layer 0 is the chunks. Each layer is clustered as RAPTOR's ``perform_clustering`` does:

1. the node vectors are reduced to ``reduction_dim`` dimensions, and clustered by a
   Gaussian mixture whose number of components minimizes the BIC (1 .. ``max_clusters``);
2. each of these global clusters is reduced and clustered again the same way (local
   clusters), unless it has at most ``reduction_dim + 1`` nodes;
3. assignment is soft: a node joins every cluster whose probability exceeds
   ``threshold`` (so a node may have several parents);
4. a cluster whose texts exceed ``max_cluster_tokens`` is clustered again on its own
   (kept as it is when it is the whole set clustered, where RAPTOR would loop).

Each cluster is summarized by one LLM call, with the summary prompt shared with the
E2GraphRAG tree (:func:`paretorag.graphs.tree.summary_request`), and the summaries are
embedded with the index's embedder. A new layer is built while the current layer has
more than ``stop_size`` nodes (RAPTOR: ``reduction_dimension + 1``), at most
``max_layers`` layers.

RAPTOR reduces with UMAP (``n_neighbors = sqrt(n - 1)`` global, 10 local, cosine).
UMAP is not a dependency here: the reduction is scikit-learn's PCA on the L2-normalized
vectors (deterministic), a documented departure. The Gaussian mixtures use RAPTOR's seed
(224), so a build is deterministic and the prompts repeat exactly after a crash (the
LLM answers come back from the index's cache).

Output: a :class:`~paretorag.graphs.graph.Graph` whose nodes are the chunks then the summaries,
layer by layer (kinds ``"chunk"`` / ``"summary"``; names the chunk ids and
``"raptor:L<layer>:<i>"``; descriptions the texts; ``node_vectors`` the vectors of every
node, so a node vector index over it is RAPTOR's collapsed tree), a symmetric
parent-child adjacency, ``node_chunks`` = the chunks a node covers, and the extra array
``node_layer``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..params import check_fraction, check_positive_int
from ..providers.base import LLM
from ..providers.wrappers import complete_many
from ..storage.structures import StructureData
from .base import BuildContext, Builder, previous_structure, register_builder
from .graph import Graph, csr, graph_to_structure
from .raptor_update import Cluster, grow
from .tree import summary_request

SEED = 224  # RAPTOR's random_state for UMAP and the Gaussian mixtures


def _reduce(x: np.ndarray, dim: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    k = min(dim, x.shape[0] - 2, x.shape[1])
    if k < 1:
        return x
    return np.asarray(PCA(n_components=k, svd_solver="full").fit_transform(x), dtype=np.float64)


def _gmm(x: np.ndarray, max_clusters: int, threshold: float) -> list[np.ndarray]:
    """Soft Gaussian-mixture clusters with the BIC-chosen size (RAPTOR's ``GMM_cluster``)."""
    from sklearn.mixture import GaussianMixture

    n = x.shape[0]
    if n < 2:
        return [np.arange(n)]
    best, best_bic = 1, np.inf
    for k in range(1, min(max_clusters, n) + 1):
        bic = GaussianMixture(n_components=k, random_state=SEED).fit(x).bic(x)
        if bic < best_bic:
            best, best_bic = k, bic
    probs = GaussianMixture(n_components=best, random_state=SEED).fit(x).predict_proba(x)
    members = [np.flatnonzero(probs[:, c] > threshold) for c in range(best)]
    return [m for m in members if m.size]


def cluster_layer(vectors: np.ndarray, *, dim: int, max_clusters: int, threshold: float) -> list[np.ndarray]:
    """RAPTOR's global-then-local clustering of one layer: lists of row indices (may overlap)."""
    n = vectors.shape[0]
    if n <= 2:
        return [np.arange(n)]
    out: list[np.ndarray] = []
    for g in _gmm(_reduce(vectors, dim), max_clusters, threshold):
        if g.size <= dim + 1:
            out.append(g)
            continue
        out.extend(g[local] for local in _gmm(_reduce(vectors[g], dim), max_clusters, threshold))
    return out


@register_builder
class RaptorTree(Builder):
    """RAPTOR: recursive embedding clustering and summarization (RAPTOR §3; unified framework §4).

    Parameters
    ----------
    reduction_dim : int
        Dimensions the vectors are reduced to before clustering (RAPTOR: 10).
    threshold : float
        Soft-assignment probability for cluster membership (RAPTOR: 0.1).
    max_clusters : int
        Largest number of mixture components tried by the BIC search (RAPTOR: 50).
    max_cluster_tokens : int
        Clusters whose texts exceed this are re-clustered (RAPTOR: 3500).
    max_layers : int
        Summary layers at most (RAPTOR: 5).
    stop_size : int
        No new layer over a layer of at most this many nodes (RAPTOR: ``reduction_dim + 1`` = 11).
    max_tokens : int
        Generation limit per summary (RAPTOR's ``max_tokens=100``).
    max_concurrency : int, optional
        Summary calls in flight (default: the backend's limit).
    """

    name = "raptor_tree"
    uses_llm = True
    runtime_params: ClassVar[tuple[str, ...]] = ("max_concurrency",)

    def __init__(
        self,
        *,
        reduction_dim: int = 10,
        threshold: float = 0.1,
        max_clusters: int = 50,
        max_cluster_tokens: int = 3500,
        max_layers: int = 5,
        stop_size: int = 11,
        max_tokens: int = 100,
        max_concurrency: int | None = None,
    ) -> None:
        self.reduction_dim = reduction_dim
        self.threshold = threshold
        self.max_clusters = max_clusters
        self.max_cluster_tokens = max_cluster_tokens
        self.max_layers = max_layers
        self.stop_size = stop_size
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency

    def _validate(self) -> None:
        for name in (
            "reduction_dim",
            "max_clusters",
            "max_cluster_tokens",
            "max_layers",
            "stop_size",
            "max_tokens",
        ):
            check_positive_int(self, name, getattr(self, name))
        check_fraction(self, "threshold", self.threshold)
        if self.max_concurrency is not None:
            check_positive_int(self, "max_concurrency", self.max_concurrency)

    def _clusters(self, vectors: np.ndarray, tokens: np.ndarray) -> list[np.ndarray]:
        """Clusters of one layer, re-clustering those over ``max_cluster_tokens`` (RAPTOR)."""
        todo = [np.arange(vectors.shape[0])]
        out: list[np.ndarray] = []
        while todo:
            rows = todo.pop(0)
            parts = cluster_layer(
                vectors[rows],
                dim=self.reduction_dim,
                max_clusters=self.max_clusters,
                threshold=self.threshold,
            )
            for p in parts:
                members = rows[p]
                too_big = members.size > 1 and int(tokens[members].sum()) > self.max_cluster_tokens
                if too_big and members.size < rows.size:  # smaller each time: terminates
                    todo.append(members)
                else:
                    out.append(members)
        return out

    def summarize(self, ctx: BuildContext, llm: LLM, groups: list[list[str]]) -> tuple[list[str], np.ndarray]:
        """One summary per group of texts (the prompt shared with the E2GraphRAG tree), embedded."""
        reqs = [summary_request(texts, max_tokens=self.max_tokens) for texts in groups]
        summaries = [o.text.strip() for o in complete_many(llm, reqs, self.max_concurrency)]
        if not summaries:
            return summaries, np.zeros((0, int(ctx.embedder.dim)), np.float32)
        return summaries, np.asarray(ctx.embedder.embed(summaries), np.float32)

    def _fresh(
        self, ctx: BuildContext, llm: LLM, texts: list[str], vectors: np.ndarray
    ) -> list[list[Cluster]]:
        """The tree built from scratch, layer by layer (RAPTOR §3)."""
        layers: list[list[Cluster]] = []
        with ctx.progress.task("RAPTOR tree", total=None) as bar:
            while len(layers) < self.max_layers and len(texts) > self.stop_size:
                tokens = np.asarray(ctx.tokenizer.count(texts), dtype=np.int64)
                clusters = [[int(m) for m in c] for c in self._clusters(vectors, tokens)]
                summaries, new_vecs = self.summarize(ctx, llm, [[texts[i] for i in c] for c in clusters])
                bar.advance(len(clusters))
                layers.append(
                    [Cluster(c, t, v) for c, t, v in zip(clusters, summaries, new_vecs, strict=True)]
                )
                if len(clusters) >= len(texts):  # no reduction: clustering cannot shrink the layer
                    break
                texts, vectors = summaries, new_vecs
        return layers

    def build(self, ctx: BuildContext) -> StructureData:
        self._validate()
        chunks = ctx.chunks
        n = len(chunks)
        llm = ctx.llm("index.raptor_tree")
        texts: list[str] = list(chunks.texts)
        dim = int(ctx.embedder.dim)
        vectors = np.asarray(ctx.embedder.embed(texts), np.float32) if n else np.zeros((0, dim), np.float32)
        prev = previous_structure(ctx, self.name)
        update = grow(self, ctx, llm, prev, list(chunks.ids), texts, vectors) if prev is not None else None
        if update is None:
            layers = self._fresh(ctx, llm, texts, vectors)
            calls = sum(len(layer) for layer in layers)
            info: dict[str, Any] = {"mode": "full"}
            drift = {"base_leaves": n, "changed_leaves": 0}
        else:
            layers, calls, info, drift = update
        return self._assemble(list(chunks.ids), texts, vectors, layers, calls, info, drift)

    def _assemble(
        self,
        ids: list[str],
        texts: list[str],
        vectors: np.ndarray,
        layers: list[list[Cluster]],
        calls: int,
        info: dict[str, Any],
        drift: dict[str, int],
    ) -> StructureData:
        """The tree as a graph: chunks, then each layer's summaries (``raptor:L<layer>:<i>``)."""
        n = len(texts)
        names: list[str] = list(ids)
        texts = list(texts)
        layer_of: list[int] = [0] * n
        parent_rows: list[int] = []
        child_rows: list[int] = []
        covers: list[set[int]] = [{i} for i in range(n)]
        below = 0  # row of the first node of the layer below
        all_vectors = [vectors]
        for layer, clusters in enumerate(layers, 1):
            start = len(texts)
            for k, cl in enumerate(clusters):
                node = start + k
                members = [below + m for m in cl.children]
                texts.append(cl.text)
                names.append(f"raptor:L{layer}:{k}")
                layer_of.append(layer)
                covers.append(set().union(*(covers[m] for m in members)))
                parent_rows.extend([node] * len(members))
                child_rows.extend(members)
            if clusters:
                all_vectors.append(np.stack([np.asarray(cl.vector, np.float32) for cl in clusters]))
            below = start
        total = len(texts)
        p, c = np.asarray(parent_rows, np.int64), np.asarray(child_rows, np.int64)
        ones = np.ones(2 * p.size, np.float32)
        adj = csr(
            sp.coo_matrix((ones, (np.concatenate([p, c]), np.concatenate([c, p]))), shape=(total, total))
        )
        cov_rows = [i for i, s in enumerate(covers) for _ in s]
        cov_cols = [j for s in covers for j in sorted(s)]
        node_chunks = csr(
            sp.coo_matrix((np.ones(len(cov_rows), np.float32), (cov_rows, cov_cols)), shape=(total, n))
        )
        kinds = ["chunk"] * n + ["summary"] * (total - n)
        graph = Graph(names, kinds, adj, node_chunks, None, texts, np.vstack(all_vectors))
        summary: dict[str, Any] = {"summaries": total - n, "layers": len(layers), "llm_calls": calls, **info}
        meta = {
            "settings": self.get_params(deep=False),
            "reduction": "pca",
            "summary": summary,
            "drift": drift,
        }
        return graph_to_structure(graph, meta=meta, arrays={"node_layer": np.asarray(layer_of, np.int32)})


__all__ = ["RaptorTree", "cluster_layer"]
