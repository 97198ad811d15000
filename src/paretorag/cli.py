"""The ``paretorag`` command line: index, query, chat, insert, delete, repair, inspect, eval, serve, train-router.

Results go to stdout; progress bars, warnings and errors go to stderr, so
``paretorag query ... --json > answer.json`` holds only the answer. Every piece of
user data (answers, passages, titles, paths, error messages) is printed escaped: text
such as ``[/wiki/otter]`` is shown as written, never read as rich markup.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__, exitcodes
from .errors import ConfigError, IndexFormatError, MissingDependencyError, ParetoragError
from .progress import RichProgress

if TYPE_CHECKING:  # imported where used: `--help` loads no index, model or array library
    from .rag import RAG, IndexReport

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Cheap, good graph-based RAG with citations."
)
out = Console(soft_wrap=True, emoji=False)  # ":name:" in a passage is text, not an emoji
err = Console(stderr=True, soft_wrap=True, emoji=False)


def _configured(key: str, required: bool = False) -> Any:
    """A flag's default from ``paretorag.toml`` or ``$PARETORAG_*`` (see ``paretorag config show``)."""

    def default() -> Any:
        from .config import KEYS, active

        s = active().settings[key]  # loaded (and checked) by the callback
        if s.value is None and required:
            raise typer.BadParameter(
                f"missing: pass {KEYS[key].flag} DIR, or set index.path in paretorag.toml "
                f"([index] path = ...) or ${KEYS[key].env}"
            )
        if s.source == "default":
            return None
        return (
            Path(s.value) if key == "index.path" else ",".join(s.value) if key == "index.methods" else s.value
        )

    return default


NewIndexOpt = typer.Option(
    ...,
    "--index",
    "-i",
    default_factory=_configured("index.path", required=True),
    show_default=False,
    help="Index directory (created if missing; default: index.path of paretorag.toml, $PARETORAG_INDEX).",
)
IndexOpt = typer.Option(
    ...,
    "--index",
    "-i",
    default_factory=_configured("index.path", required=True),
    show_default=False,
    help="An existing index directory (see `paretorag index`; default: index.path of paretorag.toml, "
    "$PARETORAG_INDEX).",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"paretorag {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        help="Settings file (default: ./paretorag.toml, or $PARETORAG_CONFIG); see `paretorag config show`.",
    ),
) -> None:
    """Cheap, good graph-based RAG with citations."""
    _show_waits()
    from .config import active, select

    select(config)
    try:
        active()  # a bad file fails every command at once, naming the file and the key
    except ConfigError as exc:
        _fail(exc)


def _text(value: Any) -> str:
    """User data, escaped for rich (brackets in titles, paths and passages print as written)."""
    return escape(str(value))


NoWaitOpt = typer.Option(
    False, "--no-wait", help="Fail at once if another process is writing the index (default: wait)."
)


LLMMaxWaitOpt = typer.Option(
    ...,
    "--llm-max-wait",
    default_factory=_configured("llm.max_wait"),
    show_default=False,
    help="Seconds one LLM call may take with its retries and waits (e.g. on HTTP 429) before it stops "
    "with the error (default $PARETORAG_LLM_MAX_WAIT or 300).",
)


def _llm_max_wait(seconds: float | None) -> None:
    """``--llm-max-wait``: the budget of every model-server call of this run (read by the clients)."""
    if seconds is None:
        return
    from .providers.http import MAX_WAIT_ENV, max_wait_seconds

    max_wait_seconds(seconds)  # a bad value fails here, naming the flag
    os.environ[MAX_WAIT_ENV] = repr(float(seconds))


def _open(index_dir: Path, no_wait: bool, command: str = "", **kwargs: Any) -> RAG:
    """Open an index for writing: wait for another writer (saying whom), or fail with --no-wait."""
    from .rag import RAG

    rag = RAG.open(
        index_dir, wait=not no_wait, on_wait=lambda msg: err.print(f"[yellow]{_text(msg)}[/]"), **kwargs
    )
    rag.origin = f"`paretorag {command}` (pid {os.getpid()})"
    rag.on_note = lambda msg: err.print(f"[yellow]note[/] {_text(msg)}")  # said as it happens
    return rag


