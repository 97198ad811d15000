"""``paretorag train-reader``, ``train-ranker`` and ``train-router``: the training commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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
    neural: bool = typer.Option(
        False,
        "--neural",
        help="Train the neural span model instead (torch; resumes from OUT/checkpoint.pt; exports ONNX).",
    ),
    steps: int = typer.Option(2000, "--steps", help="With --neural: optimizer steps of 16 examples."),
    cloze: int = typer.Option(
        20_000, "--cloze", help="With --neural: synthetic cloze questions from the train corpora (0: none)."
    ),
    seed: int = typer.Option(0, "--seed", help="With --neural: the seed of the data order and the heads."),
    batch: int = typer.Option(16, "--batch", help="With --neural: examples per optimizer step."),
    cloze_share: float = typer.Option(
        0.5, "--cloze-share", help="With --neural: the most of the steps the pre-training examples may take."
    ),
    extra: list[Path] = typer.Option(
        [], "--extra", help="With --neural: a SQuAD-format public train file to add (repeatable)."
    ),
    examples_out: Path | None = typer.Option(
        None,
        "--examples-out",
        help="With --neural: only build the examples (spaCy) and write them to this file.",
    ),
    examples: Path | None = typer.Option(
        None,
        "--examples",
        help="With --neural: train on this examples file (no spaCy needed; for a GPU machine).",
    ),
    device: str = typer.Option("auto", "--device", help="With --neural: auto, cpu or cuda."),
    weights_only: bool = typer.Option(
        False,
        "--weights-only",
        help="With --neural: write fp16 weights.safetensors, no ONNX (export elsewhere).",
    ),
    from_weights: Path | None = typer.Option(
        None,
        "--from-weights",
        help="With --neural: export this weights.safetensors to an ONNX folder in --out.",
    ),
    workers: int = typer.Option(1, "--workers", help="With --neural: processes that tokenize the examples."),
    checkpoint_every: int = typer.Option(
        100,
        "--checkpoint-every",
        help="With --neural: steps between checkpoints (a killed run resumes there).",
    ),
    max_seconds: float | None = typer.Option(
        None,
        "--max-seconds",
        help="With --neural: stop training after this many seconds and write what was learnt.",
    ),
    base_model: Path | None = typer.Option(
        None,
        "--base-model",
        help="With --neural: the encoder folder to start from (default: the installed MiniLM).",
    ),
    pack: bool = typer.Option(
        False,
        "--pack",
        help="With --neural --examples-out: add packed examples (several passages in one context) "
        "for the span model's packed mode.",
    ),
    train_max_length: int = typer.Option(
        256,
        "--train-max-length",
        help="With --neural: window length while training (384 for packed examples).",
    ),
) -> None:
    """Train the reader: retrieve, extract candidates and features, fit LightGBM, choose the threshold."""
    from rich.console import Console

    err = Console(stderr=True)
    if neural:
        _train_neural(
            err,
            data,
            out,
            examples_out=examples_out,
            from_weights=from_weights,
            base_model=base_model,
            weights_only=weights_only,
            steps=steps,
            cloze=cloze,
            seed=seed,
            batch=batch,
            cloze_share=cloze_share,
            extra=tuple(extra),
            examples=examples,
            device=device,
            workers=workers,
            max_seconds=max_seconds,
            checkpoint_every=checkpoint_every,
            pack=pack,
            train_max_length=train_max_length,
        )
        return

    from ..progress import RichProgress
    from .reader import TRAIN_SETS, collect, train

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


def _train_neural(
    err: Any,
    data: Path,
    out: Path,
    *,
    examples_out: Path | None,
    from_weights: Path | None,
    base_model: Path | None,
    weights_only: bool,
    pack: bool = False,
    **train: Any,
) -> None:
    """``train-reader --neural``: the span model of :mod:`paretorag.training.neural_reader`;
    ``train`` holds :func:`~paretorag.training.neural_reader.train_neural_reader`'s settings."""
    from .neural_reader import export_weights, save_examples, train_neural_reader

    steps, cloze, seed, batch = train["steps"], train["cloze"], train["seed"], train["batch"]
    if not 16 <= train["train_max_length"] <= 512:
        err.print("[red]error[/] --train-max-length must be in [16, 512]")
        raise typer.Exit(2)
    if steps < 1 or cloze < 0 or batch < 1 or train["workers"] < 1 or train["checkpoint_every"] < 1:
        err.print(
            "[red]error[/] --steps, --batch, --workers and --checkpoint-every must be at least 1 and --cloze at least 0"
        )
        raise typer.Exit(2)
    if not 0.0 <= train["cloze_share"] <= 1.0:
        err.print("[red]error[/] --cloze-share must be in [0, 1]")
        raise typer.Exit(2)
    try:
        if from_weights is not None:
            meta = export_weights(from_weights, out, model_path=base_model)
            err.print(f"wrote {out}: {', '.join(sorted(meta.get('files', {})))}")
            return
        if examples_out is not None:
            counts = save_examples(
                data, examples_out, cloze=cloze, seed=seed, extra=train["extra"], packed=pack
            )
            err.print(f"wrote {examples_out}: {sum(counts.values())} examples ({counts})")
            return
        examples = train["examples"]
        made = f"the examples of {examples}" if examples is not None else f"{cloze} cloze questions"
        err.print(f"training the neural span reader: {steps} steps of {batch}, {made}, seed {seed} -> {out}")
        meta = train_neural_reader(
            data, out, export=not weights_only, model_path=base_model, progress=err.print, **train
        )
    except ParetoragError as exc:
        err.print(f"[red]error[/] {exc}")
        raise typer.Exit(1) from exc
    files = ", ".join(sorted(meta.get("files", {}))) or meta.get("weights", {}).get("file", "")
    err.print(f"wrote {out}: {files}")


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
    rounds: int | None = typer.Option(
        None, "--rounds", help="Boosting rounds of each stage (default 300; 200 with --long)."
    ),
    long: bool = typer.Option(
        False,
        "--long",
        help="Train the long-document ranker instead (long.txt + ranker.json; the shipped one is "
        "src/paretorag/data/ranker_long) on medical's train part and, with --squad, SQuAD train articles.",
    ),
    squad: Path | None = typer.Option(
        None,
        "--squad",
        help="With --long: SQuAD v1.1 train in SQuAD JSON (the shipped model read "
        "squad-v1.1-train.from-explorer.json, paretorag.training.squad_pages).",
    ),
    ablate: bool = typer.Option(
        False,
        "--ablate",
        help="With --long: instead of a model, write OUT/ablation.json (and print it): out-of-fold "
        "hit@1 with every feature, without each group of features, and of the dense order.",
    ),
) -> None:
    """Train the retrieval ranker of `fusion`: candidates and features per question, two LightGBM stages."""
    from rich.console import Console

    from ..progress import RichProgress
    from .ranker import (
        LONG_ROUNDS,
        LONG_TRAIN_SETS,
        ROUNDS,
        collect,
        collect_long,
        long_ablation,
        train,
        train_long,
    )
    from .reader import TRAIN_SETS

    err = Console(stderr=True)
    if rounds is not None and rounds < 1:
        err.print("[red]error[/] --rounds must be at least 1")
        raise typer.Exit(2)
    if ablate and not long:
        err.print("[red]error[/] --ablate needs --long (it measures the long-document ranker's features)")
        raise typer.Exit(2)
    if long:
        try:
            long_sets = [*LONG_TRAIN_SETS, *([str(squad)] if squad else [])]
            err.print(f"training the long-document ranker on {', '.join(long_sets)}")
            with RichProgress() as progress:
                data_long = collect_long(data, cache_dir=cache, squad=squad, limit=limit, progress=progress)
            if ablate:
                found = long_ablation(data_long, rounds=rounds or LONG_ROUNDS)
                out.mkdir(parents=True, exist_ok=True)
                text = json.dumps(found, indent=1)
                (out / "ablation.json").write_text(text + "\n", encoding="utf-8")
                typer.echo(text)
                return
            meta = train_long(data_long, out, rounds=rounds or LONG_ROUNDS)
        except ParetoragError as exc:
            err.print(f"[red]error[/] {exc}")
            raise typer.Exit(1) from exc
        err.print(
            f"wrote {out}: {meta['questions']} questions, {meta['candidates']} candidates, out-of-fold "
            f"hit@1 {meta['oof_hit_at_1']:.1f} (dense {meta['dense_hit_at_1']:.1f}), sha256 {meta['sha256'][:12]}"
        )
        return
    rounds = rounds or ROUNDS
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
    from .router import TrainSettings, command_line, train_router
    from .router_fit import FitSettings

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
