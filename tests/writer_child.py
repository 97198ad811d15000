"""Child process for the concurrency tests: a writer of one index.

``hold INDEX SECONDS``: take the writer lock, print ``locked``, hold it, exit.
``insert-each INDEX FILE...``: insert the files one by one (one commit each), printing ``commit N``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder
from paretorag.storage.lock import WriterLock


def main() -> None:
    command, index_dir, *rest = sys.argv[1:]
    if command == "hold":
        with WriterLock(Path(index_dir)):
            print("locked", flush=True)
            time.sleep(float(rest[0]))
        return
    rag = RAG.open(index_dir, embedder=HashEmbedder(32), chunk_size=60, chunk_overlap=10)
    for n, path in enumerate(rest, start=1):
        rag.insert([Path(path)])
        print(f"commit {n}", flush=True)
    rag.close()


if __name__ == "__main__":
    main()
