"""``paretorag query`` and ``chat``: answers with their passages, or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import ConfigError, ParetoragError
from . import exitcodes
from .common import (
    AnswerLLMOpt,
    IndexOpt,
    LLMMaxWaitOpt,
    _configured,
    _fail,
    _llm_max_wait,
    _said,
    _text,
    err,
    index_location,
    out,
)

if TYPE_CHECKING:
    from ..rag import RAG


def _method_or_default(rag: RAG, method: str | None) -> str:
    """``--method``, else the index's default, saying on stderr when the recommended one is not built."""
    if method is not None:
        return method
    from ..retrieval.methods import recommended_method

    method, rec = rag.default_method(), recommended_method()
    if method != rec:
        err.print(
            f"[dim]note: answering with {method!r}; the recommended method {rec!r} is not built in this "
            f"index (add it with `paretorag index --index {rag.root} --methods {rec}`)[/]"
        )
    return method


def _check_flags(k: int | None, budget: int | None) -> None:
    """``-k`` and ``--budget`` refused here, naming the flag (not the class that checks them)."""
    from ..types import MAX_K

    if k is not None and k < 1:
        raise ConfigError(f"-k/--top-k must be a positive integer, got {k}; e.g. -k 5")
    if k is not None and k > MAX_K:
        raise ConfigError(f"-k/--top-k must be at most {MAX_K} (passages to retrieve), got {k}; e.g. -k 5")
    if budget is not None and budget < 1:
        raise ConfigError(f"--budget must be a positive number of tokens, got {budget}; e.g. --budget 2000")


def _method_settings(method: str) -> dict[str, Any]:
    """``[method.NAME]`` of paretorag.toml: the settings of ``method`` when it answers."""
    from ..config import active

    return active().method_settings(method)


def _print_answer(data: dict[str, Any], context_only: bool) -> None:
    """An answer's JSON (``Answer.to_json``, or a server's ``POST /query``) for a reader."""
    if not context_only and data.get("answered_by") in ("reader", "reader-nospan", "reader-onehop"):
        head, _, rest = str(data["text"]).partition("\n")
        out.print(f"[bold]{_text(head)}[/]" + (f"\n{_text(rest.strip())}" if rest.strip() else ""))
        found = "" if data.get("found") else " (not found)"
        out.print(f"[dim]confidence {data.get('confidence') or 0.0:.2f}{found}[/]\n")
    elif not context_only:
        out.print(f"[bold]{_text(data['text'])}[/]\n")
    for i, c in enumerate(data["contexts"], start=1):
        snippet = " ".join(str(c["text"]).split())[:160]
        out.print(
            f"[cyan]\\[{i}][/] {_text(c['title'])}{_text(' > ' + c['heading']) if c.get('heading') else ''} "
            f"({_text(c['chunk_id'])}, score {float(c['score']):.3f}): "
            f"{_text(snippet)}"
        )
    for w in data.get("warnings", []):
        err.print(f"[yellow]warning[/] {_text(w)}")
    u = data.get("usage", {})
    n = len(data["contexts"])
    # in plain words, as the web page says it; how the method retrieved (mode, branch) is in --json
    out.print(
        f"\n[dim]{_text(data['method'])}, {n} passage{'' if n == 1 else 's'}, "
        f"{float(data.get('timings_ms', {}).get('total', 0.0)):.0f} ms; "
        f"{u.get('llm_calls', 0)} LLM call(s), {u.get('prompt_tokens', 0)}+{u.get('completion_tokens', 0)} "
        "tokens[/]"
    )


MethodOpt = typer.Option(
    ...,
    "--method",
    "-m",
    default_factory=_configured("index.method"),
    show_default=False,
    help="Retrieval method (default: the recommended one, `fusion`, where the index has it built).",
)
KOpt = typer.Option(
    ...,
    "-k",
    "--top-k",
    default_factory=_configured("index.k"),
    show_default=False,
    help="Passages to retrieve (method default if omitted).",
)
BudgetOpt = typer.Option(None, "--budget", help="Context budget in tokens.")
ContextOnlyOpt = typer.Option(False, "--context-only", help="Retrieve only; no answer.")
ReaderOpt = typer.Option(
    None,
    "--reader",
    help="Who answers: reader (short answer + evidence, offline; reader-nospan: without its span model, "
    "reader-onehop: without its second retrieval), "
    "extractive (evidence sentences) or llm (the --llm / index LLM). Default: the LLM when it generates, "
    "else the reader.",
)