class _WaitLines(logging.Handler):
    """One stderr line per wait on a model server (rate limited, failing and retried)."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(f"[yellow]{_text(record.getMessage())}[/]")


def _show_waits() -> None:
    wait_log = logging.getLogger("paretorag.wait")
    if not any(isinstance(h, _WaitLines) for h in wait_log.handlers):
        wait_log.addHandler(_WaitLines())
        wait_log.setLevel(logging.WARNING)
        wait_log.propagate = False


def _interrupted(rag: RAG | None, index_dir: Path, what: str = "") -> NoReturn:
    """Ctrl-C in a write: say what was kept and how to resume; exit 130 like a shell."""
    if rag is None or not index_dir.exists():
        err.print("[yellow]interrupted[/]: nothing was stored")
    else:
        from .store import Store

        try:
            store = Store(index_dir)  # the RAG's own connection is closed by now
            stored = store.counts()["documents"]
            store.close()
            committed = rag.manifest.counts.get("documents", 0)
            err.print(
                f"[yellow]interrupted[/]: kept {stored} stored document(s), cached vectors and finished "
                f"structures; the index serves its last commit ({committed} document(s)). {what}"
                "Run the same command again to resume."
            )
        except ParetoragError:
            err.print("[yellow]interrupted[/]: run the same command again to resume")
    sys.stdout.flush()
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        os._exit(130)  # a builder thread still inside a long step: do not wait for it at exit
    raise typer.Exit(code=exitcodes.INTERRUPTED)


def _methods(value: str | None) -> list[str] | None:
    return [m.strip() for m in value.split(",") if m.strip()] if value else None


def _notes(rag: RAG) -> None:
    for note in rag.notes:
        err.print(f"[yellow]note[/] {note}")


def _fail(exc: ParetoragError) -> None:
    err.print(f"[bold red]error:[/] {_text(exc)}")
    raise typer.Exit(code=exitcodes.ERROR)


def _report(report: IndexReport, rag: RAG) -> str:
    """Print the problems (stderr) and return the summary line, for stdout once the bars stop."""
    for p in report.problems:
        label = "[red]failed[/]" if p.failed else f"[yellow]{'skipped' if p.skipped else 'warning'}[/]"
        err.print(f"{label} {_text(p)}")
    c = rag.manifest.counts
    resumed = ""
    if report.resumed:  # committed now, stored by a run that was interrupted
        whole = report.resumed == report.added + report.updated
        resumed = " (resumed)" if whole else f" ({report.resumed} resumed)"
    failed = [p for p in report.problems if p.failed]
    return (
        f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, "
        f"removed {report.removed}{resumed}; index has {c.get('documents', 0)} documents, "
        f"{c.get('chunks', 0)} chunks ({report.seconds:.1f} s)"
        + ("" if report.committed else "; nothing to do")
        + (f"; {len(failed)} file(s) could not be read (listed above)" if failed else "")
    )


def _finish(report: IndexReport, summary: str) -> None:
    """Print the summary on stdout (the bars have stopped); exit 3 when some files could not be read."""
    out.print(summary)
    if any(p.failed for p in report.problems):
        raise typer.Exit(code=exitcodes.PARTIAL)


def _bars() -> RichProgress:
    """Progress bars on the stderr console, so that notes printed meanwhile go above them;
    results are printed on stdout after the bars stop (never glued to a bar's last line)."""
    return RichProgress(console=err)


def _parse_settings(items: list[str]) -> dict[str, dict[str, Any]]:
    from .config import active
    from .settings import parse_builder_settings

    merged = active().builder_settings()  # [set.*] of paretorag.toml and $PARETORAG_SET; --set wins
    for structure, values in parse_builder_settings(items).items():
        merged[structure] = {**merged.get(structure, {}), **values}
    return merged


def _build_methods(
    index_dir: Path, no_wait: bool, methods: str | None, settings: list[str], **config: Any
) -> None:
    """``index --index DIR --methods M`` without files: build M's structures from the stored chunks."""
    names = _methods(methods)
    if not names:
        raise ConfigError(
            "index needs files or folders to add, or --methods to build for the documents already in "
            f"--index (e.g. `paretorag index --index {index_dir} --methods fusion`)"
        )
    builders = _parse_settings(settings)
    rag = _open(index_dir, no_wait, "index", create=False, methods=names, builders=builders, **config)
    try:
        with rag, _bars() as progress:
            rag.build(progress=progress)  # the methods were added when it opened
            _notes(rag)
            n_docs = len(rag.store.all_document_ids())
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)
    out.print(f"built {', '.join(names)} for the {n_docs} documents in {_text(index_dir)}")


