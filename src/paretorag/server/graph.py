"""The graph over HTTP: ``GET /graph/structures``, ``/graph/entities``, ``/graph/relations``
and ``/graph/neighborhood`` (the subgraph around a question's passages, or one entity),
read with the server's shared reader and its API keys (:mod:`paretorag.explore.browse`).

``create_app`` includes :func:`graph_router`; the page's graph view reads these routes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Query

from ..errors import ConfigError, MissingStructureError
from .errors import APIError

if TYPE_CHECKING:
    from ..explore.browse import GraphRef
    from ..rag import RAG
    from .service import Service

MAX_LIMIT = 1000
MAX_NODES = 300

StructureQuery = Query(
    None,
    description="The graph (`entity_graph`, `kg`, `tkg`, `rkg`, `fact_graph`, `concept_graph`...); "
    "default: the first built of GET /graph/structures.",
)


def graph_router(
    service: Service, can_read: Callable[..., str], responses: dict[int | str, Any]
) -> APIRouter:
    """The ``/graph`` routes over ``service``, behind the ``can_read`` key check."""
    router = APIRouter(prefix="/graph", tags=["graph"], responses=responses, dependencies=[Depends(can_read)])
    lim = service.limits

    @contextmanager
    def opened(structure: str | None) -> Iterator[tuple[RAG, GraphRef]]:
        from ..explore.browse import open_graph

        with service.pool.reader() as rag:
            try:
                ref = open_graph(rag.view, structure)
            except MissingStructureError as exc:
                raise APIError(409, str(exc), field="structure", kind="missing_structure") from None
            except ConfigError as exc:
                raise APIError(400, str(exc), field="structure") from None
            yield rag, ref

    def check_limit(limit: int) -> None:
        if not 1 <= limit <= MAX_LIMIT:
            raise APIError(400, f"limit must be between 1 and {MAX_LIMIT}, got {limit}", field="limit")

    @router.get("/structures")
    def structures() -> dict[str, Any]:
        """The built structures that hold a node graph, the default first, with their counts."""
        from ..explore.browse import graph_structures

        with service.pool.reader() as rag:
            view = rag.view
            names = graph_structures(view)
            rows = [
                {"name": n, **{k: v for k, v in view.manifest.structures[n].items() if k != "dir"}}
                for n in names
            ]
        return {"default": names[0] if names else None, "structures": rows}

    @router.get("/entities")
    def entities(
        q: str | None = Query(None, description="Words the entity's name holds (case-insensitive)."),
        limit: int = Query(50, description=f"Rows, 1 to {MAX_LIMIT}."),
        structure: str | None = StructureQuery,
    ) -> dict[str, Any]:
        """Entities (nodes) with their kind, degree and passage count, best match first
        (every node by passages and degree without `q`)."""
        from ..explore.browse import entities as listing

        check_limit(limit)
        with opened(structure) as (_, ref):
            return {"structure": ref.structure, "entities": listing(ref, q, limit)}

    @router.get("/relations")
    def relations(
        q: str | None = Query(None, description="Words the relation holds (names, relation, description)."),
        limit: int = Query(50, description=f"Rows, 1 to {MAX_LIMIT}."),
        structure: str | None = StructureQuery,
    ) -> dict[str, Any]:
        """Relations (edges) by weight: KG triples with their relation, or co-occurrence pairs."""
        from ..explore.browse import relations as listing

        check_limit(limit)
        with opened(structure) as (_, ref):
            return {"structure": ref.structure, "relations": listing(ref, q, limit)}

    @router.get("/neighborhood")
    def neighborhood(
        question: str | None = Query(None, description="The nodes of this question's retrieved passages."),
        entity: str | None = Query(None, description="Or: this entity and its heaviest neighbours."),
        method: str | None = Query(
            None, description="Retrieval method for `question` (default: the server's)."
        ),
        k: int | None = Query(None, description="Passages to retrieve for `question`."),
        max_nodes: int = Query(40, description=f"Nodes at most, 1 to {MAX_NODES}."),
        structure: str | None = StructureQuery,
    ) -> dict[str, Any]:
        """The subgraph around a question's retrieved passages (retrieval only, no LLM answer) or
        around one entity: `nodes` (each with its `passage_ids`, retrieved ones first, its other
        names as `aliases`, and `mentions`: the sentences of those passages that name it, each
        with `chunk_id`, `sentence`, its `start` / `end` in the passage's text and `highlights`,
        the name's `[from, to]` offsets in `sentence`), `edges` among them, and `passages`
        (chunk id -> title, text, retrieved, score)."""
        from ..explore.browse import entity_neighborhood, find_entity, question_neighborhood
        from ..retrieval.methods.base import available_methods

        if (question is None) == (entity is None):
            raise APIError(400, "give exactly one of question and entity", field="question")
        if not 1 <= max_nodes <= MAX_NODES:
            raise APIError(
                400, f"max_nodes must be between 1 and {MAX_NODES}, got {max_nodes}", field="max_nodes"
            )
        if question is not None:
            if not question.strip():
                raise APIError(400, "question is empty; ask something", field="question")
            if len(question) > lim.max_question_chars:
                raise APIError(
                    400,
                    f"question has {len(question)} characters (limit {lim.max_question_chars})",
                    field="question",
                )
        if k is not None and not 1 <= k <= lim.max_k:
            raise APIError(400, f"k must be between 1 and {lim.max_k}, got {k}", field="k")
        if method is not None and method not in available_methods():
            raise APIError(400, f"unknown method {method!r}; choose one of GET /methods", field="method")
        with opened(structure) as (rag, ref):
            if entity is not None:
                try:
                    find_entity(ref, entity)
                except ConfigError as exc:
                    raise APIError(404, str(exc), field="entity", kind="not_found") from None
                return entity_neighborhood(ref, entity, max_nodes=max_nodes)
            return question_neighborhood(
                rag, question or "", structure=ref.structure, method=method, k=k, max_nodes=max_nodes
            )

    return router


__all__ = ["graph_router"]
