"""OpenAI- and Ollama-compatible chat over the served index, so chat front ends use it as a model.

Routes (added to the app by :func:`add_compat_routes`; :mod:`.compat_openai`,
:mod:`.compat_ollama`, over the core they share, :mod:`.compat_common`):

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
message does not already mention, newest first, at most :data:`CARRY_MAX` of them
(:mod:`.compat_condense`).

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

from fastapi import FastAPI

from .auth import KeyRing
from .compat_common import Chat, CompatError, compat_error
from .compat_condense import CARRY_MAX, condense_offline, names_in
from .compat_ollama import ollama_router
from .compat_openai import openai_router
from .metrics import Metrics
from .service import Service


def add_compat_routes(app: FastAPI, service: Service, ring: KeyRing, metrics: Metrics | None = None) -> Chat:
    """Add the OpenAI (``/v1/...``) and Ollama (``/api/...``) routes to ``app``."""
    chat = Chat(service, ring, metrics)
    app.exception_handler(CompatError)(compat_error)
    app.include_router(openai_router(chat))
    app.include_router(ollama_router(chat))
    return chat


__all__ = ["CARRY_MAX", "Chat", "CompatError", "add_compat_routes", "condense_offline", "names_in"]
