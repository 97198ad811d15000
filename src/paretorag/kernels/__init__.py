"""Graph and ranking kernels: pure numpy/scipy, no I/O, shared by builders and operators.

- :mod:`.pagerank`: PageRank and personalized PageRank (tested against networkx);
- :mod:`.bfs`: bounded BFS, k-hop neighbourhoods, pairwise hop distances;
- :mod:`.rank`: top-k, exact vector search over any row set, score aggregation.
"""

from __future__ import annotations

from .bfs import bfs_levels, hop_distances, k_hop, neighbors
from .pagerank import pagerank, transition
from .rank import aggregate, dense_scores, normalize_rows, top_k, vector_top_k

__all__ = [
    "aggregate",
    "bfs_levels",
    "dense_scores",
    "hop_distances",
    "k_hop",
    "neighbors",
    "normalize_rows",
    "pagerank",
    "top_k",
    "transition",
    "vector_top_k",
]
