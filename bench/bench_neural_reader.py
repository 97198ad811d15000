"""Latency of the neural span reader (``SpanModel.read``) on 5 passages of about 150 tokens.

The passages are the first passages of ``musique_dev200``'s corpus cut to 150 word-pieces
(title, newline, text, as the index stores them); the questions are its first questions,
one per run, so the tokenizer and the decoding are timed too. Each variant (fp32, int8) runs
with 1 and 2 ``intra_op_num_threads``: one warm-up pass, then ``--runs`` timed ones. Prints
one JSON object with p50/p95 in milliseconds and the ONNX file sizes::

    python bench/bench_neural_reader.py --model /tmp/neural-reader-run1 --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from paretorag.answering.reader.neural import TOKENIZER_FILE, VARIANTS, SpanModel, load_tokenizer
from paretorag.eval.loaders import load_dataset
from paretorag.training.neural_data import passage_text


def passages(data: str, tokenizer_path: Path, n: int = 5, tokens: int = 150) -> list[str]:
    """``n`` corpus passages cut to ``tokens`` word-pieces at a token boundary."""
    tok = load_tokenizer(tokenizer_path)
    out: list[str] = []
    for p in load_dataset(data, "musique_dev200").passages:
        text = passage_text(p.title, p.text)
        enc = tok.encode(text, add_special_tokens=False)
        if len(enc.ids) >= tokens:
            out.append(text[: enc.offsets[tokens - 1][1]])
        if len(out) == n:
            return out
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a folder written by train_neural_reader")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    folder = Path(args.model)
    texts = passages(args.data, folder / TOKENIZER_FILE)
    questions = [q.text for q in load_dataset(args.data, "musique_dev200").questions[: args.runs]]
    result: dict[str, object] = {
        "passages": len(texts),
        "sizes_mb": {v: round((folder / f).stat().st_size / 1e6, 1) for v, f in VARIANTS.items()},
    }
    for variant in VARIANTS:
        for threads in (1, 2):
            model = SpanModel(folder, variant=variant, threads=threads)
            model.read(questions[0], texts)
            ms = []
            for k in range(args.runs):
                t = time.perf_counter()
                model.read(questions[k % len(questions)], texts)
                ms.append(1000 * (time.perf_counter() - t))
            result[f"{variant}_threads{threads}"] = {
                "p50_ms": round(float(np.percentile(ms, 50)), 1),
                "p95_ms": round(float(np.percentile(ms, 95)), 1),
            }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
