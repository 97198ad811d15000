"""Graph and ranking kernels: pure numpy/scipy, no I/O, shared by builders and operators.

- :mod:`.pagerank`: PageRank and personalized PageRank (tested against networkx);
- :mod:`.bfs`: bounded BFS, k-hop neighbourhoods, pairwise hop distances;
- :mod:`.rank`: top-k, exact vector search over any row set, score aggregation, rank fusion;
- :mod:`.steiner`: approximate Steiner trees, Kou and Mehlhorn (tested against networkx);
- :mod:`.paths`: bounded shortest paths, k-hop paths between entities, path merging;
- :mod:`.tfidf`: scikit-learn-compatible TF-IDF for the passage graph (tested against it).
- :mod:`.knn`: exact k-nearest-neighbour pairs by blocks (synonym and TF-IDF edges).
"""

from __future__ import annotations

from .bfs import bfs_levels, hop_distances, k_hop, neighbors
from .knn import knn_pairs
from .pagerank import pagerank, transition
from .paths import cover_paths, k_hop_paths, merge_paths, shortest_path
from .rank import aggregate, column_sums, dense_scores, normalize_rows, rrf, top_k, vector_top_k
from .steiner import steiner_tree, tree_weight
from .tfidf import fit_tfidf, tokenize, transform

__all__ = [
    "aggregate",
    "bfs_levels",
    "column_sums",
    "cover_paths",
    "dense_scores",
    "fit_tfidf",
    "hop_distances",
    "k_hop",
    "k_hop_paths",
    "knn_pairs",
    "merge_paths",
    "neighbors",
    "normalize_rows",
    "pagerank",
    "rrf",
    "shortest_path",
    "steiner_tree",
    "tokenize",
    "top_k",
    "transform",
    "transition",
    "tree_weight",
    "vector_top_k",
]