@app.command()
def index(
    paths: list[Path] | None = typer.Argument(
        None,
        help="Files or directories (.txt .md .html .pdf .docx .json .jsonl). Without any, --methods "
        "builds what those methods need for the documents already in --index.",
    ),
    index_dir: Path = NewIndexOpt,
    methods: str | None = typer.Option(
        ...,
        "--methods",
        "-m",
        default_factory=_configured("index.methods"),
        show_default=False,
        help="Methods to build for, e.g. vanilla,e2graphrag.",
    ),
    replace_methods: bool = typer.Option(
        False,
        "--replace-methods",
        help="Serve exactly --methods: drop the index's other methods (their structures are kept until the chunks change).",
    ),
    llm: str | None = typer.Option(
        ...,
        "--llm",
        default_factory=_configured("llm.model"),
        show_default=False,
        help="extractive | openai:MODEL | llamacpp[:GGUF_PATH]",
    ),
    embedder: str | None = typer.Option(
        ...,
        "--embedder",
        default_factory=_configured("embedder.model"),
        show_default=False,
        help="minilm (default) | hash | st:PATH | openai:MODEL:DIM",
    ),
    chunk_size: int | None = typer.Option(None, "--chunk-size", help="Tokens per chunk (default 1200)."),
    chunk_overlap: int | None = typer.Option(
        None, "--chunk-overlap", help="Overlap in tokens (default 100)."
    ),
    embed_titles: bool | None = typer.Option(
        None,
        "--titles/--no-titles",
        help="Embed each chunk with its document title (default on; changing it re-embeds).",
    ),
    settings: list[str] = typer.Option(
        [], "--set", help="Builder setting STRUCTURE.NAME=VALUE, e.g. --set tree.g=4 (repeatable)."
    ),
    ann: str | None = typer.Option(
        None, "--ann", help="Vector index: auto (default: exact below 1M vectors) | exact | hnsw | ivf."
    ),
    no_wait: bool = NoWaitOpt,
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Chunk, embed and run spaCy as Ray tasks (needs paretorag[ray]): --ray alone starts a "
        "local cluster; auto joins this machine's (ray start --head); ray://HOST:10001 a remote one.",
    ),
    ray_cpus: int | None = typer.Option(
        None, "--ray-cpus", help="CPUs of the local Ray cluster that --ray starts (default: all)."
    ),
    llm_max_wait: float | None = LLMMaxWaitOpt,
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Stop at the first file that cannot be read (default: index the rest, exit 3).",
    ),
    prune: bool = typer.Option(
        False, "--prune", help="Remove the documents whose files under the given folders are gone."
    ),
    doc_key: str = typer.Option(
        "", "--id", help="The document's identity instead of its path (one file): a new version replaces it."
    ),
) -> None:
    """Index files and build the structures the methods need (repairing missing files).

    An edited file replaces its old version (a document is its path, or --id); exit codes:
    0 done, 2 nothing done (error), 3 some files could not be read (docs/exit-codes.md).
    """
    from .distributed import RayCluster

    rag = None
    cluster = RayCluster(ray, num_cpus=ray_cpus) if ray else None
    try:
        _llm_max_wait(llm_max_wait)
        if not paths:
            _build_methods(index_dir, no_wait, methods, settings, llm=llm, replace_methods=replace_methods)
            return
        rag = _open(
            index_dir,
            no_wait,
            "index",
            methods=_methods(methods),
            replace_methods=replace_methods,
            llm=llm,
            embedder=embedder,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            embed_titles=embed_titles,
            builders=_parse_settings(settings),
            ann=ann,
        )
        with rag, _bars() as progress, cluster or contextlib.nullcontext():
            report = rag.index(
                paths, progress=progress, cluster=cluster, strict=strict, prune=prune, key=doc_key
            )
            _notes(rag)
            summary = _report(report, rag)
        _finish(report, summary)
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)


