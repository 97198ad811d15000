"""``paretorag train-reader``: train the reader's candidate ranker on the train splits."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import ParetoragError


def train_reader_command(
    data: Path = typer.Option(..., "--data", help="Benchmark folder (shared/data)."),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Model folder to write (ranker.txt + reader.json); the shipped one is src/paretorag/data/reader.",
    ),
    method: str = typer.Option("entity-walk", "--method", help="Retrieval method that fetches the passages."),
    k: int = typer.Option(5, "-k", help="Passages read per question."),
    cache: Path = typer.Option(
        Path("eval-out/.index-cache"), "--cache", help="Index cache (shared with `paretorag eval`)."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="At most this many questions per set (for a quick run)."
    ),
    max_abstain: float = typer.Option(
        0.15,
        "--max-abstain",
        help="Share of answerable held-out training questions the threshold may withhold.",
    ),
) -> None:
    """Train the reader: retrieve, extract candidates and features, fit LightGBM, choose the threshold."""
    from rich.console import Console

    from ..progress import RichProgress
    from .reader import TRAIN_SETS, collect, train

    err = Console(stderr=True)
    if k < 1:
        err.print("[red]error[/] -k must be at least 1")
        raise typer.Exit(2)
    if not 0.0 <= max_abstain < 1.0:
        err.print("[red]error[/] --max-abstain must be in [0, 1)")
        raise typer.Exit(2)
    try:
        sets = ", ".join(f"{s}[{a}:{b or ''}]" for s, a, b in TRAIN_SETS)
        err.print(f"training the reader on {sets} with {method}, k={k}")
        with RichProgress() as progress:
            data_rows = collect(data, method=method, k=k, cache_dir=cache, limit=limit, progress=progress)
        meta = train(data_rows, out, max_abstain=max_abstain)
    except ParetoragError as exc:
        err.print(f"[red]error[/] {exc}")
        raise typer.Exit(1) from exc
    err.print(
        f"wrote {out}: {meta['questions']} questions, {meta['rows']} candidates ({meta['positives']} positive), "
        f"held-out top-1 {meta['held_out_top1_accuracy']:.3f}, threshold {meta['threshold']:.3f}, sha256 {meta['sha256'][:12]}"
    )


def train_ranker_command(
    data: Path = typer.Option(..., "--data", help="Benchmark folder (shared/data)."),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Model folder to write (first.txt, second.txt, ranker.json); the shipped one is "
        "src/paretorag/data/ranker.",
    ),
    cache: Path = typer.Option(
        Path("eval-out/.index-cache"), "--cache", help="Index cache (shared with `paretorag eval`)."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="At most this many questions per set (for a quick run)."
    ),
    rounds: int = typer.Option(300, "--rounds", help="Boosting rounds of each stage."),
) -> None:
    """Train the retrieval ranker of `fusion`: candidates and features per question, two LightGBM stages."""
    from rich.console import Console

    from ..progress import RichProgress
    from .ranker import collect, train
    from .reader import TRAIN_SETS

    err = Console(stderr=True)
    if rounds < 1:
        err.print("[red]error[/] --rounds must be at least 1")
        raise typer.Exit(2)
    try:
        sets = ", ".join(f"{s}[{a}:{b or ''}]" for s, a, b in TRAIN_SETS)
        err.print(f"training the retrieval ranker on {sets}")
        with RichProgress() as progress:
            rows = collect(data, cache_dir=cache, limit=limit, progress=progress)
        meta = train(rows, out, rounds=rounds)
    except ParetoragError as exc:
        err.print(f"[red]error[/] {exc}")
        raise typer.Exit(1) from exc
    err.print(
        f"wrote {out}: {meta['questions']} questions, {meta['candidates']} candidates, "
        f"out-of-fold first-stage R@5 {meta['oof_first_stage_r5']:.1f}, "
        f"sha256 {meta['first_sha256'][:12]} / {meta['second_sha256'][:12]}"
    )
