"""``paretorag train-router``: train EA-GraphRAG's router from eval disagreement cases (§3.3)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import ParetoragError


def train_router_command(
    data: Path = typer.Option(
        ..., "--data", help="Benchmark folder (shared/data) or a generic JSONL folder."
    ),
    subsets: str = typer.Option(
        ...,
        "--subsets",
        help="Training subsets, comma-separated; NAME[START:STOP] keeps some questions, e.g. popqa[400:].",
    ),
    out: Path = typer.Option(
        ..., "--out", help="Router folder to write (router.json + weights.safetensors)."
    ),
    dense_method: str = typer.Option("vanilla", "--dense-method", help="Registered dense method."),
    graph_method: str = typer.Option("entity-walk", "--graph-method", help="Registered graph method."),
    work: Path = typer.Option(
        Path(".eval-cache/router-work"), "--work", help="Where per-subset eval results go (reused)."
    ),
    cache: Path | None = typer.Option(None, "--cache", help="Index cache folder (default: <work>/cache)."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="Embedder spec (default MiniLM; 'hash' for tests)."
    ),
    titles: bool = typer.Option(True, "--titles/--no-titles", help="Embed passages with their titles."),
    label_metric: str = typer.Option(
        "recall@5",
        "--label-metric",
        help="Per-question quality deciding who wins (questions without gold: context_recall@5).",
    ),
    n_features: int = typer.Option(85, "--features", help="Features kept by mutual information (85)."),
    val_fraction: float = typer.Option(0.25, "--val-fraction", help="Share of each subset for validation."),
    latency_weight: float = typer.Option(
        0.02,
        "--latency-weight",
        help="Weight of expected latency (relative to graph's) in the threshold objective.",
    ),
    epochs: int = typer.Option(300, "--epochs", help="Maximum training epochs (early stopping)."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    rerun: bool = typer.Option(False, "--rerun", help="Re-evaluate even when results.json exists."),
) -> None:
    """Train a router: evaluate both methods, label disagreements, select features, fit the MLP, tune thresholds."""
    from dataclasses import replace

    from rich.console import Console
    from rich.markup import escape

    from ..eval.cli import parse_names
    from .adapter import FitSettings
    from .train import TrainSettings, command_line, train_router

    err = Console(stderr=True)
    try:
        settings = TrainSettings(
            dense_method=dense_method,
            graph_method=graph_method,
            label_metric=label_metric,
            n_features=n_features,
            val_fraction=val_fraction,
            latency_weight=latency_weight,
            seed=seed,
            fit=replace(FitSettings(), epochs=epochs, seed=seed),
        )
        router = train_router(
            data,
            parse_names(subsets, "--subsets"),
            out,
            settings=settings,
            work=work,
            cache=cache,
            embedder=embedder,
            embed_titles=titles,
            rerun=rerun,
            command=command_line(sys.argv[1:]),
            log=lambda msg: err.print(escape(str(msg))),
        )
    except ParetoragError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from None
    tuning = router.meta.get("tuning", {})
    typer.echo(
        f"router written to {out}: tau_low={router.tau_low} tau_high={router.tau_high} "
        f"tau_single={router.tau_single}; validation quality {tuning.get('quality', {})}; "
        f"routes {tuning.get('route_share', {})}"
    )


__all__ = ["train_router_command"]
