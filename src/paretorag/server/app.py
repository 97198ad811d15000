"""The HTTP API (FastAPI): queries, streamed answers, documents, jobs, stats, metrics, the page.

``create_app(index)`` returns the ASGI app; ``paretorag serve`` runs it with uvicorn.
The OpenAPI description is at ``/docs`` (Swagger UI) and ``/redoc``, both served from the
package's own files (``fastapi-offline``): they work without internet. Every error is JSON:
``{"error": {"status", "type", "field", "message"}}``.

The routes live in one module per resource, each an ``APIRouter`` built over the
:class:`~paretorag.server.service.Service` and the key checks (:mod:`.deps`): :mod:`.routes_query`,
:mod:`.routes_documents`, :mod:`.routes_status`, :mod:`.compat` (OpenAI and Ollama),
:mod:`.graph`, :mod:`.routes_page`, and :mod:`.mcp`; ``create_app`` only assembles them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from .. import __version__
from .auth import KeyRing
from .compat import add_compat_routes
from .deps import key_checks
from .errors import add_error_handlers
from .graph import graph_router
from .jobs import Job
from .mcp import mcp_endpoint
from .metrics import Metrics
from .middleware import BodyLimit, Counting, NoSniff
from .routes_documents import RECORD_SCHEMA, documents_router
from .routes_page import page_router
from .routes_query import query_router
from .routes_status import status_router
from .schemas import ERRORS, QueryBody
from .service import Limits, Service


def create_app(
    index: str | Path | Service,
    *,
    keys: KeyRing | None = None,
    limits: Limits | None = None,
    **service_args: Any,
) -> FastAPI:
    """The API over one index.

    Parameters
    ----------
    index : path or Service
        The index directory (or a :class:`~paretorag.server.service.Service` over it).
    keys : KeyRing, optional
        API keys; none means no auth (the CLI then binds to loopback only).
    limits : Limits, optional
        Body sizes, question length, k, budget.
    **service_args
        Passed to :class:`~paretorag.server.service.Service` (``llm``, ``embedder``,
        ``readers``, ``write_wait``, ``create``).
    """
    metrics = Metrics()

    def job_done(job: Job) -> None:
        metrics.job(job.kind, job.state)

    service = (
        index
        if isinstance(index, Service)
        else Service(index, limits=limits, on_job_finish=job_done, **service_args)
    )
    ring = keys or KeyRing()
    mcp = mcp_endpoint(service, ring)  # MCP over streamable HTTP at /mcp (None without the mcp package)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running() if mcp else nullcontext():
            yield
        service.close()

    app = FastAPIOffline(  # Swagger UI and ReDoc from the package's files, not a CDN
        lifespan=lifespan,
        title="paretorag",
        version=__version__,
        description=(
            "Graph-based RAG over one index: questions with citations, streamed answers, "
            "documents added and deleted while queries run. Send an API key as "
            "`Authorization: Bearer KEY` (or `X-API-Key: KEY`); read-only keys can query, "
            "read-write keys can also change documents. Errors are JSON: "
            '`{"error": {"status", "type", "field", "message"}}`.'
        ),
    )
    app.state.service = service
    app.state.metrics = metrics
    app.add_middleware(BodyLimit, limits=service.limits)
    app.add_middleware(Counting, metrics=metrics)
    app.add_middleware(NoSniff)
    add_error_handlers(app)

    can_read, can_write = key_checks(ring)
    app.include_router(query_router(service, can_read, metrics))  # /query, /query/stream
    app.include_router(documents_router(service, can_read, can_write))  # /documents, /jobs
    app.include_router(status_router(service, can_read, metrics))  # /methods, /stats, /healthz, /metrics
    add_compat_routes(app, service, ring, metrics)  # /v1/chat/completions, /v1/models, /api/chat, /api/tags
    app.include_router(graph_router(service, can_read, ERRORS))  # /graph/...: entities, neighborhood
    app.include_router(page_router())  # the page at / and /static
    if mcp is not None:
        app.router.routes.append(mcp.route())

    # the JSON record schema, referenced by the upload's requestBody
    original_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original_openapi()
            schema.setdefault("components", {}).setdefault("schemas", {})["Record"] = RECORD_SCHEMA
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


__all__ = ["QueryBody", "create_app"]
