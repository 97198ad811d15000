"""The request and error bodies of the JSON API, as the OpenAPI description shows them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
    reader: Literal["reader", "reader-nospan", "reader-onehop", "extractive", "llm"] | None = Field(
        None,
        description="Who answers: the offline reader (short answer, evidence, confidence, found; "
        "reader-nospan: without its span model, reader-onehop: without its second retrieval), "
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
"""The error responses the routes document (``responses=ERRORS``)."""

__all__ = ["ERRORS", "ErrorBody", "ErrorResponse", "QueryBody"]
