"""OpenAI- and Ollama-compatible chat over the served index, so chat front ends use it as a model.

Routes (added to the app by :func:`add_compat_routes`):

- ``GET /v1/models``, ``GET /v1/models/{model}``, ``POST /v1/chat/completions`` (streaming
  as server-sent ``chat.completion.chunk`` events, ended by ``data: [DONE]``), in OpenAI's
  shapes; errors as ``{"error": {"message", "type", "param", "code"}}``, so the ``openai``
  client raises its typed errors.
- ``GET /api/tags``, ``GET /api/version``, ``POST /api/chat`` (newline-delimited JSON when
  ``stream`` is true or absent, as Ollama does), in Ollama's shapes; errors as
  ``{"error": "message"}``.

Model ids are ``INDEX/METHOD``: the index directory's name and a method this index has
built (``GET /v1/models`` lists them); a bare ``METHOD`` is accepted too, and Ollama's
``:latest`` tag is ignored.

The last user message is the question. Earlier turns are condensed into a standalone
question: by the index's LLM when it generates text, else (offline) by appending, in
parentheses, the names (capitalised phrases) of the earlier user turns that the last
message does not already mention, newest first, at most :data:`CARRY_MAX` of them.

The reply's text is the answer with its ``[n]`` markers, then a ``Sources:`` list of the
cited passages' titles. The same data is structured in an extra ``paretorag`` field (on
the completion, on the last streamed chunk, on Ollama's final object): ``question`` (what
was asked of the index), ``condensed``, ``method``, ``citations`` (marker, chunk, document,
title, passage text), ``usage`` (LLM calls and tokens, condensation included) and
``answered_by``.

Keys: the server's API keys (:mod:`paretorag.server.auth`), sent as ``Authorization:
Bearer KEY`` (what the ``openai`` client sends) or ``X-API-Key``; read-only keys can chat.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from .. import __version__
from ..errors import ParetoragError
from ..manifest import FILENAME
from ..methods.base import available_methods
from ..providers.base import Message, Task, is_generative
from ..providers.base import Request as LLMRequest
from ..providers.notices import listening
from ..types import Answer, Usage
from .auth import KeyRing, key_from_headers
from .errors import APIError, status_of
from .metrics import Metrics
from .service import Service

log = logging.getLogger("paretorag.server")

OLLAMA_VERSION = "0.6.0"  # what GET /api/version reports (clients check the API level)
CARRY_MAX = 4  # names carried over from earlier turns by the offline condensation
HISTORY_CHARS = 600  # each earlier turn, cut to this, in the LLM's condensation prompt
CONDENSE_TOKENS = 96

# capitalised words that start sentences or questions rather than name things
_STOP = frozenset(
    (  # noqa: SIM905  (a word list reads better as words)
        "a about after also an and any are as at be but by can could did do does for from give "
        "hello hi how i if in is it its let list me my no now of ok okay on or please say she he "
        "should show so tell thank thanks that the then these they this those to was we were what "
        "what's when where which who who's whom whose why will with would yes you your explain "
        "describe compare summarize summarise"
    ).split()
)
_WORD = r"[A-Z](?:[\w'’-]|\.(?=\w))*"  # "U.S." is one word; a final period ends it
_NAME = re.compile(rf"\b{_WORD}(?:\s+(?:(?:of|the|de|la|van|von|der|and|&)\s+)?{_WORD})*")
_SOURCES = re.compile(r"\n+Sources:\n(?:\[\d+\][^\n]*\n?)+\s*$")


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


def _compat(exc: BaseException, ollama: bool) -> CompatError:
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


# -- condensing a conversation -------------------------------------------------------------
def names_in(text: str) -> list[str]:
    """Capitalised phrases of ``text`` (``"Tell me about Sea Otters"`` -> ``["Sea Otters"]``),
    without the sentence-starting words of :data:`_STOP`."""
    out: list[str] = []
    for m in _NAME.finditer(text):
        words = m.group(0).rstrip(".'’").split()
        while words and words[0].lower() in _STOP:
            words.pop(0)
        while words and words[-1].lower() in _STOP:
            words.pop()
        name = " ".join(words)
        if name and name not in out:
            out.append(name)
    return out


def condense_offline(history: list[str], last: str) -> str:
    """``last`` with the names of the earlier user turns (``history``, oldest first) that it
    lacks, newest first, at most :data:`CARRY_MAX`: ``"What do they build? (Beavers)"``."""
    have = last.lower()
    carried: list[str] = []
    for turn in reversed(history):
        for name in names_in(turn):
            if name.lower() not in have and name not in carried:
                carried.append(name)
    carried = carried[:CARRY_MAX]
    return f"{last.rstrip()} ({', '.join(carried)})" if carried else last


def _condense_prompt(messages: list[ChatMessage], last: str) -> LLMRequest:
    lines = []
    for m in messages:
        if m.role in ("user", "assistant"):
            text = _SOURCES.sub("", m.text()).strip()
            if len(text) > HISTORY_CHARS:
                text = text[:HISTORY_CHARS] + "..."
            lines.append(f"{'User' if m.role == 'user' else 'Assistant'}: {text}")
    prompt = (
        "Conversation:\n" + "\n".join(lines) + f"\n\nFollow-up question: {last}\n\n"
        "Rewrite the follow-up question so that it can be understood without the conversation "
        "(name what it refers to). Reply with the question only."
    )
    return LLMRequest(
        (
            Message("system", "You rewrite follow-up questions as standalone questions."),
            Message("user", prompt),
        ),
        Task("other"),
        max_tokens=CONDENSE_TOKENS,
    )


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip().strip('"“”').strip()
        if line.lower().startswith(("standalone question:", "question:")):
            line = line.split(":", 1)[1].strip()
        if line:
            return line
    return ""


# -- the shared core -----------------------------------------------------------------------
class Chat:
    """Answers chat requests of either dialect with the service's shared reading RAG."""

    def __init__(self, service: Service, ring: KeyRing, metrics: Metrics | None) -> None:
        self.service = service
        self.ring = ring
        self.metrics = metrics
        self.index_name = service.root.name or "index"

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

    def models(self, rag: Any = None) -> list[tuple[str, str]]:
        """``(model id, method)`` for every method this index has built (read with ``rag``, a
        reading RAG the caller holds, else with one taken here)."""
        if rag is None:
            with self.service.pool.reader() as held:
                return self.models(held)
        rag.view  # noqa: B018  (follows the latest commit)
        return [(f"{self.index_name}/{m}", m) for m in available_methods() if rag.built(m)]

    def created(self) -> int:
        try:
            return int((self.service.root / FILENAME).stat().st_mtime)
        except OSError:
            return 0

    def method_of(self, model: str, ollama: bool, rag: Any = None) -> tuple[str, str]:
        """The model id as listed and its method; 404 (``model_not_found``) for others."""
        name = model.strip()
        if ollama and name.endswith(":latest"):
            name = name[: -len(":latest")]
        found = dict(self.models(rag))
        if name in found:
            return name, found[name]
        by_method = {m: i for i, m in found.items()}
        if name in by_method:
            return by_method[name], name
        listed = ", ".join(sorted(found)) or "(none: build a method first)"
        raise CompatError(
            404,
            f"unknown model {model!r}; this server's models are INDEX/METHOD ids: {listed}",
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
            question = ""
            if is_generative(rag._base_llm()):
                llm = rag._llm_for(usage, "query.condense")
                question = _first_line(llm.complete(_condense_prompt(earlier, last)).text)
            if not question:
                question = condense_offline([m.text() for m in earlier if m.role == "user"], last)
        limit = self.service.limits.max_question_chars
        if len(question) > limit:
            raise CompatError(
                400,
                f"the question has {len(question)} characters (limit {limit}); shorten the last message",
                param="messages",
                ollama=ollama,
            )
        return Turn(model, method, question, question != last, usage)

    def record(self, ans: Answer) -> None:
        if self.metrics is not None:
            total = ans.usage.total
            self.metrics.query(
                ans.method, ans.timings["total"], total.calls, total.prompt_tokens, total.completion_tokens
            )

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

    def run(self, request: Request, raw: bytes, ollama: bool) -> tuple[Turn, Iterator[tuple[str, Any]]]:
        """Authorize, parse, condense and retrieve (errors here are HTTP errors), then the answer
        as events: ``("token", text)``, ``("wait", message)``, then ``("done", Answer)`` or
        ``("error", exception)``. The reading slot is held until the events are consumed."""
        self.authorize(request, ollama)
        body = self.body(raw, ollama)
        try:
            rag = self.service.pool.acquire()
        except (APIError, ParetoragError, OSError) as exc:
            raise _compat(exc, ollama) from None
        try:
            turn = self.turn(rag, body, ollama)
            t0 = time.perf_counter()
            retrieval, items = rag.retrieve(turn.question, turn.method)
            retrieval_s = time.perf_counter() - t0
        except (APIError, ParetoragError, OSError) as exc:
            self.service.pool.release(rag)
            raise _compat(exc, ollama) from None
        except BaseException:
            self.service.pool.release(rag)
            raise

        def events() -> Iterator[tuple[str, Any]]:
            pieces: queue.Queue[tuple[str, Any] | None] = queue.Queue()
            outcome: dict[str, Any] = {}

            def waiting(message: str) -> None:
                if message:
                    pieces.put(("wait", message))

            def generate() -> None:
                try:
                    with listening(waiting):
                        ans = rag.answer(
                            turn.question,
                            retrieval,
                            items,
                            method=turn.method,
                            retrieval_seconds=retrieval_s,
                            on_token=lambda text: pieces.put(("token", text)),
                        )
                    ans.usage.merge(turn.usage)
                    outcome["answer"] = ans
                except (ParetoragError, OSError) as exc:
                    outcome["error"] = exc
                finally:
                    pieces.put(None)

            worker = threading.Thread(target=generate, name="paretorag-chat", daemon=True)
            try:
                worker.start()
                while (piece := pieces.get()) is not None:
                    yield piece
                worker.join()
                if "answer" in outcome:
                    self.record(outcome["answer"])
                    yield ("done", outcome["answer"])
                else:  # a known error, or generate() died of a bug (logged by the thread)
                    yield ("error", outcome.get("error", RuntimeError("the answer failed")))
            finally:
                if worker.is_alive():  # the client went away: let the answer finish first
                    worker.join()
                self.service.pool.release(rag)

        return turn, events()

    def complete(self, request: Request, raw: bytes, ollama: bool) -> tuple[Turn, Answer]:
        """The whole answer (the events consumed here)."""
        turn, events = self.run(request, raw, ollama)
        outcome: dict[str, Any] = {}
        for kind, value in events:  # to the end: that gives the reading slot back
            outcome[kind] = value
        if "done" in outcome:
            return turn, outcome["done"]
        raise _compat(outcome.get("error", RuntimeError("the answer ended without a result")), ollama)


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


def _openai_usage(ans: Answer) -> dict[str, int]:
    total = ans.usage.total
    return {
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "total_tokens": total.prompt_tokens + total.completion_tokens,
    }


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _streaming(lines: Iterator[str], media_type: str) -> StreamingResponse:
    return StreamingResponse(
        lines, media_type=media_type, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


def add_compat_routes(app: FastAPI, service: Service, ring: KeyRing, metrics: Metrics | None = None) -> Chat:
    """Add the OpenAI (``/v1/...``) and Ollama (``/api/...``) routes to ``app``."""
    chat = Chat(service, ring, metrics)

    @app.exception_handler(CompatError)
    async def _compat_error(request: Request, exc: CompatError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse(exc.body(), status_code=exc.status, headers=headers)

    def guarded(ollama: bool, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except (APIError, ParetoragError, OSError) as exc:
            raise _compat(exc, ollama) from None

    # -- OpenAI ------------------------------------------------------------------------------
    @app.get("/v1/models", tags=["compatible"])
    def openai_models(request: Request) -> dict[str, Any]:
        """The index's models for OpenAI clients: one `INDEX/METHOD` id per built method."""
        chat.authorize(request, False)
        created = chat.created()
        rows = guarded(False, chat.models)
        return {
            "object": "list",
            "data": [
                {"id": i, "object": "model", "created": created, "owned_by": "paretorag"} for i, _ in rows
            ],
        }

    @app.get("/v1/models/{model:path}", tags=["compatible"])
    def openai_model(model: str, request: Request) -> dict[str, Any]:
        chat.authorize(request, False)
        name, _ = guarded(False, lambda: chat.method_of(model, False))
        return {"id": name, "object": "model", "created": chat.created(), "owned_by": "paretorag"}

    @app.post("/v1/chat/completions", tags=["compatible"])
    async def openai_chat(request: Request) -> Any:
        """OpenAI chat completions over the index (`stream: true` for server-sent chunks). The
        reply cites its passages as `[n]` plus a Sources list; the extra field `paretorag` holds
        the question asked, the citations and the usage."""
        import anyio

        raw = await request.body()
        probe = _peek_stream(raw)
        if not probe:
            turn, ans = await anyio.to_thread.run_sync(chat.complete, request, raw, False)
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": turn.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply_text(ans)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _openai_usage(ans),
                "paretorag": chat.extra(turn, ans),
            }
        turn, events = await anyio.to_thread.run_sync(chat.run, request, raw, False)
        options = json.loads(raw).get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return _streaming(_openai_chunks(chat, turn, events, include_usage), "text/event-stream")

    # -- Ollama ------------------------------------------------------------------------------
    @app.get("/api/version", tags=["compatible"])
    def ollama_version() -> dict[str, Any]:
        """The Ollama API level emulated (and paretorag's version)."""
        return {"version": OLLAMA_VERSION, "paretorag": __version__}

    @app.get("/api/tags", tags=["compatible"])
    def ollama_tags(request: Request) -> dict[str, Any]:
        """The index's models for Ollama clients (the ids of GET /v1/models)."""
        chat.authorize(request, True)
        modified = datetime.fromtimestamp(chat.created(), UTC).isoformat().replace("+00:00", "Z")
        rows = guarded(True, chat.models)
        return {
            "models": [
                {
                    "name": i,
                    "model": i,
                    "modified_at": modified,
                    "size": 0,
                    "digest": uuid.uuid5(uuid.NAMESPACE_URL, f"paretorag:{i}").hex,
                    "details": {"format": "paretorag", "family": "paretorag", "parameter_size": m},
                }
                for i, m in rows
            ]
        }

    @app.post("/api/chat", tags=["compatible"])
    async def ollama_chat(request: Request) -> Any:
        """Ollama chat over the index: newline-delimited JSON unless `stream` is false; the last
        object (`done: true`) carries the `paretorag` field."""
        import anyio

        raw = await request.body()
        if _peek_stream(raw, default=True) is False:
            turn, ans = await anyio.to_thread.run_sync(chat.complete, request, raw, True)
            return {
                **_ollama_final(turn, ans),
                "message": {"role": "assistant", "content": reply_text(ans)},
                "paretorag": chat.extra(turn, ans),
            }
        turn, events = await anyio.to_thread.run_sync(chat.run, request, raw, True)
        return _streaming(_ollama_lines(chat, turn, events), "application/x-ndjson")

    return chat


def _peek_stream(raw: bytes, default: bool = False) -> bool:
    """The body's ``stream`` flag (a malformed body is reported later, by the parser)."""
    try:
        value = json.loads(raw).get("stream")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return default
    return default if value is None else bool(value)


def _openai_chunks(
    chat: Chat, turn: Turn, events: Iterator[tuple[str, Any]], include_usage: bool
) -> Iterator[str]:
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for kind, value in events:
        if kind == "token" and value:
            yield chunk({"content": value})
        elif kind == "done":
            ans: Answer = value
            if tail := sources(ans):
                yield chunk({"content": tail})
            yield chunk({}, "stop", paretorag=chat.extra(turn, ans))
            if include_usage:
                body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.model}
                yield f"data: {json.dumps({**body, 'choices': [], 'usage': _openai_usage(ans)})}\n\n"
        elif kind == "error":
            yield f"data: {json.dumps(_compat(value, False).body(), ensure_ascii=False)}\n\n"
        # waits ("wait") are not part of OpenAI's stream: the next token ends them
    yield "data: [DONE]\n\n"


def _ollama_final(turn: Turn, ans: Answer) -> dict[str, Any]:
    total = ans.usage.total
    return {
        "model": turn.model,
        "created_at": _now_iso(),
        "done": True,
        "done_reason": "stop",
        "total_duration": int(ans.timings.get("total", 0.0) * 1e9),
        "load_duration": 0,
        "prompt_eval_count": total.prompt_tokens,
        "prompt_eval_duration": int(ans.timings.get("retrieval", 0.0) * 1e9),
        "eval_count": total.completion_tokens,
        "eval_duration": int(ans.timings.get("generation", 0.0) * 1e9),
    }


def _ollama_lines(chat: Chat, turn: Turn, events: Iterator[tuple[str, Any]]) -> Iterator[str]:
    def line(content: str) -> str:
        body = {
            "model": turn.model,
            "created_at": _now_iso(),
            "message": {"role": "assistant", "content": content},
            "done": False,
        }
        return json.dumps(body, ensure_ascii=False) + "\n"

    for kind, value in events:
        if kind == "token" and value:
            yield line(value)
        elif kind == "done":
            ans: Answer = value
            if tail := sources(ans):
                yield line(tail)
            final = {
                **_ollama_final(turn, ans),
                "message": {"role": "assistant", "content": ""},
                "paretorag": chat.extra(turn, ans),
            }
            yield json.dumps(final, ensure_ascii=False) + "\n"
        elif kind == "error":
            yield json.dumps(_compat(value, True).body(), ensure_ascii=False) + "\n"


__all__ = ["Chat", "CompatError", "add_compat_routes", "condense_offline", "names_in"]
