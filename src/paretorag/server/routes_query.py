"""Questions: ``POST /query`` (the ``query --json`` object) and ``POST /query/stream`` (the same
answer as server-sent events), read with the server's shared RAG."""

from __future__ import annotations

import difflib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from ..answering.context import pack
from ..retrieval.methods.base import available_methods
from ..types import Budget
from .errors import APIError, error_body
from .schemas import ERRORS, QueryBody
from .streaming import sse, streaming

if TYPE_CHECKING:
    from ..types import Answer
    from .metrics import Metrics
    from .service import Limits, Service


def check_query(body: QueryBody, lim: Limits) -> None:
    """400 for a question, k, budget or method outside ``lim`` or unknown."""
    if not body.question.strip():
        raise APIError(400, "question is empty; ask something", field="question")
    if len(body.question) > lim.max_question_chars:
        raise APIError(
            400,
            f"question has {len(body.question)} characters (limit {lim.max_question_chars}); shorten it",
            field="question",
        )
    if body.k is not None and not 1 <= body.k <= lim.max_k:
        raise APIError(400, f"k must be between 1 and {lim.max_k}, got {body.k}", field="k")
    if body.budget is not None and not 1 <= body.budget <= lim.max_budget:
        raise APIError(
            400,
            f"budget must be between 1 and {lim.max_budget} tokens, got {body.budget}",
            field="budget",
        )
    if body.method is not None and body.method not in available_methods():
        raise APIError(
            400,
            f"unknown method {body.method!r}; "
            + (
                f"did you mean {close[0]!r}? "
                if (close := difflib.get_close_matches(body.method.lower(), available_methods(), n=1))
                else ""
            )
            + "choose one of GET /methods, e.g. vanilla",
            field="method",
        )


def query_router(service: Service, can_read: Callable[..., str], metrics: Metrics) -> APIRouter:
    """``/query`` and ``/query/stream`` over ``service``, behind the ``can_read`` key check."""
    router = APIRouter()
    lim = service.limits

    @router.post("/query", tags=["query"], responses=ERRORS)
    def query(body: QueryBody, _: str = Depends(can_read)) -> dict[str, Any]:
        """Answer a question: the same JSON object as `paretorag query --json`."""
        check_query(body, lim)
        with service.pool.reader() as rag:
            ans = rag.query(
                body.question,
                method=body.method,
                k=body.k,
                budget=body.budget,
                context_only=body.context_only,
                reader=body.reader,
            )
        metrics.answered(ans)
        return ans.to_json()

    @router.post(
        "/query/stream",
        tags=["query"],
        responses={
            **ERRORS,
            200: {"content": {"text/event-stream": {}}, "description": "server-sent events"},
        },
    )
    def query_stream(body: QueryBody, _: str = Depends(can_read)) -> StreamingResponse:
        """The answer as server-sent events: `contexts` (the passages), `token` events as the
        LLM streams (one for backends that do not stream), then `done` with the whole
        `query --json` object, or `error` with the cause."""
        check_query(body, lim)
        rag = service.pool.acquire()
        try:
            t0 = time.perf_counter()
            method = body.method or rag.default_method()
            retrieval, items = rag.retrieve(body.question, method, k=body.k, budget=body.budget)
            retrieval_s = time.perf_counter() - t0
            ctx = pack(items, Budget(body.budget), rag.tokenizer)
        except BaseException:
            service.pool.release(rag)
            raise

        def answer(on_token: Callable[[str], None]) -> Answer:
            return rag.answer(
                body.question,
                retrieval,
                items,
                method=method,
                budget=body.budget,
                context_only=body.context_only,
                retrieval_seconds=retrieval_s,
                on_token=on_token,
                reader=body.reader,
            )

        stream = service.stream(rag, answer, name="paretorag-stream")  # holds the slot from here

        async def events() -> AsyncIterator[str]:
            yield sse(
                "contexts",
                {
                    "method": method,
                    "mode": retrieval.mode,
                    "branch": retrieval.branch,
                    "contexts": [c.to_json() for c in ctx.items],
                },
            )
            async for kind, value in stream.events():
                if kind == "token":
                    yield sse("token", {"text": value})
                elif kind == "wait":
                    yield sse("wait", {"message": value})
                elif kind == "done":
                    metrics.answered(value)
                    yield sse("done", value.to_json())
                else:
                    yield sse("error", error_body(value)["error"])

        return streaming(events(), "text/event-stream", stream)

    return router


__all__ = ["check_query", "query_router"]