@app.command()
def insert(
    paths: list[Path] = typer.Argument(..., help="Files or directories to add."),
    index_dir: Path = IndexOpt,
    no_wait: bool = NoWaitOpt,
    llm_max_wait: float | None = LLMMaxWaitOpt,
) -> None:
    """Add documents to an existing index (unchanged ones are skipped)."""
    rag = None
    try:
        _llm_max_wait(llm_max_wait)
        rag = _open(index_dir, no_wait, "insert", create=False)
        with rag, _bars() as progress:
            report = rag.insert(paths, progress=progress)
            _notes(rag)
            summary = _report(report, rag)
        _finish(report, summary)
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)


@app.command()
def delete(
    doc_ids: list[str] = typer.Argument(
        ...,
        help="Document ids (list them with `paretorag inspect --index DIR --documents`), or the "
        "--id or file path a document was indexed with.",
    ),
    index_dir: Path = IndexOpt,
    no_wait: bool = NoWaitOpt,
) -> None:
    """Remove documents and everything derived only from them."""
    rag = None
    try:
        rag = _open(index_dir, no_wait, "delete", create=False)
        with rag, _bars() as progress:
            removed = rag.delete(doc_ids, progress=progress)
            _notes(rag)
        out.print(f"deleted {len(removed)} document(s); {rag.manifest.counts.get('documents', 0)} remain")
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir, "The delete is pending: it is finished by the next write. ")


@app.command()
def repair(index_dir: Path = IndexOpt, no_wait: bool = NoWaitOpt) -> None:
    """Rebuild missing or damaged files from SQLite, the embedding cache and the LLM cache."""
    rag = None
    try:
        rag = _open(index_dir, no_wait, "repair", create=False)
        with rag, _bars() as progress:
            report = rag.repair(progress=progress)
            for note in report.notes:
                err.print(f"[yellow]note[/] {note}")
        for problem in report.problems:
            out.print(f"found: {problem}")
        c = rag.manifest.counts
        out.print(
            ("repaired" if report.rebuilt else "nothing to repair")
            + f"; index has {c.get('documents', 0)} documents, {c.get('chunks', 0)} chunks"
        )
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)


def _method_or_default(rag: RAG, method: str | None) -> str:
    """``--method``, else the index's default, saying on stderr when the recommended one is not built."""
    if method is not None:
        return method
    from .methods import recommended_method

    method, rec = rag.default_method(), recommended_method()
    if method != rec:
        err.print(
            f"[dim]note: answering with {method!r}; the recommended method {rec!r} is not built in this "
            f"index (add it with `paretorag index --index {rag.root} --methods {rec}`)[/]"
        )
    return method


def _method_settings(method: str) -> dict[str, Any]:
    """``[method.NAME]`` of paretorag.toml: the settings of ``method`` when it answers."""
    from .config import active

    return active().method_settings(method)


