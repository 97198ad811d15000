"""An MCP server over one index: the tools ``search``, ``answer`` and ``list_documents``.

Built on the official ``mcp`` SDK (``mcp.server.mcpserver.MCPServer``, the v2 name of
FastMCP; needs ``paretorag[serve]``). Two transports serve the same tools:

- ``paretorag mcp --index DIR`` speaks MCP over stdin/stdout (what Claude Desktop and
  other MCP clients start as a subprocess); :func:`run_stdio`.
- ``paretorag serve`` answers streamable HTTP at ``/mcp`` with the server's API keys
  (:mod:`paretorag.server.mcp`).

Every tool reads through one shared :class:`~paretorag.RAG` (it answers concurrent
questions); the SDK runs each call in a worker thread, so a slow answer does not hold up
the others. A :class:`~paretorag.errors.ParetoragError` (unknown method, empty question,
missing structure) comes back to the client as a tool error with the message that names
the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from .. import __version__
from ..errors import ConfigError, MissingDependencyError, ParetoragError
from ..types import MAX_K

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..rag import RAG

INSTRUCTIONS = (
    "Graph-based retrieval over one document index. `search` returns ranked passages with their "
    "document ids, titles and scores (no LLM call); `answer` answers a question with citations "
    "([n] markers refer to the passages listed with it); `list_documents` lists what the index holds."
)

Question = Annotated[str, Field(description="The question, in natural language.")]
Method = Annotated[
    str | None,
    Field(
        description="A retrieval method (default: the index's recommended one), e.g. vanilla, bm25, fusion."
    ),
]
TopK = Annotated[
    int | None, Field(description=f"Passages to retrieve, 1 to {MAX_K} (default: the method's own).")
]


def _sdk() -> type[MCPServer[Any]]:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise MissingDependencyError(
            f"the MCP server needs the mcp package ({exc.name or 'mcp'} is not installed): "
            "pip install 'paretorag[serve]'"
        ) from None
    return MCPServer


def _tool_error(exc: ParetoragError) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(str(exc))  # the message names the fix; logged without a traceback


def _check_k(k: int | None) -> None:
    if k is not None and not 1 <= k <= MAX_K:
        raise ConfigError(f"k must be between 1 and {MAX_K}, got {k}; e.g. k=5")


def search_result(rag: RAG, question: str, method: str | None, k: int | None) -> dict[str, Any]:
    """Ranked passages for ``question`` (retrieval only, no answer)."""
    _check_k(k)
    method = method or rag.default_method()
    retrieval, items = rag.retrieve(question, method, k=k)
    passages = [
        {
            "rank": rank,
            "doc_id": it.doc_id,
            "chunk_id": it.chunk_id,
            "title": it.title,
            **({"heading": it.heading} if it.heading else {}),
            "score": round(float(it.score), 6),
            "text": it.text,
        }
        for rank, it in enumerate(items, start=1)
    ]
    return {"question": question.strip(), "method": method, "mode": retrieval.mode, "passages": passages}


def answer_result(rag: RAG, question: str, method: str | None, k: int | None) -> dict[str, Any]:
    """The answer with its citations and the passages its ``[n]`` markers refer to."""
    _check_k(k)
    ans = rag.query(question, method=method or rag.default_method(), k=k)
    return {
        "question": ans.question,
        "answer": ans.text,
        "short_answer": ans.short,
        "method": ans.method,
        "answered_by": ans.answered_by,
        "citations": [c.to_json() for c in ans.citations],
        "passages": [
            {
                "marker": n,
                "doc_id": c.doc_id,
                "chunk_id": c.chunk_id,
                "title": c.title,
                **({"heading": c.heading} if c.heading else {}),
                "score": round(float(c.score), 6),
            }
            for n, c in enumerate(ans.contexts, start=1)
        ],
        "warnings": list(ans.warnings),
    }


def documents_result(rag: RAG) -> dict[str, Any]:
    """The committed documents (id, title, source, chunks) and the index's counts."""
    docs = [
        {
            "doc_id": d["doc_id"],
            "title": d.get("title", ""),
            "source": d.get("source", ""),
            "chunks": int(d.get("n_chunks", 0)),
        }
        for d in rag.documents()
    ]
    counts = rag.manifest.counts
    return {
        "documents": docs,
        "counts": {"documents": len(docs), "chunks": int(counts.get("chunks", 0))},
    }


def build_server(
    reader: Callable[[], AbstractContextManager[RAG]], name: str = "paretorag"
) -> MCPServer[Any]:
    """The MCP server and its three tools; ``reader()`` lends the RAG for one call."""
    server = _sdk()(name=name, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    def call(fn: Callable[[RAG], dict[str, Any]]) -> dict[str, Any]:
        try:
            with reader() as rag:
                return fn(rag)
        except ParetoragError as exc:
            raise _tool_error(exc) from None

    @server.tool(title="Search the index")
    def search(question: Question, method: Method = None, k: TopK = None) -> dict[str, Any]:
        """Retrieve the passages most relevant to a question, ranked, with document ids, titles,
        scores and text. No LLM call."""
        return call(lambda rag: search_result(rag, question, method, k))

    @server.tool(title="Answer with citations")
    def answer(question: Question, method: Method = None, k: TopK = None) -> dict[str, Any]:
        """Answer a question from the index, with citations: each [n] in the answer refers to
        passage n of `passages` (document id, title, score)."""
        return call(lambda rag: answer_result(rag, question, method, k))

    @server.tool(title="List the documents")
    def list_documents() -> dict[str, Any]:
        """The documents in the index: ids, titles, sources and chunk counts."""
        return call(documents_result)

    return server


def run_stdio(index_dir: Path, *, llm: str | None = None) -> None:
    """``paretorag mcp``: serve the tools over stdin/stdout until the client closes them."""
    from ..answering.llms import make_llm
    from ..rag import RAG

    _sdk()  # fail before opening anything when mcp is missing
    answer_llm = make_llm(llm) if llm else None  # for this server's answers, not saved in the index
    with RAG.open(index_dir, create=False, llm=answer_llm) as rag:

        @contextmanager
        def lend() -> Iterator[RAG]:
            yield rag

        build_server(lend).run("stdio")


__all__ = ["answer_result", "build_server", "documents_result", "run_stdio", "search_result"]
