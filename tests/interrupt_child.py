"""Child process for the Ctrl-C tests: ``paretorag index`` with slow, announcing models.

``python interrupt_child.py embed|structure INDEX CORPUS``: the hash embedder (embed) or
the extractive LLM (structure) sleeps on every call and prints ``embed`` / ``llm`` to
stdout first, so the parent can send SIGINT while that stage runs.
"""

from __future__ import annotations

import signal
import sys
import time

from paretorag import cli
from paretorag.providers.embedders import HashEmbedder
from paretorag.providers.llm import ExtractiveLLM


def main() -> None:
    # a parent started in the background by a non-interactive shell ignores SIGINT, and its
    # children inherit that; the test is about what `paretorag index` does with Ctrl-C
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stage, index_dir, corpus = sys.argv[1:]
    if stage == "embed":
        embed = HashEmbedder.embed

        def slow_embed(self, texts):
            print("embed", flush=True)
            time.sleep(0.5)
            return embed(self, texts)

        HashEmbedder.embed = slow_embed  # type: ignore[method-assign]
    else:
        complete = ExtractiveLLM.complete

        def slow_complete(self, request):
            print("llm", flush=True)
            time.sleep(2.0)
            return complete(self, request)

        ExtractiveLLM.complete = slow_complete  # type: ignore[method-assign]
    methods = "vanilla" if stage == "embed" else "e2graphrag"
    sys.argv = [
        "paretorag", "index", corpus, "--index", index_dir, "--embedder", "hash:32",
        "--chunk-size", "60", "--chunk-overlap", "10", "--methods", methods,
    ]  # fmt: skip
    cli.main()


if __name__ == "__main__":
    main()