def _print_answer(data: dict[str, Any], context_only: bool) -> None:
    """An answer's JSON (``Answer.to_json``, or a server's ``POST /query``) for a reader."""
    if not context_only and data.get("answered_by") == "reader":
        head, _, rest = str(data["text"]).partition("\n")
        out.print(f"[bold]{_text(head)}[/]" + (f"\n{_text(rest.strip())}" if rest.strip() else ""))
        found = "" if data.get("found") else " (not found)"
        out.print(f"[dim]confidence {data.get('confidence') or 0.0:.2f}{found}[/]\n")
    elif not context_only:
        out.print(f"[bold]{_text(data['text'])}[/]\n")
    for i, c in enumerate(data["contexts"], start=1):
        snippet = " ".join(str(c["text"]).split())[:160]
        out.print(
            f"[cyan]\\[{i}][/] {_text(c['title'])} ({_text(c['chunk_id'])}, score {float(c['score']):.3f}): "
            f"{_text(snippet)}"
        )
    for w in data.get("warnings", []):
        err.print(f"[yellow]warning[/] {_text(w)}")
    u = data.get("usage", {})
    out.print(
        f"\n[dim]{_text(data['method'])} / {_text(data['mode'])} ({_text(data['branch'])}); "
        f"{u.get('llm_calls', 0)} LLM call(s), {u.get('prompt_tokens', 0)}+{u.get('completion_tokens', 0)} "
        f"tokens; {float(data.get('timings_ms', {}).get('total', 0.0)):.0f} ms[/]"
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
    help="Who answers: reader (short answer + evidence, offline), extractive (evidence sentences) or "
    "llm (the --llm / index LLM). Default: the LLM when it generates, else the reader.",
)
AnswerLLMOpt = typer.Option(
    ...,
    "--llm",
    default_factory=_configured("llm.model"),
    show_default=False,
    help="Answer with this LLM instead of the index's.",
)


