"""The MCP server, driven by the official ``mcp`` client: ``paretorag mcp`` as a real subprocess
over stdio, and streamable HTTP at ``/mcp`` of the real server on 127.0.0.1 (with API keys)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from paretorag import RAG
from paretorag.server import KeyRing, create_app

from ..server_util import live_server, write_corpus

SRC = str(Path(__file__).resolve().parents[2] / "src")
RO_KEY = "ro-key-0123456789abcdef"
RW_KEY = "rw-key-0123456789abcdef"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    sources = write_corpus(root / "corpus")
    with RAG.open(root / "ix", embedder="hash:64", methods=["vanilla", "bm25"]) as rag:
        rag.index(sources)
    return root / "ix"


async def _exercise(session: ClientSession) -> dict[str, Any]:
    """What every transport must answer: the three tools, and a tool error for a bad method."""
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search", "answer", "list_documents"}
    assert tools["search"].input_schema["required"] == ["question"]
    assert {"method", "k"} <= set(tools["search"].input_schema["properties"])

    found = await session.call_tool("search", {"question": "What do otters eat?", "method": "bm25", "k": 3})
    assert not found.is_error
    passages = found.structured_content["passages"]
    assert found.structured_content["method"] == "bm25"
    assert passages[0]["title"] == "otters" and "crabs" in passages[0]["text"]
    assert len(passages[0]["doc_id"]) == 16 and passages[0]["score"] > 0
    assert [p["rank"] for p in passages] == list(range(1, len(passages) + 1))

    answered = await session.call_tool("answer", {"question": "What do herons spear?", "method": "vanilla"})
    assert not answered.is_error
    ans = answered.structured_content
    assert "frogs" in ans["answer"]
    assert ans["citations"] and ans["citations"][0]["title"] == "herons"
    by_marker = {p["marker"]: p for p in ans["passages"]}
    assert by_marker[ans["citations"][0]["marker"]]["doc_id"] == ans["citations"][0]["doc_id"]

    listed = await session.call_tool("list_documents", {})
    docs = listed.structured_content
    assert docs["counts"] == {"documents": 6, "chunks": 6}
    assert sorted(d["title"] for d in docs["documents"]) == sorted(
        ["otters", "herons", "beavers", "salmon", "kingfishers", "dippers"]
    )
    assert all(d["chunks"] == 1 and d["source"].endswith(".md") for d in docs["documents"])

    bad = await session.call_tool("search", {"question": "otters", "method": "bm52"})
    assert bad.is_error and "unknown method 'bm52'" in bad.content[0].text
    too_many = await session.call_tool("answer", {"question": "otters", "k": 1000})
    assert too_many.is_error and "k must be between 1 and 100" in too_many.content[0].text
    return {"search": found.structured_content, "documents": docs}


def test_stdio_subprocess(index: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "paretorag.cli", "mcp", "--index", str(index)],
        env={"PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])},
    )

    async def main() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                return await _exercise(session)

    seen = anyio.run(main)
    assert seen["documents"]["counts"]["documents"] == 6


def test_stdio_missing_index_fails_clearly(tmp_path: Path) -> None:
    import subprocess

    run = subprocess.run(
        [sys.executable, "-m", "paretorag.cli", "mcp", "--index", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert run.returncode == 2
    assert "is not a paretorag index" in run.stderr and run.stdout == ""  # stdout is the protocol's


def _http_session(base: str, key: str | None) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx2.AsyncClient(headers=headers, timeout=30)


def test_streamable_http_with_keys(index: Path) -> None:
    keys = KeyRing.from_pairs([("read", RO_KEY), ("write", RW_KEY)])
    with live_server(create_app(index, keys=keys), limit_s=90) as base:
        # no key, a wrong key: refused before the SDK sees the request, as JSON like the rest of the API
        for headers in ({}, {"Authorization": "Bearer not-a-key-at-all-0000"}):
            r = httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
            assert r.status_code == 401, r.text
            assert r.json()["error"]["type"] == "unauthorized"
            assert r.headers["www-authenticate"] == "Bearer"

        async def main(key: str) -> dict[str, Any]:
            with anyio.fail_after(60):
                async with (
                    _http_session(base, key) as client,
                    streamable_http_client(base + "/mcp", http_client=client) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    return await _exercise(session)

        seen = anyio.run(main, RO_KEY)  # a read-only key may call every tool: they only read
        assert seen["search"]["passages"][0]["title"] == "otters"
        anyio.run(main, RW_KEY)
        assert "/mcp" not in httpx.get(base + "/openapi.json").json()["paths"]


def test_streamable_http_without_keys_on_loopback(index: Path) -> None:
    with live_server(create_app(index), limit_s=90) as base:

        async def main() -> dict[str, Any]:
            with anyio.fail_after(60):
                async with (
                    _http_session(base, None) as client,
                    streamable_http_client(base + "/mcp", http_client=client) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    found = await session.call_tool("search", {"question": "Which birds dive for fish?"})
                    return dict(found.structured_content)

        out = anyio.run(main)
        assert out["passages"] and out["method"] == "vanilla"
        # without keys the SDK's DNS-rebinding guard accepts loopback hosts only
        r = httpx.post(
            base + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
        )
        assert r.status_code in (400, 403, 421), r.text
