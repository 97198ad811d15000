"""Child process for the Ray resume test: index on a local Ray cluster, announcing progress.

``python ray_child.py INDEX_DIR PATH...``; prints ``<description> <count>`` per progress step
(see crash_child.py) and ``done <chunk texts this run embedded>`` at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

from crash_child import AnnouncingProgress
from paretorag import RAG
from paretorag.indexing.distributed import RayCluster
from paretorag.indexing.embed_cache import CachedEmbedder


def main() -> None:
    index_dir, *paths = sys.argv[1:]
    computed: list[int] = []
    embed = CachedEmbedder.embed

    def counting(self, texts, *, description=""):  # the chunk texts this run embeds
        before = self.computed
        try:
            return embed(self, texts, description=description)
        finally:
            if description == "embedding chunks":
                computed.append(self.computed - before)

    CachedEmbedder.embed = counting
    rag = RAG.open(index_dir, embedder="hash:32", methods=["vanilla", "e2graphrag"], workers=1)
    with RayCluster(num_cpus=2) as cluster:
        rag.index([Path(p) for p in paths], progress=AnnouncingProgress(), cluster=cluster)
    print(f"done {sum(computed)}", flush=True)


if __name__ == "__main__":
    main()