@app.command()
def query(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path | None = typer.Option(
        None,
        "--index",
        "-i",
        help="An existing index directory (see `paretorag index`; default: index.path of paretorag.toml).",
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
        if k is not None and k < 1:
            raise ConfigError(f"-k/--top-k must be a positive integer, got {k}; e.g. -k 5")
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
            from .providers.llm import make_llm
            from .rag import RAG

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
        _fail(exc)
        return
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        return
    _print_answer(data, context_only)


@app.command()
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
    from .providers.llm import make_llm
    from .rag import RAG

    interactive = sys.stdin.isatty()
    try:
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
                err.print(f"[bold red]error:[/] {_text(exc)}")
                if as_json:
                    sys.stdout.write(json.dumps({"question": question, "error": str(exc)}) + "\n")
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


@app.command()
def inspect(
    index_dir: Path = IndexOpt,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    documents: bool = typer.Option(False, "--documents", help="List every document."),
    check: bool = typer.Option(
        False, "--check", help="Verify every file the manifest names, and SQLite; exit 1 on a problem."
    ),
) -> None:
    """Show documents, chunks, structures, sizes, models and LLM usage per stage."""
    from .rag import RAG

    try:
        with RAG.open(index_dir, create=False) as rag:
            if check:
                problems = rag.check()
                for p in problems:
                    out.print(f"[red]problem[/] {p}")
                if problems:
                    out.print(
                        f"{len(problems)} problem(s); fix them with `paretorag repair --index {index_dir}`"
                    )
                    raise typer.Exit(code=exitcodes.FAILED)
                out.print(f"{index_dir}: every file the manifest names is present and consistent; SQLite ok")
                return
            damaged = rag.store.integrity()  # a damaged database is reported here, not only by writes
            if damaged:
                raise IndexFormatError(
                    f"{damaged[0]}; restore {rag.store.path} from a backup, or index the sources "
                    "again into a new --index directory"
                )
            stats: dict[str, Any] = rag.stats()
            if as_json or documents:
                stats["documents"] = rag.documents()
    except ParetoragError as exc:
        _fail(exc)
        return
    if as_json:
        sys.stdout.write(json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
        return
    out.print(f"[bold]{_text(stats['index'])}[/] (format {stats['format_version']})")
    out.print(f"models: {_text(stats['models'])}")
    out.print(f"counts: {_text(stats['counts'])}")
    out.print(f"sizes (bytes): {_text(stats['sizes_bytes'])}")
    out.print(f"configured methods: {_text(', '.join(stats['config']['methods']))}")
    t = Table("structure", "details")
    for name, info in stats["structures"].items():
        t.add_row(_text(name), _text(", ".join(f"{k}={v}" for k, v in info.items() if k != "dir")))
    out.print(t)
    u = Table("stage", "LLM calls", "cached", "prompt tokens", "completion tokens", "seconds")
    for stage, s in stats["usage"].items():
        u.add_row(
            _text(stage),
            str(s["calls"]),
            str(s["cached"]),
            str(s["prompt_tokens"]),
            str(s["completion_tokens"]),
            f"{s['seconds']:.2f}",
        )
    out.print(u)
    calls = stats.get("model_calls") or {}
    if calls:
        c = Table(
            "stage", "texts embedded", "embedder batches", "cache hits", "spans pooled", "spaCy docs",
            "sentences scored (extractive)",
        )  # fmt: skip
        for stage, n in calls.items():
            c.add_row(
                _text(stage),
                *(str(n.get(k, 0)) for k in ("embed_texts", "embed_batches", "embed_cached", "pooled_spans")),
                str(n.get("spacy_docs", 0)),
                str(n.get("sentences_scored", 0)),
            )
        out.print(c)
    out.print(f"stage timings (s): {_text(stats['timings'])}")
    _print_pending(stats.get("pending") or {}, index_dir)
    if documents:
        for d in stats["documents"]:
            flag = "  (delete pending)" if d.get("pending_delete") else ""
            out.print(
                f"{_text(d['doc_id'])}  {d['n_chunks']:>5} chunks  {_text(d['title'][:60])}  ({_text(d['source'])}){flag}"
            )
    else:
        out.print("[dim]document ids: paretorag inspect --index DIR --documents[/]")


def _print_pending(pending: dict[str, Any], index_dir: Path) -> None:
    """Work stored but not committed, who left it, and server jobs not finished."""
    from .jobtable import describe_origins

    docs, deletes, jobs = pending.get("documents", []), pending.get("deletes", []), pending.get("jobs", [])
    if docs or deletes:
        out.print(
            f"[yellow]pending[/]: {len(docs)} document(s) stored but not committed, {len(deletes)} delete(s) "
            f"not committed; left by {_text(describe_origins(pending.get('left_by', [])))}. The next "
            f"write on this index commits them (`paretorag repair --index {_text(index_dir)}` does it "
            "without adding anything)."
        )
        for d in docs[:20]:
            out.print(f"  {_text(d['doc_id'])}  {_text(d['title'][:60])}  ({_text(d['source'])})")
        if len(docs) > 20:
            out.print(f"  ... and {len(docs) - 20} more (inspect --json lists them)")
    for j in jobs:
        what = (
            f"{j['documents']} document(s)" if j["kind"] == "insert" else f"delete {', '.join(j['doc_ids'])}"
        )
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(j["created"]))
        out.print(
            f"[yellow]server job {_text(j['job_id'])}[/] ({j['kind']}, {what}) accepted {when}, {j['state']}: "
            "the next `paretorag serve` on this index resumes it"
        )
    if not (docs or deletes or jobs):
        out.print("pending: nothing (every stored document is committed)")


def _print_catalog(
    rows: list[dict[str, Any]], as_json: bool, columns: list[str], caption: str | None = None
) -> None:
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False, default=str) + "\n")
        return
    t = Table(*columns, caption=caption)
    for row in rows:
        t.add_row(
            *(
                escape(", ".join(map(str, v)) if isinstance(v, list) else str(v))
                for v in (row.get(c, "") for c in columns)
            )
        )
    out.print(t)


