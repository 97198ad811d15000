"""The HTTP API (FastAPI): queries, streamed answers, documents, jobs, stats, metrics, the page.

``create_app(index)`` returns the ASGI app; ``paretorag serve`` runs it with uvicorn.
The OpenAPI description is at ``/docs`` (Swagger UI) and ``/redoc``, both served from the
package's own files (``fastapi-offline``): they work without internet. Every error is JSON:
``{"error": {"status", "type", "field", "message"}}``.
"""

from __future__ import annotations

import difflib
import json
import logging
import queue
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..context import pack
from ..errors import ParetoragError
from ..manifest import Manifest
from ..methods.base import available_methods
from ..providers.notices import listening
from ..types import Answer, Budget
from .auth import WRITE, KeyRing
from .errors import APIError, error_body, status_of
from .graph import graph_router
from .jobs import Job, new_job_id
from .mcp import mcp_endpoint
from .metrics import Metrics
from .service import Limits, Service, check_upload_name, records_to_documents

log = logging.getLogger("paretorag.server")
STATIC = Path(__file__).parent / "static"
_DOC_ID = re.compile(r"^[0-9a-f]{16}$")


class QueryBody(BaseModel):
    """A question for one method (the fields of ``paretorag query``)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question.", examples=["Who directed the film?"])
    method: str | None = Field(
        None, description="A method from GET /methods (default: the recommended one where it is built)."
    )
    k: int | None = Field(None, description="Passages to retrieve (the method's default if omitted).")
    context_only: bool = Field(False, description="Retrieve only; no answer (no LLM call).")
    budget: int | None = Field(None, description="Context budget in tokens.")
    reader: Literal["reader", "extractive", "llm"] | None = Field(
        None,
        description="Who answers: the offline reader (short answer, evidence, confidence, found), "
        "extractive evidence sentences, or the configured LLM. Default: the LLM when it is generative, "
        "else the reader.",
    )


class ErrorBody(BaseModel):
    status: int
    type: str
    field: str | None
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": what}
    for code, what in {
        400: "bad input (names the field and the fix)",
        401: "missing or unknown API key",
        403: "a read-only key on a write",
        413: "request body too large",
        422: "a field is missing or has the wrong type",
        502: "the LLM backend failed",
        503: "all readers busy, or the index is damaged",
        504: "the LLM backend timed out",
    }.items()
}


def _json_error(exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    status = status_of(exc)[0]
    if status >= 500:
        log.error("%s %s", type(exc).__name__, exc)
    return JSONResponse(error_body(exc), status_code=status, headers=headers)


class BodyLimit:
    """Refuses request bodies above a limit with 413 (by Content-Length, or while reading)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    def _limit(self, scope: Scope) -> int:
        upload = scope["path"].rstrip("/") == "/documents" and scope["method"] == "POST"
        return self.limits.max_upload_bytes if upload else self.limits.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        too_big = APIError(
            413,
            f"the request body is larger than {limit:,} bytes; send less"
            + (
                " (split the upload into several requests, or start the server with a larger --max-upload-mb)"
                if limit == self.limits.max_upload_bytes
                else ""
            ),
            field="body",
            kind="too_large",
        )
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await _json_error(too_big)(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_big
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except APIError as exc:
            if exc is not too_big or started:
                raise
            await _json_error(too_big)(scope, receive, send)


class Counting:
    """Counts requests by route template (not by path: ids would explode the label set)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        self.metrics.enter()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.leave()
            route = scope.get("route")
            name = getattr(route, "path", None) or (
                "/static" if scope["path"].startswith("/static/") else "unmatched"
            )
            self.metrics.request(name, scope["method"], status)


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
    lim = service.limits
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
    app.add_middleware(BodyLimit, limits=lim)
    app.add_middleware(Counting, metrics=metrics)

    # -- errors ----------------------------------------------------------------
    @app.exception_handler(APIError)
    @app.exception_handler(ParetoragError)
    @app.exception_handler(OSError)
    async def _known(request: Request, exc: Exception) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if status_of(exc)[0] == 401 else None
        return _json_error(exc, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid request"}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        fld = "body" if first.get("type") == "json_invalid" else ".".join(loc) or "body"
        msg = str(first.get("msg", "invalid"))
        if first.get("type") == "extra_forbidden":
            msg = "unknown field; the accepted fields are in /docs"
        elif first.get("type") == "missing":
            msg = "required; the request schema is in /docs"
        elif first.get("type") == "json_invalid":
            msg = "the body is not valid JSON; send a JSON object with Content-Type: application/json"
        return _json_error(APIError(422, f"{fld}: {msg}", field=fld, kind="invalid"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        hint = {404: "; see /docs for the endpoints", 405: "; see /docs for the verbs each endpoint takes"}
        message = f"{exc.detail}{hint.get(exc.status_code, '')}"
        return _json_error(APIError(exc.status_code, message, kind="http"))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        # the last resort for a bug: a JSON 500 with the traceback in the log; the server goes on
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body(exc), status_code=500)

    # -- auth ------------------------------------------------------------------
    bearer = HTTPBearer(auto_error=False, description="An API key: Authorization: Bearer KEY")
    header_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key")

    def _role(
        cred: HTTPAuthorizationCredentials | None = Security(bearer),
        key: str | None = Security(header_key),
    ) -> str:
        if not ring:
            return WRITE
        given = (cred.credentials if cred is not None else None) or key
        if not given:
            raise APIError(
                401,
                "missing API key; send the header 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')",
                kind="unauthorized",
            )
        role = ring.role(given)
        if role is None:
            raise APIError(401, "unknown API key; check the key you send", kind="unauthorized")
        return role

    def can_read(role: str = Depends(_role)) -> str:
        return role

    def can_write(role: str = Depends(_role)) -> str:
        if role != WRITE:
            raise APIError(
                403, "this API key is read-only; use a read-write key to change documents", kind="forbidden"
            )
        return role

    # -- queries ---------------------------------------------------------------
    def _check(body: QueryBody) -> None:
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

    def _record(ans: Answer) -> None:
        total = ans.usage.total
        metrics.query(
            ans.method, ans.timings["total"], total.calls, total.prompt_tokens, total.completion_tokens
        )

    @app.post("/query", tags=["query"], responses=ERRORS)
    def query(body: QueryBody, _: str = Depends(can_read)) -> dict[str, Any]:
        """Answer a question: the same JSON object as `paretorag query --json`."""
        _check(body)
        with service.pool.reader() as rag:
            ans = rag.query(
                body.question,
                method=body.method,
                k=body.k,
                budget=body.budget,
                context_only=body.context_only,
                reader=body.reader,
            )
        _record(ans)
        return ans.to_json()

    @app.post(
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
        _check(body)
        rag = service.pool.acquire()
        try:
            t0 = time.perf_counter()
            method = body.method or rag.default_method()
            retrieval, items = rag.retrieve(body.question, method, k=body.k, budget=body.budget)
            retrieval_s = time.perf_counter() - t0
        except BaseException:
            service.pool.release(rag)
            raise

        def events() -> Iterator[str]:
            pieces: queue.Queue[tuple[str, str] | None] = queue.Queue()
            outcome: dict[str, Any] = {}

            def waiting(message: str) -> None:
                if message:  # the end of a wait shows as the next token
                    pieces.put(("wait", message))

            def generate() -> None:
                try:
                    with listening(waiting):
                        outcome["answer"] = rag.answer(
                            body.question,
                            retrieval,
                            items,
                            method=method,
                            budget=body.budget,
                            context_only=body.context_only,
                            retrieval_seconds=retrieval_s,
                            on_token=lambda text: pieces.put(("token", text)),
                            reader=body.reader,
                        )
                except (ParetoragError, OSError) as exc:
                    outcome["error"] = exc
                finally:
                    pieces.put(None)

            worker = threading.Thread(target=generate, name="paretorag-stream", daemon=True)
            try:
                ctx = pack(items, Budget(body.budget), rag.tokenizer)
                yield _sse(
                    "contexts",
                    {
                        "method": method,
                        "mode": retrieval.mode,
                        "branch": retrieval.branch,
                        "contexts": [c.to_json() for c in ctx.items],
                    },
                )
                worker.start()
                while (piece := pieces.get()) is not None:
                    kind, text = piece
                    yield (
                        _sse("token", {"text": text}) if kind == "token" else _sse("wait", {"message": text})
                    )
                worker.join()
                if "error" in outcome:
                    yield _sse("error", error_body(outcome["error"])["error"])
                elif "answer" in outcome:
                    _record(outcome["answer"])
                    yield _sse("done", outcome["answer"].to_json())
                else:  # generate() died of a bug (logged by the thread)
                    yield _sse("error", error_body(RuntimeError())["error"])
            finally:
                if worker.is_alive():  # the client went away: let the answer finish first
                    worker.join()
                service.pool.release(rag)

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # -- documents -------------------------------------------------------------
    async def _job_response(job: Job, wait: float) -> JSONResponse:
        if wait > 0:
            import anyio

            await anyio.to_thread.run_sync(job.done_event.wait, min(wait, 600.0))
        body = {"job": service.writer.snapshot(job)}
        headers = {"Location": f"/jobs/{job.id}"}
        if job.state == "failed" and job.error is not None:
            status = status_of(job.error)[0]
            return JSONResponse({**error_body(job.error), **body}, status_code=status, headers=headers)
        return JSONResponse(body, status_code=200 if job.state == "done" else 202, headers=headers)

    upload_doc = {
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "files": {"type": "array", "items": {"type": "string", "format": "binary"}}
                        },
                    }
                },
                "application/json": {
                    "schema": {
                        "oneOf": [
                            {"$ref": "#/components/schemas/Record"},
                            {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                        ]
                    }
                },
            }
        }
    }

    @app.post("/documents", tags=["documents"], responses=ERRORS, openapi_extra=upload_doc, status_code=202)
    async def add_documents(request: Request, wait: float = 0.0, _: str = Depends(can_write)) -> JSONResponse:
        """Insert documents: files as `multipart/form-data` (field `files`; the types
        `paretorag index` reads), or JSON `{title, text}` records (one chunk each).
        Returns a job (202; `GET /jobs/{id}`); with `?wait=SECONDS`, waits for it and
        answers 200 when it is done."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/json":
            try:
                payload = json.loads(await request.body())
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise APIError(422, "the body is not valid JSON", field="body", kind="invalid") from None
            docs = records_to_documents(payload)
            job = service.insert_documents(docs, {"records": len(docs)})
            return await _job_response(job, wait)
        if ctype != "multipart/form-data":
            raise APIError(
                415,
                f"Content-Type {ctype or '(none)'} is not accepted; send multipart/form-data with files "
                "in the field 'files', or application/json records",
                field="body",
                kind="unsupported_type",
            )
        form = await request.form(max_files=lim.max_files, max_fields=10)
        uploads = [f for f in form.getlist("files") if not isinstance(f, str)]
        if not uploads:
            raise APIError(400, "no files: send them in the multipart field 'files'", field="files")
        job_id = new_job_id()
        folder = service.upload_folder(job_id)
        names: dict[str, str] = {}
        try:
            for i, up in enumerate(uploads):
                name = check_upload_name(up.filename or "", i)
                saved = folder / f"{i:03d}" / name  # its own folder: the file name stays the title
                saved.parent.mkdir()
                names[str(saved)] = name
                with open(saved, "wb") as fh:
                    while chunk := await up.read(1 << 20):
                        fh.write(chunk)
        except BaseException:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            await form.close()
        try:
            job = service.insert_files(job_id, folder, names, {"files": list(names.values())})
        except BaseException:  # not accepted: the files go
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            raise
        return await _job_response(job, wait)

    @app.delete("/documents/{doc_id}", tags=["documents"], responses=ERRORS, status_code=202)
    async def delete_document(doc_id: str, wait: float = 0.0, _: str = Depends(can_write)) -> JSONResponse:
        """Delete a document and everything derived only from it (a job, as for inserts)."""
        if not _DOC_ID.match(doc_id):
            raise APIError(
                400, f"{doc_id!r} is not a document id (16 hex digits; see GET /documents)", field="doc_id"
            )
        import anyio

        def known() -> bool:
            with service.pool.reader() as rag:
                return doc_id in rag.store.all_document_ids()

        if not await anyio.to_thread.run_sync(known):
            raise APIError(
                404, f"no document {doc_id}; list them with GET /documents", field="doc_id", kind="not_found"
            )
        return await _job_response(service.delete_document(doc_id), wait)

    @app.get("/documents", tags=["documents"], responses=ERRORS)
    def list_documents(_: str = Depends(can_read)) -> dict[str, Any]:
        """The committed documents (`pending_delete` marks an unfinished delete)."""
        with service.pool.reader() as rag:
            return {"documents": rag.documents()}

    @app.get("/jobs/{job_id}", tags=["documents"], responses=ERRORS)
    def get_job(job_id: str, _: str = Depends(can_read)) -> dict[str, Any]:
        """A write's state (`queued`, `running`, `waiting` for another writer or a model server,
        named in `waiting_for`, `done`, `failed`), its progress per stage (what the CLI draws)
        and its result or error. Jobs are stored in the index: they survive a restart (an
        unfinished one is resumed, `resumed: true`), and finished ones are kept for the
        server's job retention (default 7 days)."""
        snap = service.job(job_id)
        if snap is None:
            days = service.job_retention_s / 86400
            raise APIError(
                404,
                f"no job {job_id!r}; finished jobs are kept {days:g} day(s) (--job-retention-days)",
                field="job_id",
                kind="not_found",
            )
        return snap

    # -- the index -------------------------------------------------------------
    @app.get("/methods", tags=["index"], responses=ERRORS)
    def methods(_: str = Depends(can_read)) -> dict[str, Any]:
        """Every registered method, whether this index has its structures (`available`), the
        recommended one, and the `default` (what POST /query uses without a method)."""
        from .. import catalog

        with service.pool.reader() as rag:
            rag.view  # noqa: B018  (follows the latest commit)
            built = {"vectors", *rag.manifest.structures}
            default = rag.default_method()
        rows = []
        for row in catalog.methods():
            requires = list(row.get("requires", []))
            rows.append(
                {
                    "name": row["name"],
                    "available": all(r in built for r in requires),
                    "requires": requires,
                    "uses_llm": row.get("uses_llm", False),
                    "paper": row.get("paper", ""),
                    "doc": row.get("doc", ""),
                    "recommended": bool(row.get("recommended", False)),
                    "default": row["name"] == default,
                }
            )
        return {"methods": rows}

    @app.get("/stats", tags=["index"], responses=ERRORS)
    def stats(_: str = Depends(can_read)) -> dict[str, Any]:
        """What `paretorag inspect --json` prints."""
        with service.pool.reader() as rag:
            out = rag.stats()
            out["documents"] = rag.documents()
        return out

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict[str, Any]:
        """Liveness and the committed generation (no key needed)."""
        m = Manifest.load(service.root)
        return {
            "status": "ok",
            "generation": m.generation if m else None,
            "pending_jobs": service.writer.pending(),
        }

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse, responses=ERRORS)
    def prometheus(_: str = Depends(can_read)) -> Response:
        """Prometheus text format: requests, query latency per method, LLM calls and tokens, jobs."""
        m = Manifest.load(service.root)
        gauges = {
            "paretorag_index_generation": float(m.generation if m else 0),
            "paretorag_index_documents": float(m.counts.get("documents", 0) if m else 0),
            "paretorag_readers_open": float(service.pool.opened),
            "paretorag_jobs_pending": float(service.writer.pending()),
        }
        return PlainTextResponse(metrics.render(gauges), media_type="text/plain; version=0.0.4")

    from .compat import add_compat_routes

    add_compat_routes(app, service, ring, metrics)  # /v1/chat/completions, /v1/models, /api/chat, /api/tags
    app.include_router(graph_router(service, can_read, ERRORS))  # /graph/...: entities, neighborhood

    # -- the page --------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if mcp is not None:
        app.router.routes.append(mcp.route())

    # the JSON record schema, referenced by the upload's requestBody
    original_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original_openapi()
            schema.setdefault("components", {}).setdefault("schemas", {})["Record"] = {
                "type": "object",
                "required": ["text"],
                "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
            }
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


__all__ = ["QueryBody", "create_app"]
