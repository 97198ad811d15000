"""The ``paretorag`` command line: index, query, chat, insert, delete, repair, inspect, eval, serve, train-router.

Results go to stdout; progress bars, warnings and errors go to stderr, so
``paretorag query ... --json > answer.json`` holds only the answer. Every piece of
user data (answers, passages, titles, paths, error messages) is printed escaped: text
such as ``[/wiki/otter]`` is shown as written, never read as rich markup.

The commands live by group: :mod:`.indexing` (index, insert, delete, repair),
:mod:`.asking` (query, chat), :mod:`.catalog` (inspect, operators, methods),
:mod:`.serving` (serve, mcp); what they share is in :mod:`.common`. This module
makes the typer ``app`` and registers them in the order ``paretorag --help`` lists them.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from .. import __version__
from ..errors import ConfigError
from . import asking, catalog, exitcodes, indexing, serving
from .common import _fail, _show_waits
from .graph import graph_app  # typer and rich only

__all__ = ["app", "main", "optional_ray_address"]

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Cheap, good graph-based RAG with citations."
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"paretorag {__version__}")
        raise typer.Exit()


# commands that stop on SIGTERM in their own way: the servers shut down gracefully
OWN_SIGTERM = frozenset({"serve", "mcp"})


@app.callback()
def _main(
    ctx: typer.Context,
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
    if ctx.invoked_subcommand not in OWN_SIGTERM:
        from ..cancel import raise_on_sigterm

        ctx.call_on_close(raise_on_sigterm())  # SIGTERM stops as Ctrl-C does (exit 143)
    from ..config import active, select

    select(config)
    try:
        active()  # a bad file fails every command at once, naming the file and the key
    except ConfigError as exc:
        _fail(exc)


app.command()(indexing.index)
app.command()(indexing.insert)
app.command()(indexing.delete)
app.command()(indexing.repair)
app.command()(indexing.copy)
app.command()(asking.query)
app.command()(asking.chat)
app.command()(catalog.inspect)
app.command()(catalog.operators)
app.command()(catalog.methods)
app.command()(serving.serve)
app.command("mcp")(serving.mcp_command)


def _register_config() -> None:
    from .config import config_app

    app.add_typer(config_app, name="config")


_register_config()


def _register_eval() -> None:
    from ..eval.cli import eval_command

    app.command("eval", help="Evaluate methods on a benchmark: metrics, cost, tables and Pareto plots.")(
        eval_command
    )


_register_eval()


def _register_train_router() -> None:
    from ..training.cli import train_router_command

    app.command("train-router", help="Train EA-GraphRAG's router from eval disagreement cases.")(
        train_router_command
    )


_register_train_router()


def _register_train_reader() -> None:
    from ..training.cli import train_reader_command

    app.command("train-reader", help="Train the offline reader's candidate ranker on the train splits.")(
        train_reader_command
    )


_register_train_reader()


def _register_train_ranker() -> None:
    from ..training.cli import train_ranker_command

    app.command(
        "train-ranker", help="Train the retrieval ranker of the `fusion` method on the train splits."
    )(train_ranker_command)


_register_train_ranker()

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
    from ..indexing.distributed import LOCAL

    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(LOCAL)
    return out


def main() -> None:
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(message)s")
    try:
        app(args=optional_ray_address(sys.argv[1:]))
    except SystemExit as exc:
        if exc.code != exitcodes.INTERRUPTED:
            raise
        from ..cancel import sigterm_received  # not before: it imports numpy, which `--help` needs not

        if sigterm_received():
            # a command without its own clean-up message (query, chat, eval, ...): its open
            # index was closed on the way out, as on Ctrl-C
            print("paretorag: stopped (SIGTERM)", file=sys.stderr, flush=True)
            raise SystemExit(exitcodes.TERMINATED) from None
        raise
