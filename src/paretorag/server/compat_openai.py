"""OpenAI-compatible routes (:mod:`.compat`): ``GET /v1/models``, ``GET /v1/models/{model}``
and ``POST /v1/chat/completions`` (streamed as server-sent ``chat.completion.chunk`` events,
ended by ``data: [DONE]``), in OpenAI's shapes."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request

from ..types import Answer
from .compat_common import Chat, Turn, guarded, peek_stream, reply_text, sources, to_compat
from .streaming import AnswerStream, streaming


def openai_router(chat: Chat) -> APIRouter:
    """The ``/v1/...`` routes, answered by ``chat``."""
    router = APIRouter()

    @router.get("/v1/models", tags=["compatible"])
    def openai_models(request: Request) -> dict[str, Any]:
        """The index's models for OpenAI clients: one `INDEX/METHOD` id per built method."""
        chat.authorize(request, False)
        created = chat.created()
        rows = guarded(False, chat.models)
        return {
            "object": "list",
            "data": [
                {"id": i, "object": "model", "created": created, "owned_by": "paretorag"} for i, _ in rows
            ],
        }

    @router.get("/v1/models/{model:path}", tags=["compatible"])
    def openai_model(model: str, request: Request) -> dict[str, Any]:
        chat.authorize(request, False)
        name, _ = guarded(False, lambda: chat.method_of(model, False))
        return {"id": name, "object": "model", "created": chat.created(), "owned_by": "paretorag"}

    @router.post("/v1/chat/completions", tags=["compatible"])
    async def openai_chat(request: Request) -> Any:
        """OpenAI chat completions over the index (`stream: true` for server-sent chunks). The
        reply cites its passages as `[n]` plus a Sources list; the extra field `paretorag` holds
        the question asked, the citations and the usage."""
        import anyio

        raw = await request.body()
        probe = peek_stream(raw)
        if not probe:
            turn, ans = await anyio.to_thread.run_sync(chat.complete, request, raw, False)
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": turn.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply_text(ans)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(ans),
                "paretorag": chat.extra(turn, ans),
            }
        turn, stream = await anyio.to_thread.run_sync(chat.run, request, raw, False)
        options = json.loads(raw).get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return streaming(_chunks(chat, turn, stream, include_usage), "text/event-stream", stream)

    return router


def _usage(ans: Answer) -> dict[str, int]:
    total = ans.usage.total
    return {
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "total_tokens": total.prompt_tokens + total.completion_tokens,
    }


async def _chunks(chat: Chat, turn: Turn, stream: AnswerStream, include_usage: bool) -> AsyncIterator[str]:
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    async for kind, value in stream.events():
        if kind == "token" and value:
            yield chunk({"content": value})
        elif kind == "done":
            ans: Answer = value
            if tail := sources(ans):
                yield chunk({"content": tail})
            yield chunk({}, "stop", paretorag=chat.extra(turn, ans))
            if include_usage:
                body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.model}
                yield f"data: {json.dumps({**body, 'choices': [], 'usage': _usage(ans)})}\n\n"
        elif kind == "error":
            yield f"data: {json.dumps(to_compat(value, False).body(), ensure_ascii=False)}\n\n"
        # waits ("wait") are not part of OpenAI's stream: the next token ends them
    yield "data: [DONE]\n\n"


__all__ = ["openai_router"]
