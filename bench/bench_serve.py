"""Load benchmark of `paretorag serve`: concurrent clients sending `vanilla` queries
(context only) on 127.0.0.1, bounded in count and time. Prints one JSON object.

    python bench/bench_serve.py                       # 32 clients x 1,000 queries on the 2Wiki corpus
    python bench/bench_serve.py --index DIR --clients 32 --queries 50 --max-seconds 300
    python bench/bench_serve.py --index DIR --clients 32 --disconnecting 8 --max-seconds 60

With ``--disconnecting N``, N of the clients instead open streamed answers (`/query/stream`
and streamed OpenAI chats, in turn) from a slow model server started here (an
OpenAI-compatible stub sending a word every 0.1 s), read a few events and hang up, over and
over; the others' errors, the query slots busy at the end (`/metrics`) and the server's
memory sampled every 5 s show whether vanished clients cost the service anything.

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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


class _SlowModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat stream: one word every 0.1 s for a minute (HTTP/1.0: the body
    ends when the connection closes). Counts the streams cut by the client."""

    cut = 0
    started = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        type(self).started += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for i in range(600):
                delta = {"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}
                chunk = {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model"),
                }
                self.wfile.write(f"data: {json.dumps({**chunk, 'choices': [delta]})}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.1)
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            type(self).cut += 1

    def log_message(self, *args: object) -> None:
        pass


async def _vanishing(http: httpx.AsyncClient, deadline: float, opened: list[int], errors: list[str]) -> None:
    """Open a streamed answer, read two events, hang up; again, every 1-3 s, until ``deadline``."""
    n = 0
    while time.monotonic() < deadline:
        n += 1
        if n % 2:
            path, body = "/query/stream", {"question": "Who directed the film?", "method": "vanilla"}
        else:
            path = "/v1/chat/completions"
            body = {"model": "vanilla", "stream": True, "messages": [{"role": "user", "content": "Who?"}]}
        try:
            async with http.stream("POST", path, json=body) as r:
                if r.status_code != 200:
                    errors.append(f"{path} {r.status_code}")
                else:
                    seen = 0
                    async for _ in r.aiter_lines():
                        seen += 1
                        if seen >= 6:
                            break  # leaving the block closes the connection mid-stream
                    opened.append(seen)
        except httpx.HTTPError as exc:
            errors.append(repr(exc))
        await asyncio.sleep(1.0 + (n % 3))


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


async def _sample_rss(pid: int, deadline: float, out: list[float]) -> None:
    while time.monotonic() < deadline:
        out.append(_rss_mb(pid)["rss_mb"])
        await asyncio.sleep(5.0)


async def _load(
    base: str, clients: int, per_client: int, max_s: float, vanishing: int, pid: int
) -> dict[str, Any]:
    steady = clients - vanishing
    qs = _questions(steady * per_client)
    lat: list[float] = []
    errors: list[str] = []
    vanish_errors: list[str] = []
    opened: list[int] = []
    rss: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with (
        httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http,
        httpx.AsyncClient(base_url=base, timeout=120) as streams,
    ):
        t0 = time.perf_counter()
        deadline = time.monotonic() + max_s
        await asyncio.gather(
            *(_client(http, qs[c::steady], deadline, lat, errors) for c in range(steady)),
            *(_vanishing(streams, deadline, opened, vanish_errors) for _ in range(vanishing)),
            _sample_rss(pid, deadline, rss),
        )
        return {
            "lat": lat,
            "errors": errors,
            "wall": time.perf_counter() - t0,
            "streams_abandoned": len(opened),
            "stream_errors": vanish_errors,
            "rss": rss,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", help="an existing index (default: build the 2Wiki corpus once)")
    ap.add_argument("--corpus", type=Path, default=DATA / "2wikimultihopqa_corpus.json")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--queries", type=int, default=1000, help="queries per client")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=900.0, help="stop sending after this long")
    ap.add_argument(
        "--disconnecting",
        type=int,
        default=0,
        help="clients that open streamed answers and hang up mid-stream",
    )
    args = ap.parse_args()
    if not 0 <= args.disconnecting < args.clients:
        raise SystemExit("--disconnecting must be between 0 and --clients - 1")
    ix = _index(args)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PARETORAG_API_KEYS": ""}
    llm: list[str] = []
    if args.disconnecting:
        model = ThreadingHTTPServer(("127.0.0.1", 0), _SlowModel)
        model.daemon_threads = True
        threading.Thread(target=model.serve_forever, daemon=True).start()
        env |= {"OPENAI_BASE_URL": f"http://127.0.0.1:{model.server_address[1]}/v1", "OPENAI_API_KEY": "x"}
        llm = ["--llm", "openai:slow"]
    server = subprocess.Popen(
        [
            sys.executable, "-m", "paretorag.cli", "serve", "--index", str(ix),
            "--host", "127.0.0.1", "--port", str(port), "--readers", str(args.readers), *llm,
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
        run = asyncio.run(
            _load(base, args.clients, args.queries, args.max_seconds, args.disconnecting, server.pid)
        )
        lat, errors, wall = run["lat"], run["errors"], run["wall"]
        time.sleep(1.0)  # the last abandoned streams' slots come back at the hang-up
        mem = _rss_mb(server.pid)
        metrics = httpx.get(base + "/metrics", timeout=10).text
        t_health = time.perf_counter()
        health = httpx.get(base + "/healthz", timeout=60).status_code
        health_s = time.perf_counter() - t_health
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
                "disconnecting_clients": args.disconnecting,
                "streams_abandoned": run["streams_abandoned"],
                "stream_errors": len(run["stream_errors"]),
                "first_stream_errors": run["stream_errors"][:5],
                "model_streams_started": _SlowModel.started,
                "model_streams_cut": _SlowModel.cut,
                "query_slots_busy_at_end": _gauge(metrics, "paretorag_query_slots_busy"),
                "healthz_at_end": {"status": health, "seconds": round(health_s, 3)},
                "server_rss_mb_every_5s": run["rss"],
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


def _gauge(metrics: str, name: str) -> float | None:
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


if __name__ == "__main__":
    main()
