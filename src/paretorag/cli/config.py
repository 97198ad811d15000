"""``paretorag config show``: the effective settings and where each came from."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ..config import KEYS, Config, Setting, selected_path
from ..errors import ConfigError
from .common import index_location

config_app = typer.Typer(
    no_args_is_help=True,
    help="The settings file (paretorag.toml) and the effective settings: `paretorag config show`.",
)
_out = Console(soft_wrap=True, emoji=False)
_err = Console(stderr=True, soft_wrap=True, emoji=False)


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return value if isinstance(value, str) else json.dumps(value)


@config_app.command("show")
def show(
    index_dir: Path | None = typer.Option(
        None, "--index", "-i", parser=index_location, help="As the commands' --index."
    ),
    method: str | None = typer.Option(None, "--method", help="As query's --method."),
    methods: str | None = typer.Option(None, "--methods", help="As index's --methods."),
    k: int | None = typer.Option(None, "-k", "--top-k", help="As query's -k."),
    llm: str | None = typer.Option(None, "--llm", help="As the commands' --llm."),
    llm_max_wait: float | None = typer.Option(None, "--llm-max-wait", help="As --llm-max-wait."),
    embedder: str | None = typer.Option(None, "--embedder", help="As index's --embedder."),
    settings: list[str] = typer.Option([], "--set", help="As index's --set STRUCTURE.NAME=VALUE."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print every setting's effective value and its source: default, the file, $PARETORAG_* or a flag.

    Give the flags of a command to see what it would use; the file is the global
    `--config PATH`, else $PARETORAG_CONFIG, else ./paretorag.toml.
    """

    flags = {
        "index.path": str(index_dir) if index_dir is not None else None,
        "index.method": method,
        "index.methods": methods,
        "index.k": k,
        "llm.model": llm,
        "llm.max_wait": llm_max_wait,
        "embedder.model": embedder,
    }
    try:
        cfg = Config.load(selected_path(), flags=flags, set_items=settings)
        cfg.check()
    except ConfigError as exc:
        _err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from None
    if as_json:
        sys.stdout.write(json.dumps(cfg.to_json(), indent=2, ensure_ascii=False) + "\n")
        return
    where = str(cfg.path) if cfg.path else "none (no --config, $PARETORAG_CONFIG or ./paretorag.toml)"
    _out.print(f"settings file: {escape(where)}")
    rows = [(s.key, _shown(s.value), _source(s)) for s in cfg.rows()]
    wk, wv = (max(len(r[i]) for r in rows) for i in (0, 1))
    for key, value, source in rows:  # one line each, never wrapped: paths stay whole
        _out.print(f"{escape(key):<{wk}}  {escape(value):<{wv}}  [dim]{escape(source)}[/]")


def _source(s: Setting) -> str:
    if s.source == "default":
        key = KEYS.get(s.key)
        return f"default ({key.doc})" if key is not None and s.value is None else "default"
    return f"{s.source} {'$' if s.source == 'env' else ''}{s.origin}"


__all__ = ["config_app"]
