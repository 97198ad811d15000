"""The core the OpenAI- and Ollama-compatible routes share (:mod:`.compat`): errors in the
caller's dialect, the chat body, the model ids (``INDEX/METHOD``), the question asked of the
index, the answer as events, and the citations (the ``Sources:`` list and the ``paretorag``
field)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ParetoragError
from ..retrieval.methods.base import METHODS, available_methods
from ..storage.manifest import FILENAME
from ..types import Answer, Usage
from .auth import KeyRing, key_from_headers
from .compat_condense import condense
from .errors import APIError, status_of
from .metrics import Metrics
from .service import Service
from .streaming import AnswerStream

log = logging.getLogger("paretorag.server")


class CompatError(Exception):
    """An error answered in the caller's dialect (OpenAI's or Ollama's)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        ollama: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code
        self.param = param
        self.ollama = ollama

    def body(self) -> dict[str, Any]:
        if self.ollama:
            return {"error": str(self)}
        return {"error": {"message": str(self), "type": self.kind, "param": self.param, "code": self.code}}


async def compat_error(request: Request, exc: CompatError) -> JSONResponse:
    """The app's handler for :class:`CompatError`."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


def to_compat(exc: BaseException, ollama: bool) -> CompatError:
    """Our error (APIError, ParetoragError, OSError) in OpenAI's vocabulary."""
    status, kind, fld = status_of(exc)
    message = (
        str(exc) if isinstance(exc, APIError | ParetoragError) else "internal error; see the server's log"
    )
    if status >= 500:
        log.error("%s %s", type(exc).__name__, exc)
    openai_kind = {401: "invalid_request_error", 403: "permission_error", 429: "rate_limit_error"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    return CompatError(status, message, kind=openai_kind, code=kind, param=fld, ollama=ollama)


def guarded(ollama: bool, fn: Callable[[], Any]) -> Any:
    """``fn()``, its errors in the caller's dialect."""
    try:
        return fn()
    except (APIError, ParetoragError, OSError) as exc:
        raise to_compat(exc, ollama) from None


def peek_stream(raw: bytes, default: bool = False) -> bool:
    """The body's ``stream`` flag (a malformed body is reported later, by the parser)."""
    try:
        value = json.loads(raw).get("stream")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return default
    return default if value is None else bool(value)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The text of the message (OpenAI content parts: the ``text`` ones, joined)."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatBody(BaseModel):
    """The fields both dialects share; the rest (temperature, tools, options...) is ignored."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage]
    stream: bool | None = None


@dataclass
class Turn:
    """A chat request made ready: the model, its method and the question asked of the index."""

    model: str
    method: str
    question: str
    condensed: bool
    usage: Usage


class Chat:
    """Answers chat requests of either dialect with the service's shared reading RAG."""

    def __init__(self, service: Service, ring: KeyRing, metrics: Metrics | None) -> None:
        self.service = service
        self.ring = ring
        self.metrics = metrics
        self.index_name = (service.root.name if isinstance(service.root, Path) else "") or "index"

    def authorize(self, request: Request, ollama: bool) -> None:
        if not self.ring:
            return
        key = key_from_headers(request.headers.get("authorization"), request.headers.get("x-api-key"))
        if key is None:
            raise CompatError(
                401,
                "missing API key; send the header 'Authorization: Bearer KEY' (the openai client's api_key)",
                code="invalid_api_key",
                ollama=ollama,
            )
        if self.ring.role(key) is None:
            raise CompatError(
                401, "unknown API key; check the key you send", code="invalid_api_key", ollama=ollama
            )

    def models(self, rag: Any = None, *, presets: bool = False) -> list[tuple[str, str]]:
        """``(model id, method)`` for every method this index has built (read with ``rag``, a
        reading RAG the caller holds, else with one taken here). Presets (a method's ablations
        and variants, such as ``e2graphrag-no-dense``) only with ``presets``: the model lists
        leave them out, a request names them all the same."""
        if rag is None:
            with self.service.pool.reader() as held:
                return self.models(held, presets=presets)
        rag.view  # noqa: B018  (follows the latest commit)
        return [
            (f"{self.index_name}/{m}", m)
            for m in available_methods()
            if (presets or not METHODS[m].preset) and rag.built(m)
        ]

    def created(self) -> int:
        if not isinstance(self.service.root, Path):
            return 0  # a database index: no file to date it by
        try:
            return int((self.service.root / FILENAME).stat().st_mtime)
        except OSError:
            return 0

    def method_of(self, model: str, ollama: bool, rag: Any = None) -> tuple[str, str]:
        """The model id as listed and its method; 404 (``model_not_found``) for others."""
        name = model.strip()
        if ollama and name.endswith(":latest"):
            name = name[: -len(":latest")]
        found = dict(self.models(rag, presets=True))
        if name in found:
            return name, found[name]
        by_method = {m: i for i, m in found.items()}
        if name in by_method:
            return by_method[name], name
        listed = ", ".join(sorted(i for i, m in found.items() if not METHODS[m].preset))
        raise CompatError(
            404,
            f"unknown model {model!r}; this server's models are INDEX/METHOD ids: "
            + (
                f"{listed} (and the presets of these methods, see GET /methods)"
                if listed
                else "(none: build a method first)"
            ),
            code="model_not_found",
            param="model",
            ollama=ollama,
        )

    def body(self, raw: bytes, ollama: bool) -> ChatBody:
        try:
            body = ChatBody.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "body"
            raise CompatError(
                400, f"{where}: {first.get('msg', 'invalid')}", param=where, ollama=ollama
            ) from None
        if not body.messages:
            raise CompatError(
                400, "messages is empty; send at least one user message", param="messages", ollama=ollama
            )
        return body

    def turn(self, rag: Any, body: ChatBody, ollama: bool) -> Turn:
        """The question for the index: the last user message, condensed with the earlier turns."""
        model, method = self.method_of(body.model, ollama, rag)  # the slot held, not a second one
        users = [i for i, m in enumerate(body.messages) if m.role == "user"]
        if not users or not body.messages[users[-1]].text().strip():
            raise CompatError(
                400,
                "no user message with text; the last user message is the question",
                param="messages",
                ollama=ollama,
            )
        last = body.messages[users[-1]].text().strip()
        earlier = [
            m for m in body.messages[: users[-1]] if m.role in ("user", "assistant") and m.text().strip()
        ]
        usage = Usage()
        question = last
        if any(m.role == "user" for m in earlier):
            question = condense(rag, [(m.role, m.text()) for m in earlier], last, usage)
        limit = self.service.limits.max_question_chars
        if len(question) > limit:
            raise CompatError(
                400,
                f"the question has {len(question)} characters (limit {limit}); shorten the last message",
                param="messages",
                ollama=ollama,
            )
        return Turn(model, method, question, question != last, usage)

    def extra(self, turn: Turn, ans: Answer) -> dict[str, Any]:
        """The structured ``paretorag`` field."""
        total = ans.usage.total
        texts = {c.chunk_id: c.text for c in ans.contexts}
        return {
            "question": turn.question,
            "condensed": turn.condensed,
            "method": ans.method,
            "answered_by": ans.answered_by,
            "citations": [{**c.to_json(), "text": texts.get(c.chunk_id, "")} for c in ans.citations],
            "usage": {
                "llm_calls": total.calls,
                "prompt_tokens": total.prompt_tokens,
                "completion_tokens": total.completion_tokens,
            },
        }

    def run(self, request: Request, raw: bytes, ollama: bool) -> tuple[Turn, AnswerStream]:
        """Authorize, parse, condense and retrieve (errors here are HTTP errors), then start the
        answer: its :class:`~.streaming.AnswerStream` holds the query slot until it ends or is
        cancelled (the client went away)."""
        self.authorize(request, ollama)
        body = self.body(raw, ollama)
        try:
            rag = self.service.pool.acquire()
        except (APIError, ParetoragError, OSError) as exc:
            raise to_compat(exc, ollama) from None
        try:
            turn = self.turn(rag, body, ollama)
            t0 = time.perf_counter()
            retrieval, items = rag.retrieve(turn.question, turn.method)
            retrieval_s = time.perf_counter() - t0
        except (APIError, ParetoragError, OSError) as exc:
            self.service.pool.release(rag)
            raise to_compat(exc, ollama) from None
        except BaseException:
            self.service.pool.release(rag)
            raise

        def answer(on_token: Callable[[str], None]) -> Answer:
            ans: Answer = rag.answer(
                turn.question,
                retrieval,
                items,
                method=turn.method,
                retrieval_seconds=retrieval_s,
                on_token=on_token,
            )
            ans.usage.merge(turn.usage)
            if self.metrics is not None:
                self.metrics.answered(ans)
            return ans

        return turn, self.service.stream(rag, answer, name="paretorag-chat")

    def complete(self, request: Request, raw: bytes, ollama: bool) -> tuple[Turn, Answer]:
        """The whole answer (waited for here, in a worker thread)."""
        turn, stream = self.run(request, raw, ollama)
        kind, value = stream.result()
        if kind == "done":
            return turn, value
        raise to_compat(value, ollama)


def sources(ans: Answer) -> str:
    """The ``Sources:`` list of the cited passages (empty without citations)."""
    titles: dict[int, str] = {}
    for c in ans.citations:
        titles.setdefault(c.marker, c.title or c.doc_id)
    if not titles:
        return ""
    return "\n\nSources:\n" + "\n".join(f"[{n}] {t}" for n, t in sorted(titles.items()))


def reply_text(ans: Answer) -> str:
    return ans.text + sources(ans)


__all__ = [
    "Chat",
    "ChatBody",
    "CompatError",
    "Turn",
    "compat_error",
    "guarded",
    "peek_stream",
    "reply_text",
    "sources",
    "to_compat",
]
