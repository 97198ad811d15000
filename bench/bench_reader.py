"""Per-question time of the offline reader on 5 passages, after retrieval, on one core.

With ``--subset``: retrieves each question's top 5 passages once (``--method``, default
``entity-walk``) from an eval index, then times ``Reader.read`` alone: ``cold`` with the
reader's sentence-parse cache emptied before every question (a new question over new
passages), ``warm`` on a later pass with every passage's parse cached (the same passages
again); once without the span model (``span_off``) and once with it (``span_compare``, the
default). Prints one JSON object::

    python bench/bench_reader.py --index eval-out/.index-cache/musique_dev200-... --subset musique_dev200

With ``--questions FILE`` (a JSON list of questions) instead, on any index (long
documents: 1,200-token chunks): the answer step after retrieval (``RAG.answer``: packing
and the reader) per question in a warm process, the parse cache emptied before each, A/B
interleaved: ``stored`` takes the sentences and spans from the index's ``reader_spans``
structure, ``parsed`` splits and parses them at query time (the path of an index built
without it); the answers of both must be identical. Then the first query of a new process
(``cold_first``, each side in its own process) and the wall time of ``paretorag query
--json`` (``cli_wall_s``, median of ``--cli-runs``)::

    python bench/bench_reader.py --index IX --questions questions.json [--method fusion]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from paretorag import RAG
from paretorag.answering.reader import Reader, passages_of
from paretorag.answering.reader.core import title_lookup
from paretorag.eval.loaders import load_dataset
from paretorag.providers import sentence_spans as reader_spans


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "mean_ms": round(float(ms.mean()), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="an eval index directory")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--subset", help="an eval subset (the eval index's questions)")
    ap.add_argument("--questions", help="a JSON list of questions (any index; A/B of the stored spans)")
    ap.add_argument("--method", default=None)
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--cli-runs", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.questions:
        print(json.dumps(long_documents(args)))
        return
    if not args.subset:
        ap.error("give --subset or --questions")
    args.method = args.method or "entity-walk"
    ds = load_dataset(args.data, args.subset, limit=args.limit)
    rag = RAG.open(Path(args.index), create=False)
    contexts = []
    for q in ds.questions:
        _, items = rag.retrieve(q.prompt(), args.method, k=5)
        contexts.append((q.prompt(), passages_of(items[:5])))
    lookup = title_lookup(rag.view)
    out: dict[str, object] = {
        "subset": args.subset,
        "method": args.method,
        "questions": len(contexts),
        "passages": 5,
        "threads": os.environ.get("OMP_NUM_THREADS"),
    }
    # the reader without and with the span model (span_mode off / compare), one after the other
    for mode in ("off", "compare"):
        reader = Reader(rag.embedder, span_mode=mode)
        reader.read("Who is it?", contexts[0][1], lookup)  # load spaCy and the models outside the timing
        cold, warm = [], []
        kinds: dict[str, int] = {}
        for question, passages in contexts:
            reader_spans._CACHE.clear()
            t0 = time.perf_counter()
            result = reader.read(question, passages, lookup)
            cold.append(time.perf_counter() - t0)
            kinds[result.kind] = kinds.get(result.kind, 0) + 1
        for question, passages in contexts:  # fill the parse cache with every question's passages
            reader.read(question, passages, lookup)
        for question, passages in contexts:
            t0 = time.perf_counter()
            reader.read(question, passages, lookup)
            warm.append(time.perf_counter() - t0)
        out[f"span_{mode}"] = {"cold": _summary(cold), "warm": _summary(warm), "kinds": kinds}
    print(json.dumps(out))


_COLD = """
import json, sys, time
t0 = time.perf_counter()
from paretorag import RAG
rag = RAG.open(sys.argv[1], create=False)
rag.use_stored_spans = sys.argv[2] == "stored"
r, items = rag.retrieve(sys.argv[3], sys.argv[4] or None)
t1 = time.perf_counter()
a = rag.answer(sys.argv[3], r, items, reader="reader")
print(json.dumps({"after_retrieval_ms": (time.perf_counter() - t1) * 1000, "total_ms": (time.perf_counter() - t0) * 1000}))
"""


def long_documents(args: argparse.Namespace) -> dict[str, object]:
    questions = json.loads(Path(args.questions).read_text(encoding="utf-8"))[: args.limit]
    rag = RAG.open(Path(args.index), create=False)
    pre = [(q, *rag.retrieve(q, args.method)) for q in questions]
    rag.answer(*pre[0], reader="reader")  # spaCy, the ranker and the stored spans loaded outside the timing
    times: dict[str, list[float]] = {"stored": [], "parsed": []}
    differ = []
    for i, (q, r, items) in enumerate(pre):
        texts = {}
        order = ("stored", "parsed") if i % 2 == 0 else ("parsed", "stored")
        for side in order:
            rag.use_stored_spans = side == "stored"
            reader_spans._CACHE.clear()  # new passages: nothing parsed before
            t0 = time.perf_counter()
            a = rag.answer(q, r, items, reader="reader")
            times[side].append(time.perf_counter() - t0)
            texts[side] = (a.text, a.confidence)
        if texts["stored"] != texts["parsed"]:
            differ.append(q)
    rag.close()
    cold: dict[str, object] = {}
    for side in ("stored", "parsed"):
        runs = []
        for _ in range(max(1, args.cli_runs)):
            out = subprocess.run(
                [sys.executable, "-c", _COLD, args.index, side, questions[0], args.method or ""],
                check=True,
                capture_output=True,
                text=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        cold[side] = {k: round(float(np.median([r[k] for r in runs])), 1) for k in runs[0]}
    walls, gen = [], []
    for _ in range(max(1, args.cli_runs)):
        cmd = [str(Path(sys.executable).with_name("paretorag")), "query", questions[0], "--index", args.index]
        t0 = time.perf_counter()
        out = subprocess.run([*cmd, "--json"], check=True, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        gen.append(json.loads(out.stdout)["timings_ms"]["generation"])
    return {
        "index": args.index,
        "questions": len(pre),
        "passages": [len(items) for _, _, items in pre][:1],
        "after_retrieval": {side: _summary(t) for side, t in times.items()},
        "answers_identical": not differ,
        "differ": differ,
        "cold_first": cold,
        "cli_wall_s": round(float(np.median(walls)), 2),
        "cli_generation_ms": round(float(np.median(gen)), 1),
        "threads": os.environ.get("OMP_NUM_THREADS"),
    }


if __name__ == "__main__":
    main()
