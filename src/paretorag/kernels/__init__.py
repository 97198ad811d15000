"""Graph and ranking kernels: pure numpy/scipy, no I/O, shared by builders and operators.

- :mod:`.pagerank`: PageRank and personalized PageRank (tested against networkx);
- :mod:`.bfs`: bounded BFS, k-hop neighbourhoods, pairwise hop distances;
- :mod:`.rank`: top-k, exact vector search over any row set, score aggregation;
- :mod:`.knn`: exact k-nearest-neighbour pairs by blocks (synonym and TF-IDF edges).
"""

from __future__ import annotations

from .bfs import bfs_levels, hop_distances, k_hop, neighbors
from .knn import knn_pairs
from .pagerank import pagerank, transition
from .rank import aggregate, dense_scores, top_k, vector_top_k

__all__ = [
    "aggregate",
    "bfs_levels",
    "dense_scores",
    "hop_distances",
    "k_hop",
    "knn_pairs",
    "neighbors",
    "pagerank",
    "top_k",
    "transition",
    "vector_top_k",
]
