"""``paretorag serve`` (HTTP) and ``mcp`` (MCP over stdin/stdout)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from ..errors import ConfigError, MissingDependencyError, ParetoragError
from .common import AnswerLLMOpt, IndexOpt, LLMMaxWaitOpt, _fail, _llm_max_wait, _text, err

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
            import uvicorn  # noqa: F401  (the serve extra)

            from ..server import KeyRing, Limits, create_app
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
    from ..server.running import run

    run(
        application,
        host=host,
        port=port,
        keep_alive=keep_alive,
        on_stop=lambda message: err.print(f"paretorag: {message}"),
    )


def mcp_command(index_dir: Path = IndexOpt, llm: str | None = AnswerLLMOpt) -> None:
    """Serve the index to MCP clients over stdin/stdout (tools: search, answer, list_documents)."""
    from ..server.mcp_stdio import run_stdio

    try:
        run_stdio(index_dir, llm=llm)
    except ParetoragError as exc:
        _fail(exc)
