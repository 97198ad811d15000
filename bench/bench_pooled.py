"""Cost of G2ConS Eq. 1 sentence vectors both ways, with the real MiniLM (JSON on stdout).

For the first ``--n`` passages of a corpus (embedded as ``title\\ntext``, as the chunk
vectors are), times in one process, interleaved over ``--rounds`` rounds so that both
see the same machine load:

- ``chunk_pass_s``: the chunk vectors alone (``embed``: what every index pays);
- ``chunk_pass_tokens_s``: the chunk vectors plus every sentence's vector pooled from the
  same pass (``token_embeddings`` + ``pool_spans``: ``sentence_vectors="pooled"``);
- ``sentence_pass_s``: every distinct sentence embedded on its own (``"separate"``: paid
  on top of the chunk pass).

    python bench/bench_pooled.py [--corpus 2wikimultihopqa/2wikimultihopqa_corpus.json] [--n 200]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from paretorag.providers.embedders import SentenceTransformerEmbedder, pool_spans
from paretorag.textutil import sentence_spans

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wikimultihopqa/2wikimultihopqa_corpus.json")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    records = json.loads((DATA / args.corpus).read_text(encoding="utf-8"))[: args.n]
    texts = [f"{r['title']}\n{r['text']}" for r in records]
    spans = []
    for r, t in zip(records, texts, strict=True):
        shift = len(t) - len(r["text"])
        spans.append([(0, shift - 1)] + [(a + shift, b + shift) for a, b in sentence_spans(r["text"])])
    sentences = sorted({t[a:b] for t, row in zip(texts, spans, strict=True) for a, b in row})
    emb = SentenceTransformerEmbedder()
    emb.load()
    emb.embed(texts[:8])  # warm up
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        emb.embed(texts)
        t1 = time.perf_counter()
        tes = emb.token_embeddings(texts)
        _ = [pool_spans(te, row) for te, row in zip(tes, spans, strict=True)]
        t2 = time.perf_counter()
        emb.embed(sentences)
        t3 = time.perf_counter()
        for key, s in (
            ("chunk_pass_s", t1 - t0),
            ("chunk_pass_tokens_s", t2 - t1),
            ("sentence_pass_s", t3 - t2),
        ):
            best[key] = min(best.get(key, s), s)
    out = {
        "corpus": args.corpus,
        "passages": len(texts),
        "sentences": len(sentences),
        **{k: round(v, 2) for k, v in best.items()},
        "separate_total_s": round(best["chunk_pass_s"] + best["sentence_pass_s"], 2),
        "pooled_total_s": round(best["chunk_pass_tokens_s"], 2),
    }
    out["pooled_vs_separate"] = round(out["pooled_total_s"] / out["separate_total_s"], 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
