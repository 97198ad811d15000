"""Load benchmark of `paretorag serve`: concurrent clients sending `vanilla` queries
(context only) on 127.0.0.1, bounded in count and time. Prints one JSON object.

    python bench/bench_serve.py                       # 32 clients x 1,000 queries on the 2Wiki corpus
    python bench/bench_serve.py --index DIR --clients 32 --queries 50 --max-seconds 300

Without --index, the 2WikiMultihopQA corpus in ../shared/data (6,119 passages) is indexed
once with MiniLM into .bench-cache/ (about 10 minutes on 2 cores). The server runs as
`paretorag serve` in its own process; the clients run in this one (asyncio + httpx), on the
same machine, so they compete with the server for the CPU. Reports throughput, latency
percentiles, errors and the server's resident memory (current and peak).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "2wikimultihopqa"


def _rss_mb(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return {"rss_mb": round(out.get("VmRSS", 0.0), 1), "peak_rss_mb": round(out.get("VmHWM", 0.0), 1)}


def _index(args: argparse.Namespace) -> Path:
    if args.index:
        return Path(args.index)
    ix = ROOT / ".bench-cache" / "2wiki-serve"
    if not (ix / "manifest.json").exists():
        print(f"indexing {args.corpus} into {ix} (once)", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "paretorag.cli", "index", str(args.corpus), "--index", str(ix)], check=True
        )
    return ix


def _questions(n: int) -> list[str]:
    qs = [q["question"] for q in json.loads((DATA / "2wikimultihopqa_questions.json").read_text())]
    return [qs[i % len(qs)] for i in range(n)]


async def _client(
    http: httpx.AsyncClient, questions: list[str], deadline: float, lat: list[float], errors: list[str]
) -> None:
    for q in questions:
        if time.monotonic() > deadline:
            return
        t0 = time.perf_counter()
        try:
            r = await http.post("/query", json={"question": q, "method": "vanilla", "context_only": True})
            ok = r.status_code == 200 and bool(r.json()["contexts"])
            if not ok:
                errors.append(f"{r.status_code}: {r.text[:200]}")
        except httpx.HTTPError as exc:
            errors.append(repr(exc))
            continue
        lat.append(time.perf_counter() - t0)


async def _load(
    base: str, clients: int, per_client: int, max_s: float
) -> tuple[list[float], list[str], float]:
    qs = _questions(clients * per_client)
    lat: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
        t0 = time.perf_counter()
        deadline = time.monotonic() + max_s
        await asyncio.gather(*(_client(http, qs[c::clients], deadline, lat, errors) for c in range(clients)))
        return lat, errors, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", help="an existing index (default: build the 2Wiki corpus once)")
    ap.add_argument("--corpus", type=Path, default=DATA / "2wikimultihopqa_corpus.json")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--queries", type=int, default=1000, help="queries per client")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=900.0, help="stop sending after this long")
    args = ap.parse_args()
    ix = _index(args)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PARETORAG_API_KEYS": ""}
    server = subprocess.Popen(
        [
            sys.executable, "-m", "paretorag.cli", "serve", "--index", str(ix),
            "--host", "127.0.0.1", "--port", str(port), "--readers", str(args.readers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.perf_counter()
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.perf_counter() - t0 > 120:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        # warm-up: the first query loads the embedder and a reader
        httpx.post(base + "/query", json={"question": "warm up", "context_only": True}, timeout=300)
        idle = _rss_mb(server.pid)
        lat, errors, wall = asyncio.run(_load(base, args.clients, args.queries, args.max_seconds))
        mem = _rss_mb(server.pid)
        metrics = httpx.get(base + "/metrics", timeout=10).text
    finally:
        server.terminate()
        server.wait(30)
    ms = np.array(lat) * 1000.0
    planned = args.clients * args.queries
    print(
        json.dumps(
            {
                "index": str(ix),
                "clients": args.clients,
                "queries_planned": planned,
                "queries_done": len(lat),
                "errors": len(errors),
                "first_errors": errors[:5],
                "wall_s": round(wall, 2),
                "throughput_qps": round(len(lat) / wall, 2) if wall else 0.0,
                "latency_ms": {
                    p: round(float(np.percentile(ms, q)), 2) if len(ms) else None
                    for p, q in (("p50", 50), ("p95", 95), ("p99", 99))
                },
                "server_rss_mb_idle": idle["rss_mb"],
                "server_rss_mb_after": mem["rss_mb"],
                "server_peak_rss_mb": mem["peak_rss_mb"],
                "readers": args.readers,
                "cpu_count": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "extrapolated_32x1000_s": round(32_000 / (len(lat) / wall), 1) if lat else None,
                "metrics_query_count": next(
                    (
                        line.split()[-1]
                        for line in metrics.splitlines()
                        if line.startswith("paretorag_query_seconds_count")
                    ),
                    None,
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
