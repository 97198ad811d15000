"""What the index and the server hold: ``GET /methods``, ``GET /stats`` (the index), ``GET
/healthz`` and ``GET /metrics`` (the service, Prometheus text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse, Response

from .schemas import ERRORS

if TYPE_CHECKING:
    from .metrics import Metrics
    from .service import Service


def status_router(service: Service, can_read: Callable[..., str], metrics: Metrics) -> APIRouter:
    """The index's methods and stats, health and metrics over ``service``; all but ``/healthz``
    behind the ``can_read`` key check."""
    router = APIRouter()

    @router.get("/methods", tags=["index"], responses=ERRORS)
    def methods(_: str = Depends(can_read)) -> dict[str, Any]:
        """Every registered method, whether this index has its structures (`available`), the
        recommended one, and the `default` (what POST /query uses without a method)."""
        from ..retrieval import catalog

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

    @router.get("/stats", tags=["index"], responses=ERRORS)
    def stats(_: str = Depends(can_read)) -> dict[str, Any]:
        """What `paretorag inspect --json` prints."""
        with service.pool.reader() as rag:
            out = rag.stats()
            out["documents"] = rag.documents()
        return out

    @router.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, Any]:
        """Liveness and the committed generation (no key needed). Answered on the event loop
        (a small file read, or one row of a database index), so it stays quick when every worker thread is busy."""
        m = service.backend.load_manifest()
        return {
            "status": "ok",
            "generation": m.generation if m else None,
            "pending_jobs": service.writer.pending(),
        }

    @router.get("/metrics", tags=["service"], response_class=PlainTextResponse, responses=ERRORS)
    def prometheus(_: str = Depends(can_read)) -> Response:
        """Prometheus text format: requests, query latency per method, LLM calls and tokens, jobs."""
        m = service.backend.load_manifest()
        gauges = {
            "paretorag_index_generation": float(m.generation if m else 0),
            "paretorag_index_documents": float(m.counts.get("documents", 0) if m else 0),
            "paretorag_readers_open": float(service.pool.opened),
            "paretorag_query_slots": float(service.pool.size),
            "paretorag_query_slots_busy": float(service.pool.in_use),
            "paretorag_jobs_pending": float(service.writer.pending()),
        }
        return PlainTextResponse(metrics.render(gauges), media_type="text/plain; version=0.0.4")

    return router


__all__ = ["status_router"]