def query(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path | None = typer.Option(
        None,
        "--index",
        "-i",
        parser=index_location,
        help="An existing index directory or postgresql:// URL (see `paretorag index`; default: index.path of paretorag.toml).",
    ),
    method: str | None = MethodOpt,
    k: int | None = KOpt,
    budget: int | None = BudgetOpt,
    llm: str | None = typer.Option(
        None,
        "--llm",
        help="Answer with this LLM instead of the index's (default: llm.model of paretorag.toml).",
    ),
    context_only: bool = ContextOnlyOpt,
    reader: str | None = ReaderOpt,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    llm_max_wait: float | None = LLMMaxWaitOpt,
    server: str | None = typer.Option(
        None,
        "--server",
        help="Ask a running `paretorag serve` at this URL (e.g. http://127.0.0.1:8000) instead of "
        "loading the index here: no model loads in this process.",
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="PARETORAG_API_KEY", help="Key for --server (also $PARETORAG_API_KEY)."
    ),
) -> None:
    """Answer a question with citations."""
    try:
        _check_flags(k, budget)
        _llm_max_wait(llm_max_wait)
        if server is not None:
            if llm:
                raise ConfigError("--llm cannot be used with --server: the server answers with its own LLM")
            from .client import ask

            body = {"question": question, "method": method, "k": k, "budget": budget}
            body |= {"context_only": context_only, "reader": reader}
            data = ask(server, body, api_key=api_key or "")
        else:
            index_dir = index_dir or _configured("index.path")()
            llm = llm or _configured("llm.model")()
            if index_dir is None:
                raise ConfigError("query needs --index DIR (or --server URL of a running `paretorag serve`)")
            from .warmup import start

            start(index_dir, reader=reader, llm=llm, answer=not context_only)  # models load meanwhile
            from ..answering.llms import make_llm
            from ..rag import RAG

            answer_llm = make_llm(llm) if llm else None  # an override for this query, not saved in the index
            with RAG.open(index_dir, create=False, llm=answer_llm) as rag:
                method = _method_or_default(rag, method)
                ans = rag.query(
                    question,
                    method=method,
                    k=k,
                    budget=budget,
                    context_only=context_only,
                    reader=reader,
                    **_method_settings(method),
                )
            data = ans.to_json()
    except ParetoragError as exc:
        _fail(exc, method)
        return
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    _print_answer(data, context_only)


def chat(
    index_dir: Path = IndexOpt,
    method: str | None = MethodOpt,
    k: int | None = KOpt,
    budget: int | None = BudgetOpt,
    llm: str | None = AnswerLLMOpt,
    context_only: bool = ContextOnlyOpt,
    reader: str | None = ReaderOpt,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per line (JSON Lines)."),
) -> None:
    """Answer questions read from stdin, one per line, in one process (the models load once).

    An empty line is skipped; end with Ctrl-D (end of input). A question that fails prints
    its error and the next one is read.
    """
    from ..answering.llms import make_llm
    from ..rag import RAG

    interactive = sys.stdin.isatty()
    try:
        _check_flags(k, budget)
        answer_llm = make_llm(llm) if llm else None
        rag = RAG.open(index_dir, create=False, llm=answer_llm)
    except ParetoragError as exc:
        _fail(exc)
        return
    with rag:
        method = _method_or_default(rag, method)
        if interactive:
            err.print(f"[dim]{_text(index_dir)}: one question per line, Ctrl-D to end[/]")
        failed = 0
        while True:
            if interactive:
                err.print("[bold]?[/] ", end="")
            line = sys.stdin.readline()
            if not line:
                break
            question = line.strip()
            if not question:
                continue
            try:
                ans = rag.query(
                    question,
                    method=method,
                    k=k,
                    budget=budget,
                    context_only=context_only,
                    reader=reader,
                    **_method_settings(method),
                )
            except ParetoragError as exc:
                failed += 1
                said = _said(exc, method)
                err.print(f"[bold red]error:[/] {_text(said)}")
                if as_json:
                    sys.stdout.write(json.dumps({"question": question, "error": str(said)}) + "\n")
                    sys.stdout.flush()
                continue
            if as_json:
                sys.stdout.write(
                    json.dumps({"question": question, **ans.to_json()}, ensure_ascii=False) + "\n"
                )
                sys.stdout.flush()
            else:
                _print_answer(ans.to_json(), context_only)
                out.print()
    if failed:
        raise typer.Exit(code=exitcodes.FAILED)
