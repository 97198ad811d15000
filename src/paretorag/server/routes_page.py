"""The web page: ``GET /`` and its files under ``/static`` (not in the OpenAPI description).

The page loads only its own files (``app.js``, ``style.css``, the vendored cytoscape.js), so
it is served with a strict Content-Security-Policy: nothing from other origins, no inline
script, and no framing by other sites (``X-Frame-Options: DENY`` for older browsers).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"

CYTOSCAPE_STYLE = ".__________cytoscape_container { position: relative; }"
"""The one inline style the page needs: cytoscape.js adds it as a ``<style>`` element when it
draws a graph, so the policy allows it by its hash."""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = "; ".join(
    (
        "default-src 'self'",
        f"style-src 'self' {_hash(CYTOSCAPE_STYLE)}",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {"Content-Security-Policy": CSP, "X-Frame-Options": "DENY"}


def page_router() -> APIRouter:
    """The page at ``/`` and the static files it loads."""
    router = APIRouter()

    @router.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    router.mount("/static", StaticFiles(directory=STATIC), name="static")
    return router


__all__ = ["CSP", "CYTOSCAPE_STYLE", "STATIC", "page_router"]
