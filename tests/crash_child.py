"""Child process for the crash test: index a corpus, announcing progress on stdout.

Each progress step prints ``<description> <count>`` and then pauses briefly, so the
parent can SIGKILL at a known point.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder


class AnnouncingProgress:
    @contextmanager
    def task(self, description, total):
        print(f"start {description}", flush=True)
        count = [0]

        class T:
            def advance(self, n=1):
                count[0] += n
                print(f"{description} {count[0]}", flush=True)
                time.sleep(0.05)

        yield T()
        print(f"end {description}", flush=True)
        time.sleep(0.3)


def main() -> None:
    methods = ["vanilla"]
    args = sys.argv[1:]
    if args and args[0].startswith("--methods="):
        methods = args.pop(0).removeprefix("--methods=").split(",")
    index_dir, *paths = args
    rag = RAG.open(
        index_dir, embedder=HashEmbedder(32), methods=methods, chunk_size=60, chunk_overlap=10, workers=1
    )
    rag.index([Path(p) for p in paths], progress=AnnouncingProgress())
    print("done", flush=True)


if __name__ == "__main__":
    main()
