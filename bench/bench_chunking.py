"""Chunking time and peak memory on large generated documents, with and without punctuation.

Each case runs in a fresh interpreter so that its peak RSS is its own. Prints one JSON
object. Usage::

    .venv/bin/python bench/bench_chunking.py [--mb 50] [--tokenizer minilm|regex] [--size 1200]

``minilm`` is the default embedder's word-piece tokenizer (what ``paretorag index``
counts with), loaded without the model itself.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time

CASES = ("punctuated", "unpunctuated")


def _text(kind: str, n_bytes: int) -> str:
    rng = random.Random(0)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
        for _ in range(20_000)
    ]
    parts: list[str] = []
    size = 0
    while size < n_bytes:
        words = rng.choices(vocab, k=rng.randint(8, 30))
        sentence = " ".join(words)
        if kind == "punctuated":
            sentence = sentence.capitalize() + "."
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)


def _tokenizer(kind: str):  # type: ignore[no-untyped-def]
    if kind == "regex":
        from paretorag.providers.embedders import RegexTokenizer

        return RegexTokenizer()
    from transformers import AutoTokenizer

    from paretorag.providers.embedders import DEFAULT_MODEL, WordPieceTokenizer, default_model_path

    return WordPieceTokenizer(AutoTokenizer.from_pretrained(str(default_model_path())), DEFAULT_MODEL)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_case(case: str, mb: float, tokenizer: str, size: int) -> dict[str, object]:
    from paretorag.ingest.chunking import chunk_document
    from paretorag.ingest.files import make_document

    tok = _tokenizer(tokenizer)
    text = _text(case, int(mb * 1_000_000))
    doc = make_document(case, text, "bench")
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    chunks = chunk_document(doc, tok, size=size, overlap=100)
    seconds = time.perf_counter() - t0
    return {
        "case": case,
        "tokenizer": tokenizer,
        "mb": round(len(text.encode()) / 1e6, 1),
        "chunks": len(chunks),
        "max_chunk_tokens": max(c.n_tokens for c in chunks),
        "tokens": sum(c.n_tokens for c in chunks),
        "seconds": round(seconds, 2),
        "mb_per_s": round(len(text) / 1e6 / seconds, 2),
        "peak_rss_mb_before_chunking": round(rss_before),
        "peak_rss_mb": round(_rss_mb()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--tokenizer", choices=("minilm", "regex"), default="minilm")
    ap.add_argument("--size", type=int, default=1200)
    ap.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.mb, args.tokenizer, args.size)))
        return
    results = []
    for case in CASES:
        cmd = [sys.executable, __file__, "--case", case, "--mb", str(args.mb)]
        cmd += ["--tokenizer", args.tokenizer, "--size", str(args.size)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(json.dumps({"chunking": results}, indent=2))


if __name__ == "__main__":
    main()
