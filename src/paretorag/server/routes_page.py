"""The web page: ``GET /`` and its files under ``/static`` (not in the OpenAPI description)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"


def page_router() -> APIRouter:
    """The page at ``/`` and the static files it loads."""
    router = APIRouter()

    @router.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    router.mount("/static", StaticFiles(directory=STATIC), name="static")
    return router


__all__ = ["STATIC", "page_router"]
