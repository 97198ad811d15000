"""What the commands share: the consoles, the ``--index`` / ``--no-wait`` / ``--llm`` options,
flag defaults from ``paretorag.toml``, opening an index for writing, errors and Ctrl-C.

Every piece of user data (answers, passages, titles, paths, error messages) is printed
escaped: text such as ``[/wiki/otter]`` is shown as written, never read as rich markup.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import ParetoragError
from . import exitcodes

if TYPE_CHECKING:  # imported where used: `--help` loads no index, model or array library
    from ..rag import RAG

out = Console(soft_wrap=True, emoji=False)  # ":name:" in a passage is text, not an emoji
err = Console(stderr=True, soft_wrap=True, emoji=False)


def _configured(key: str, required: bool = False) -> Any:
    """A flag's default from ``paretorag.toml`` or ``$PARETORAG_*`` (see ``paretorag config show``)."""

    def default() -> Any:
        from ..config import KEYS, active

        s = active().settings[key]  # loaded (and checked) by the callback
        if key == "index.path" and s.value is None:
            s = active().settings["index.url"]  # [index] url = "postgresql://..."
        if s.value is None and required:
            raise typer.BadParameter(
                f"missing: pass {KEYS[key].flag} DIR, or set index.path in paretorag.toml "
                f"([index] path = ...) or ${KEYS[key].env}"
            )
        if s.source == "default":
            return None
        return (
            index_location(s.value)
            if key == "index.path"
            else ",".join(s.value)
            if key == "index.methods"
            else s.value
        )

    return default


def index_location(value: str | Path) -> Path:
    """``--index``: a folder, or a ``postgresql://`` URL kept as written (a Path would fold its
    ``//``). Typed Path for the commands; a URL is a :class:`str` subclass that only
    :func:`paretorag.storage.backend.open_backend` and messages use."""
    from ..storage.database import is_url

    text = str(value)
    return IndexURL(text) if is_url(text) else Path(text)  # type: ignore[return-value]


class IndexURL(str):
    """A ``postgresql://`` index named on the command line: ``str()`` is the URL to connect
    with; formatted into a message (``f"{url}"``, :func:`_text`) its password shows as ``***``."""

    def exists(self) -> bool:
        return True

    def __format__(self, spec: str) -> str:
        from ..storage.database import redact

        return format(redact(str(self)), spec)


NewIndexOpt = typer.Option(
    ...,
    "--index",
    "-i",
    default_factory=_configured("index.path", required=True),
    parser=index_location,
    show_default=False,
    help="Index directory or postgresql:// URL (created if missing; default: index.path of paretorag.toml, $PARETORAG_INDEX).",
)
IndexOpt = typer.Option(
    ...,
    "--index",
    "-i",
    default_factory=_configured("index.path", required=True),
    parser=index_location,
    show_default=False,
    help="An existing index directory or postgresql:// URL (see `paretorag index`; default: index.path of paretorag.toml, "
    "$PARETORAG_INDEX).",
)


def _text(value: Any) -> str:
    """User data, escaped for rich (brackets in titles, paths and passages print as written)."""
    return escape(format(value) if isinstance(value, IndexURL) else str(value))


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
    from ..providers.http import MAX_WAIT_ENV, max_wait_seconds

    max_wait_seconds(seconds)  # a bad value fails here, naming the flag
    os.environ[MAX_WAIT_ENV] = repr(float(seconds))


def _open(index_dir: Path, no_wait: bool, command: str = "", **kwargs: Any) -> RAG:
    """Open an index for writing: wait for another writer (saying whom), or fail with --no-wait."""
    from ..rag import RAG

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
    """Ctrl-C in a write: say what was kept and how to resume; exit 130 like a shell
    (SIGTERM: the same, said as ``stopped (SIGTERM)``, exit 143)."""
    from ..cancel import sigterm_received

    stopped = "[yellow]stopped (SIGTERM)[/]" if sigterm_received() else "[yellow]interrupted[/]"
    code = exitcodes.TERMINATED if sigterm_received() else exitcodes.INTERRUPTED
    if rag is None or not index_dir.exists():
        err.print(f"{stopped}: nothing was stored")
    else:
        from ..storage.backend import open_backend

        try:
            store = open_backend(index_dir).open_store()  # the RAG's own connection is closed by now
            stored = store.counts()["documents"]
            store.close()
            committed = rag.manifest.counts.get("documents", 0)
            err.print(
                f"{stopped}: kept {stored} stored document(s), cached vectors and finished "
                f"structures; the index serves its last commit ({committed} document(s)). {what}"
                "Run the same command again to resume."
            )
        except ParetoragError:
            err.print(f"{stopped}: run the same command again to resume")
    sys.stdout.flush()
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        os._exit(code)  # a builder thread still inside a long step: do not wait for it at exit
    raise typer.Exit(code=code)


def _said(exc: ParetoragError, method: str | None = None) -> ParetoragError:
    """``exc`` in the command line's terms: a bad setting's value names the file's key, the
    variable or the flag that gave it rather than the class that checks it."""
    from ..config import explained

    return explained(exc, method)


def _fail(exc: ParetoragError, method: str | None = None) -> None:
    """Print ``exc`` (``method``: the method that answered, for its ``[method.*]`` settings); exit 2."""
    err.print(f"[bold red]error:[/] {_text(_said(exc, method))}")
    raise typer.Exit(code=exitcodes.ERROR)


AnswerLLMOpt = typer.Option(
    ...,
    "--llm",
    default_factory=_configured("llm.model"),
    show_default=False,
    help="Answer with this LLM instead of the index's.",
)
