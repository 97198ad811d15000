"""Streamed answers whose clients vanish give their query slots back, and cancel the model.

Before, a client that stopped reading a streamed `/query/stream` or chat answer kept its
reader slot until the server restarted (every later query: 503 busy), `/healthz` stalled,
the upstream LLM kept generating and SIGTERM did not stop the server. Here: N clients that
go away on a server with N slots, then a query answered at once; the slow upstream model's
streams cut; `paretorag serve` stopped by SIGTERM with open streams within 10 s.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

import httpx

from paretorag.providers.llm import FakeLLM
from paretorag.server import create_app

from ..llm_server import slow_stream_server
from ..server_util import build_index, free_port, live_server, wait_healthy, write_corpus

SLOW = ["--readers", "8", "--llm", "openai:slow"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
LONG = " ".join(f"word{i}" for i in range(400)) + " [1]"  # 400 pieces, 0.05 s apart: 20 s of stream

ROUTES = [
    ("/query/stream", {"question": "What do otters eat?"}),
    (
        "/v1/chat/completions",
        {"model": "vanilla", "stream": True, "messages": [{"role": "user", "content": "otters?"}]},
    ),
    ("/api/chat", {"model": "vanilla", "messages": [{"role": "user", "content": "otters?"}]}),
]


def open_and_abandon(base: str, path: str, body: dict, read_bytes: int = 200) -> bytes:
    """Send a streamed request, read the first bytes of the answer, then close the socket
    without reading on (as `curl -m 3 ... | head -c 300` does)."""
    host, port = base.removeprefix("http://").split(":")
    raw = json.dumps(body).encode()
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n".encode()
            + raw
        )
        got = b""
        while len(got) < read_bytes:
            piece = s.recv(4096)
            if not piece:
                break
            got += piece
    return got


def gauge(base: str, name: str) -> float:
    text = httpx.get(base + "/metrics", timeout=30).text
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


@pytest.mark.parametrize(("path", "body"), ROUTES, ids=[r[0] for r in ROUTES])
def test_clients_that_vanish_give_every_slot_back(tmp_path, path, body):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    llm = FakeLLM([LONG], delay=0.05)
    app = create_app(ix, llm=llm, readers=2, reader_wait_s=3)
    with live_server(app) as base:
        for _ in range(3):  # more disconnects than slots
            first = open_and_abandon(base, path, body)
            assert first.startswith(b"HTTP/1.1 200"), first[:200]
        t0 = time.perf_counter()
        r = httpx.post(base + "/query", json={"question": "otters", "context_only": True}, timeout=30)
        took = time.perf_counter() - t0
        assert r.status_code == 200, r.text
        assert took < 1.5, f"/query waited {took:.1f} s for a slot"
        deadline = time.monotonic() + 5
        while gauge(base, "paretorag_query_slots_busy") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gauge(base, "paretorag_query_slots_busy") == 0
        assert gauge(base, "paretorag_query_slots") == 2
        time.sleep(0.5)  # a cancelled answer stops at its next piece: the model is not asked for more
        streamed = llm.streamed
        time.sleep(0.5)
        assert llm.streamed == streamed and streamed < 3 * 40, (
            f"the model went on streaming: {streamed} pieces"
        )


def test_healthz_answers_while_every_slot_streams(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    app = create_app(ix, llm=FakeLLM([LONG], delay=0.05), readers=2, reader_wait_s=30)
    with (
        live_server(app) as base,
        httpx.Client(timeout=30) as client,
        client.stream("POST", base + "/query/stream", json=ROUTES[0][1]) as a,
        client.stream("POST", base + "/query/stream", json=ROUTES[0][1]) as b,
    ):
        pieces = [a.iter_bytes(), b.iter_bytes()]  # kept: a dropped iterator closes its connection
        next(pieces[0]), next(pieces[1])
        t0 = time.perf_counter()
        assert client.get(base + "/healthz").status_code == 200
        assert time.perf_counter() - t0 < 1.0
        assert gauge(base, "paretorag_query_slots_busy") == 2


def test_sigterm_with_open_streams_stops_the_server_and_its_model_requests(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with slow_stream_server(words=600, delay=0.1) as (llm_url, upstream):
        proc = subprocess.Popen(
            [sys.executable, "-m", "paretorag.cli", "serve", "--index", str(ix), "--port", str(port), *SLOW],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**ENV, "OPENAI_BASE_URL": llm_url, "OPENAI_API_KEY": "unused"},
        )
        clients: list[socket.socket] = []
        try:
            wait_healthy(base, 90)
            raw = json.dumps(ROUTES[0][1]).encode()
            for _ in range(8):
                s = socket.create_connection(("127.0.0.1", port), timeout=60)
                s.sendall(
                    f"POST /query/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(raw)}\r\n\r\n".encode()
                    + raw
                )
                clients.append(s)
            deadline = time.monotonic() + 60
            while upstream.started < 8 and time.monotonic() < deadline:  # every stream reached the model
                time.sleep(0.1)
            assert upstream.started == 8
            t0 = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=10)  # raises TimeoutExpired if it hangs
            took = time.perf_counter() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        tails = []
        for s in clients:
            s.settimeout(5)
            data = b""
            try:
                while piece := s.recv(65536):
                    data += piece
            except OSError:
                pass
            s.close()
            tails.append(data)
        deadline = time.monotonic() + 5
        while upstream.cut + upstream.finished < 8 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert took < 10, f"the server took {took:.1f} s to stop"
    assert proc.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM), proc.returncode
    assert "stopping (SIGTERM): 8 streamed answer(s) ended" in out, out[-2000:]
    assert upstream.cut == 8 and upstream.finished == 0  # the model's requests were closed, not run out
    assert sum(b"event: error" in t and b"stopping" in t for t in tails) == 8  # each client was told
