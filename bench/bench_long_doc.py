"""One 1 MB document: chunking time, and building ``fusion``'s structures, time and peak memory.

The document is GraphRAG-Bench medical's corpus (one text of 1,052,159 characters, in
``../shared/data``). Each case runs in a fresh interpreter, so that its peak RSS is its own:

- ``chunk-sections`` / ``chunk-sentences``: ``chunk_document`` with the default tokenizer
  (MiniLM's word pieces), 1,200 tokens; the chunks, their sizes and the seconds;
- ``index``: ``paretorag index`` of the text with ``--methods fusion`` into a fresh index
  (embedding, BM25, the spaCy entity graph and the reader's spans), the manifest's stage
  timings and the wall time.

Prints one JSON object. Usage::

    .venv/bin/python bench/bench_long_doc.py [--data ../shared/data] [--cases chunk-sections,index]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = ("chunk-sections", "chunk-sentences", "index")


def _text(data: Path) -> str:
    rows = json.loads((data / "graphrag_bench_medical" / "medical.json").read_text(encoding="utf-8"))
    return str(rows[0]["context"])


def _child(case: str, data: Path) -> dict[str, object]:
    text = _text(data)
    t0 = time.perf_counter()
    if case.startswith("chunk-"):
        from paretorag.ingest.chunking import chunk_document
        from paretorag.ingest.files import make_document
        from paretorag.providers.embedder_spec import make_embedder

        tokenizer = make_embedder("minilm").tokenizer
        t0 = time.perf_counter()
        chunks = chunk_document(make_document("Medical", text, "medical.json"), tokenizer, by=case[6:])
        out: dict[str, object] = {
            "chunks": len(chunks),
            "mean_tokens": round(sum(c.n_tokens for c in chunks) / len(chunks), 1),
        }
    else:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "medical.txt"
            src.write_text(text, encoding="utf-8")
            index = Path(tmp) / "ix"
            cmd = [sys.executable, "-m", "paretorag.cli", "index", str(src), "--index", str(index)]
            subprocess.run(
                [*cmd, "--methods", "fusion"],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
            out = {"chunks": manifest["counts"]["chunks"], "timings": manifest["timings"]}
    out["seconds"] = round(time.perf_counter() - t0, 2)
    # the index runs in a child of this process: count the larger of both
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out["peak_rss_mb"] = round(max(own, kids) / 1024, 1)
    out["characters"] = len(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.data)))
        return
    results: dict[str, object] = {}
    for case in args.cases.split(","):
        if case not in CASES:
            parser.error(f"unknown case {case!r}; choose from {', '.join(CASES)}")
        run = subprocess.run(
            [sys.executable, __file__, "--data", str(args.data), "--child", case],
            check=True,
            capture_output=True,
            text=True,
        )
        results[case] = json.loads(run.stdout.strip().splitlines()[-1])
    print(json.dumps({"bench": "long_doc", "results": results}, indent=1))


if __name__ == "__main__":
    main()
