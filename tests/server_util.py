"""Helpers for the server tests: a small index, and a real uvicorn on 127.0.0.1 that stops by itself."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from paretorag import RAG

TOPICS = [
    ("Otters", "Otters eat fish and crabs in cold rivers. Sea otters float on their backs while eating."),
    ("Herons", "Herons wade in shallow water and spear frogs with their long beaks."),
    ("Beavers", "Beavers build dams of branches and mud, which turn streams into ponds."),
    ("Salmon", "Salmon swim upstream to spawn in the gravel beds where they hatched."),
    ("Kingfishers", "Kingfishers dive from branches to catch small fish near the surface."),
    ("Dippers", "Dippers walk underwater along stream beds to pick insect larvae from stones."),
]


def write_corpus(folder: Path, topics: list[tuple[str, str]] = TOPICS) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for title, text in topics:
        p = folder / f"{title.lower()}.md"
        p.write_text(text, encoding="utf-8")
        out.append(p)
    return out


def build_index(root: Path, sources: list[Path], embedder: str = "hash:64") -> Path:
    with RAG.open(root, embedder=embedder) as rag:
        rag.index(sources)
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(app: Any, *, limit_s: float = 120.0) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 in a thread; it stops at exit or after ``limit_s``."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    stopper = threading.Timer(limit_s, lambda: setattr(server, "should_exit", True))
    stopper.daemon = True
    stopper.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start within 20 s")
        time.sleep(0.05)
    try:
        yield base
    finally:
        stopper.cancel()
        server.should_exit = True
        thread.join(15)


def wait_healthy(base: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{base} did not answer /healthz within {seconds} s")


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent-event body."""
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        event, data = "message", ""
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
        out.append((event, data))
    return out