@app.command()
def operators(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every registered retrieval operator (what it produces and requires, LLM use, paper)."""
    from . import catalog

    _print_catalog(
        catalog.operators(),
        as_json,
        ["name", "kind", "produces", "consumes", "requires", "uses_llm", "paper"],
    )


@app.command()
def methods(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    table: bool = typer.Option(
        False, "--table", help="Print the unified framework's Table 3: operators per method, from the code."
    ),
    markdown: bool = typer.Option(False, "--markdown", help="With --table: print it as Markdown."),
) -> None:
    """List every registered method with its steps, structures and LLM use."""
    from . import catalog

    if table and markdown:
        sys.stdout.write(catalog.table3_markdown())
        return
    if table:
        cols = ["method", "graph", "question", *catalog.TABLE3_COLUMNS, "query_llm", "generation"]
        _print_catalog(catalog.table3(), as_json, cols)
        return
    if not as_json:
        from .method_list import render

        sys.stdout.write(render(catalog.methods()))  # 80 columns whatever the terminal's width
        return
    rows = sorted(catalog.methods(), key=lambda r: not r.get("recommended", False))  # stable: then by name
    for row in rows:
        steps = row.get("steps")
        row["steps"] = [f"{s['step']}={s['operator']}" for s in steps] if steps else row.get("preset", "")
        if row.get("recommended") and not as_json:
            row["name"] = f"* {row['name']}"
    caption = "* recommended: what query, serve and the web page use when no method is given"
    _print_catalog(rows, as_json, ["name", "requires", "uses_llm", "steps", "paper"], caption)


RETENTION_ENV = "PARETORAG_JOB_RETENTION_DAYS"


def _retention_days(value: float | None) -> float:
    """``--job-retention-days``, else ``$PARETORAG_JOB_RETENTION_DAYS``, else 7."""
    raw: float | str | None = value if value is not None else os.environ.get(RETENTION_ENV)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return 7.0
    try:
        days = float(raw)
    except ValueError:
        days = -1.0
    if not days > 0 or days == float("inf"):
        raise ConfigError(
            f"--job-retention-days / {RETENTION_ENV} must be a positive number of days, got {raw!r}; e.g. 7"
        )
    return days


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    index_dir: Path = IndexOpt,
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (other than loopback: needs keys)."
    ),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    api_key_file: Path | None = typer.Option(
        None,
        "--api-key-file",
        help="API keys, one per line (ro:KEY for read-only); also $PARETORAG_API_KEYS.",
    ),
    llm: str | None = AnswerLLMOpt,
    readers: int = typer.Option(4, "--readers", help="Queries served at once (all share one loaded index)."),
    create: bool = typer.Option(False, "--create", help="Create an empty index if DIR has none."),
    no_wait: bool = typer.Option(
        False, "--no-wait", help="Fail a write at once if another process is writing (default: wait)."
    ),
    max_upload_mb: int = typer.Option(32, "--max-upload-mb", help="Largest upload (POST /documents), in MB."),
    keep_alive: int = typer.Option(
        30,
        "--keep-alive",
        help="Seconds an idle HTTP connection stays open (uvicorn's default, 5, raced busy clients).",
    ),
    job_retention_days: float | None = typer.Option(
        None,
        "--job-retention-days",
        help="Days a finished job stays answerable at GET /jobs/{id}, across restarts (default "
        "$PARETORAG_JOB_RETENTION_DAYS or 7).",
    ),
    llm_max_wait: float | None = LLMMaxWaitOpt,
) -> None:
    """Serve the index over HTTP: API (docs at /docs), web page at /, metrics at /metrics."""
    try:
        try:
            import uvicorn

            from .server import KeyRing, Limits, create_app
        except ImportError as exc:
            raise MissingDependencyError(
                f"paretorag serve needs the serve extra ({exc.name or 'fastapi/uvicorn'} is not installed): "
                "pip install 'paretorag[serve]'"
            ) from None

        _llm_max_wait(llm_max_wait)
        retention_days = _retention_days(job_retention_days)
        keys = KeyRing.load(api_key_file)
        if not keys and not _loopback(host):
            raise ConfigError(
                f"--host {host} would serve the index to other machines without an API key; set "
                "PARETORAG_API_KEYS or --api-key-file, or keep the default --host 127.0.0.1"
            )
        application = create_app(
            index_dir,
            keys=keys,
            limits=Limits(max_upload_bytes=max_upload_mb * 1024 * 1024),
            llm=llm,
            readers=readers,
            write_wait=not no_wait,
            create=create,
            job_retention_s=retention_days * 86400,
        )
    except ParetoragError as exc:
        _fail(exc)
        return
    if keys:
        n_ro = sum(role == "read" for _, role in keys.digests)
        err.print(f"{len(keys.digests)} API key(s) ({n_ro} read-only)")
    else:
        err.print(
            "[yellow]no API key: listening on loopback only, without auth[/] (set PARETORAG_API_KEYS "
            "or --api-key-file to require keys and to serve other hosts)"
        )
    for line in application.state.service.resumed:  # jobs the last server accepted and did not finish
        err.print(f"[yellow]{_text(line)}[/]")
    err.print(f"serving {_text(index_dir)} on http://{host}:{port}/ (API docs at /docs)")
    uvicorn.run(application, host=host, port=port, log_level="info", timeout_keep_alive=keep_alive)


@app.command("mcp")
def mcp_command(index_dir: Path = IndexOpt, llm: str | None = AnswerLLMOpt) -> None:
    """Serve the index to MCP clients over stdin/stdout (tools: search, answer, list_documents)."""
    from .mcp_server import run_stdio

    try:
        run_stdio(index_dir, llm=llm)
    except ParetoragError as exc:
        _fail(exc)


def _register_config() -> None:
    from .config_cli import config_app

    app.add_typer(config_app, name="config")


_register_config()


def _register_eval() -> None:
    from .eval.cli import eval_command

    app.command("eval", help="Evaluate methods on a benchmark: metrics, cost, tables and Pareto plots.")(
        eval_command
    )


_register_eval()


def _register_train_router() -> None:
    from .training.cli import train_router_command

    app.command("train-router", help="Train EA-GraphRAG's router from eval disagreement cases.")(
        train_router_command
    )


_register_train_router()


def _register_train_reader() -> None:
    from .training.cli import train_reader_command

    app.command("train-reader", help="Train the offline reader's candidate ranker on the train splits.")(
        train_reader_command
    )


_register_train_reader()


def _register_train_ranker() -> None:
    from .training.cli import train_ranker_command

    app.command(
        "train-ranker", help="Train the retrieval ranker of the `fusion` method on the train splits."
    )(train_ranker_command)


_register_train_ranker()

from .graph_cli import graph_app  # noqa: E402  (typer and rich only)

app.add_typer(graph_app, name="graph")


def optional_ray_address(argv: list[str]) -> list[str]:
    """``--ray`` given without an address (last, or before another option) means ``--ray local``.

    Examples
    --------
    >>> optional_ray_address(["index", "a.md", "--ray", "--index", "ix"])
    ['index', 'a.md', '--ray', 'local', '--index', 'ix']
    >>> optional_ray_address(["index", "a.md", "--ray", "auto"])
    ['index', 'a.md', '--ray', 'auto']
    """
    if "--ray" not in argv:
        return list(argv)
    from .distributed import LOCAL

    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(LOCAL)
    return out


def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(message)s")
    app(args=optional_ray_address(sys.argv[1:]))


if __name__ == "__main__":
    main()
