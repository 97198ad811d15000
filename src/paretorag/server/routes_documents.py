"""Writes and their jobs: ``POST /documents`` (files or JSON records), ``DELETE
/documents/{doc_id}``, ``GET /documents`` and ``GET /jobs/{job_id}``.

A write is a job run by the service's single writer (:mod:`.jobs`): the routes answer 202
with the job, or wait for it with ``?wait=SECONDS``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from .errors import APIError, error_body, status_of
from .jobs import Job, new_job_id
from .schemas import ERRORS
from .service import check_upload_name, records_to_documents, saved_name

if TYPE_CHECKING:
    from .service import Service

_DOC_ID = re.compile(r"^[0-9a-f]{16}$")

RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["text"],
    "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
}
"""The JSON record of an upload (the OpenAPI component ``Record`` the upload refers to)."""

_UPLOAD_DOC = {
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


def documents_router(
    service: Service, can_read: Callable[..., str], can_write: Callable[..., str]
) -> APIRouter:
    """The document and job routes over ``service``: reads behind ``can_read``, writes behind
    ``can_write``."""
    router = APIRouter()
    lim = service.limits

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

    @router.post(
        "/documents", tags=["documents"], responses=ERRORS, openapi_extra=_UPLOAD_DOC, status_code=202
    )
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
                # its own folder, under the name (a long one shortened, see saved_name)
                saved = folder / f"{i:03d}" / saved_name(name)
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

    @router.delete("/documents/{doc_id}", tags=["documents"], responses=ERRORS, status_code=202)
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

    @router.get("/documents", tags=["documents"], responses=ERRORS)
    def list_documents(_: str = Depends(can_read)) -> dict[str, Any]:
        """The committed documents (`pending_delete` marks an unfinished delete)."""
        with service.pool.reader() as rag:
            return {"documents": rag.documents()}

    @router.get("/jobs/{job_id}", tags=["documents"], responses=ERRORS)
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

    return router


__all__ = ["RECORD_SCHEMA", "documents_router"]
