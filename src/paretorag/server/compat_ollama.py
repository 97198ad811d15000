"""Ollama-compatible routes (:mod:`.compat`): ``GET /api/version``, ``GET /api/tags`` and
``POST /api/chat`` (newline-delimited JSON when ``stream`` is true or absent, as Ollama
does), in Ollama's shapes."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request

from .. import __version__
from ..types import Answer
from .compat_common import Chat, Turn, guarded, peek_stream, reply_text, sources, to_compat
from .streaming import AnswerStream, streaming

OLLAMA_VERSION = "0.6.0"  # what GET /api/version reports (clients check the API level)


def ollama_router(chat: Chat) -> APIRouter:
    """The ``/api/...`` routes, answered by ``chat``."""
    router = APIRouter()

    @router.get("/api/version", tags=["compatible"])
    def ollama_version() -> dict[str, Any]:
        """The Ollama API level emulated (and paretorag's version)."""
        return {"version": OLLAMA_VERSION, "paretorag": __version__}

    @router.get("/api/tags", tags=["compatible"])
    def ollama_tags(request: Request) -> dict[str, Any]:
        """The index's models for Ollama clients (the ids of GET /v1/models)."""
        chat.authorize(request, True)
        modified = datetime.fromtimestamp(chat.created(), UTC).isoformat().replace("+00:00", "Z")
        rows = guarded(True, chat.models)
        return {
            "models": [
                {
                    "name": i,
                    "model": i,
                    "modified_at": modified,
                    "size": 0,
                    "digest": uuid.uuid5(uuid.NAMESPACE_URL, f"paretorag:{i}").hex,
                    "details": {"format": "paretorag", "family": "paretorag", "parameter_size": m},
                }
                for i, m in rows
            ]
        }

    @router.post("/api/chat", tags=["compatible"])
    async def ollama_chat(request: Request) -> Any:
        """Ollama chat over the index: newline-delimited JSON unless `stream` is false; the last
        object (`done: true`) carries the `paretorag` field."""
        import anyio

        raw = await request.body()
        if peek_stream(raw, default=True) is False:
            turn, ans = await anyio.to_thread.run_sync(chat.complete, request, raw, True)
            return {
                **_final(turn, ans),
                "message": {"role": "assistant", "content": reply_text(ans)},
                "paretorag": chat.extra(turn, ans),
            }
        turn, stream = await anyio.to_thread.run_sync(chat.run, request, raw, True)
        return streaming(_lines(chat, turn, stream), "application/x-ndjson", stream)

    return router


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _final(turn: Turn, ans: Answer) -> dict[str, Any]:
    total = ans.usage.total
    return {
        "model": turn.model,
        "created_at": _now_iso(),
        "done": True,
        "done_reason": "stop",
        "total_duration": int(ans.timings.get("total", 0.0) * 1e9),
        "load_duration": 0,
        "prompt_eval_count": total.prompt_tokens,
        "prompt_eval_duration": int(ans.timings.get("retrieval", 0.0) * 1e9),
        "eval_count": total.completion_tokens,
        "eval_duration": int(ans.timings.get("generation", 0.0) * 1e9),
    }


async def _lines(chat: Chat, turn: Turn, stream: AnswerStream) -> AsyncIterator[str]:
    def line(content: str) -> str:
        body = {
            "model": turn.model,
            "created_at": _now_iso(),
            "message": {"role": "assistant", "content": content},
            "done": False,
        }
        return json.dumps(body, ensure_ascii=False) + "\n"

    async for kind, value in stream.events():
        if kind == "token" and value:
            yield line(value)
        elif kind == "done":
            ans: Answer = value
            if tail := sources(ans):
                yield line(tail)
            final = {
                **_final(turn, ans),
                "message": {"role": "assistant", "content": ""},
                "paretorag": chat.extra(turn, ans),
            }
            yield json.dumps(final, ensure_ascii=False) + "\n"
        elif kind == "error":
            yield json.dumps(to_compat(value, True).body(), ensure_ascii=False) + "\n"


__all__ = ["OLLAMA_VERSION", "ollama_router"]
