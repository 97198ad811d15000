"""``paretorag eval``: a plain typer-compatible command function (registered by :mod:`paretorag.cli`)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import ConfigError, ParetoragError


def parse_ks(text: str) -> list[int]:
    """``"2,5"`` -> ``[2, 5]`` (positive integers, sorted, unique)."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ConfigError(
            f"--k must be comma-separated positive integers like 1,2,5,10, got {text!r}"
        ) from None
    if not ks or ks[0] <= 0:
        raise ConfigError(f"--k must be comma-separated positive integers like 1,2,5,10, got {text!r}")
    from ..types import MAX_K

    if ks[-1] > MAX_K:
        raise ConfigError(f"--k cut-offs must be at most {MAX_K} (the retrieval depth limit), got {text!r}")
    return ks


def parse_names(text: str, option: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; at least one name."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ConfigError(f"{option} needs at least one name")
    return list(dict.fromkeys(names))


def eval_command(
    data: Path = typer.Option(
        ..., "--data", help="Benchmark folder (shared/data) or a generic JSONL folder."
    ),
    subset: str = typer.Option(
        ...,
        "--subset",
        help="Subset name(s), comma-separated: musique_dev200, hotpotqa_dev200, popqa, jsonl, ...",
    ),
    methods: str = typer.Option("vanilla", "--methods", help="Comma-separated method names."),
    limit: int | None = typer.Option(
        None, "--limit", help="Evaluate the first N questions (corpus stays whole)."
    ),
    limit_per_type: int | None = typer.Option(
        None,
        "--limit-per-type",
        help="Evaluate the first N questions of each question type (GraphRAG-Bench lists them type by type).",
    ),
    k: str = typer.Option("1,2,5,10", "--k", help="Recall cut-offs; retrieval depth is the largest."),
    llm: str = typer.Option("extractive", "--llm", help="LLM spec for indexing and answers."),
    retrieval_only: bool = typer.Option(False, "--retrieval-only", help="Skip answer generation."),
    out: Path = typer.Option(
        Path("eval-out"), "--out", help="Output folder (one sub-folder per subset if several)."
    ),
    cache: Path | None = typer.Option(
        None, "--cache", help="Index cache folder (default: <out>/.index-cache)."
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="Embedder spec (default MiniLM; 'hash' for tests)."
    ),
    titles: bool = typer.Option(
        True, "--titles/--no-titles", help="Embed passages with their titles (default on)."
    ),
    chunking: str | None = typer.Option(
        None,
        "--chunking",
        help="Chunkings to compare, comma-separated KIND[:SIZE] (KIND sections or sentences, SIZE in "
        "tokens, default 1200), e.g. sections:600,sections:1200,sentences:1200: one index each, one "
        "row each per method. Default: the index's own (sentences, 1200 for a new one).",
    ),
    corpus: str = typer.Option(
        "full", "--corpus", help="'full' corpus, or 'own': only the questions' passages."
    ),
    shuffle_corpus: int | None = typer.Option(
        None,
        "--shuffle-corpus",
        metavar="SEED",
        help="Index the corpus in a random order drawn from SEED (benchmark corpora list each "
        "question's passages together; this shows whether a method scores from the order).",
    ),
    answer_k: int | None = typer.Option(
        None, "--answer-k", help="Passages given to the answer (method default)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write the Pareto plots."),
    readers: str | None = typer.Option(
        None,
        "--readers",
        help="Who answers, comma-separated: reader (the offline reader), extractive (evidence sentences), "
        "llm; several give one row each per method, e.g. --readers extractive,reader. Default: the LLM "
        "when --llm is generative, else the reader.",
    ),
    settings: list[str] = typer.Option(
        [],
        "--set",
        help="Builder setting STRUCTURE.NAME=VALUE, e.g. --set tree.scope=auto (repeatable; "
        "the others at their defaults, whatever an earlier run on the cached index set).",
    ),
    judge: str | None = typer.Option(
        None,
        "--judge",
        help="LLM spec of a judge, e.g. openai:MODEL: with --abstract it compares answers head to head "
        "(default: --llm); otherwise it also scores each answer against the reference (Judge acc).",
    ),
    abstract: bool = typer.Option(
        False,
        "--abstract",
        help="Abstract questions judged head to head (unified framework §7.3): questions generated from "
        "the corpus's summaries or read from --questions, win-rate matrices per criterion.",
    ),
    questions: Path | None = typer.Option(
        None, "--questions", help="With --abstract: questions file (.jsonl, .json or one per line)."
    ),
    summaries: str | None = typer.Option(
        None,
        "--summaries",
        help="With --abstract: what the question writer reads, 'communities' (needs graphrag-global in "
        "--methods) or 'corpus' (excerpts spread over the corpus). Default: communities when "
        "graphrag-global is in --methods, else corpus.",
    ),
    personas: int = typer.Option(5, "--personas", help="With --abstract: users to imagine."),
    tasks: int = typer.Option(5, "--tasks", help="With --abstract: tasks per user."),
    per_task: int = typer.Option(5, "--per-task", help="With --abstract: questions per user and task."),
) -> None:
    """Evaluate methods on a benchmark: results.json, results.md and Pareto plots."""
    from rich.console import Console

    try:
        if abstract:
            _run_abstract(
                data,
                subset,
                methods,
                llm=llm,
                judge=judge,
                questions=questions,
                summaries=summaries,
                personas=personas,
                tasks=tasks,
                per_task=per_task,
                limit=limit,
                out=out,
                cache=cache,
                embedder=embedder,
                settings=settings,
                plots=plots,
                readers=readers,
            )
            return
        _run(
            data,
            subset,
            methods,
            limit,
            k,
            llm,
            retrieval_only,
            out,
            cache,
            embedder,
            titles,
            corpus,
            answer_k,
            seed,
            plots,
            settings,
            readers,
            shuffle_corpus,
            judge,
            limit_per_type,
            chunking,
        )
    except ParetoragError as exc:
        from rich.markup import escape

        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(code=2) from None


def _run(
    data: Path,
    subset: str,
    methods: str,
    limit: int | None,
    k: str,
    llm: str,
    retrieval_only: bool,
    out: Path,
    cache: Path | None,
    embedder: str | None,
    titles: bool,
    corpus: str,
    answer_k: int | None,
    seed: int,
    plots: bool,
    settings: list[str] | None = None,
    readers: str | None = None,
    shuffle_corpus: int | None = None,
    judge: str | None = None,
    limit_per_type: int | None = None,
    chunking: str | None = None,
) -> None:
    from rich.console import Console
    from rich.markup import escape

    from ..answering.answerer import READERS
    from ..indexing.settings import parse_builder_settings
    from ..progress import RichProgress
    from .report import answer_table, results_table
    from .runner import parse_chunking, run_eval

    subsets = parse_names(subset, "--subset")
    names = parse_names(methods, "--methods")
    from ..retrieval.methods.base import get_method

    for name in names:  # a typo fails now ("did you mean ...?"), not after the corpus is indexed
        get_method(name)
    who: list[str | None] = list(parse_names(readers, "--readers")) if readers else [None]
    for r in who:
        if r is not None and r not in READERS:
            raise ConfigError(f"--readers: unknown reader {r!r}; use {', '.join(READERS)}")
    ks = parse_ks(k)
    chunkings = list(parse_names(chunking, "--chunking")) if chunking else []
    for c in chunkings:
        parse_chunking(c)  # a typo fails before any index is built
    from ..types import MAX_K

    if answer_k is not None and answer_k < 1:
        raise ConfigError(f"--answer-k must be a positive integer, got {answer_k}; e.g. --answer-k 5")
    if answer_k is not None and answer_k > MAX_K:
        raise ConfigError(f"--answer-k must be at most {MAX_K}, got {answer_k}; e.g. --answer-k 5")
    console = Console()
    for name in subsets:
        target = out / name if len(subsets) > 1 else out
        with RichProgress() as progress:
            payload = run_eval(
                data,
                name,
                names,
                limit=limit,
                ks=ks,
                llm=llm,
                retrieval_only=retrieval_only,
                out_dir=target,
                cache_dir=cache if cache is not None else out / ".index-cache",
                embedder=embedder,
                embed_titles=titles,
                builders=parse_builder_settings(settings or []),
                corpus=corpus,
                shuffle_corpus=shuffle_corpus,
                answer_k=answer_k,
                seed=seed,
                progress=progress,
                plots=plots,
                readers=who,
                judge=judge,
                limit_per_type=limit_per_type,
                chunkings=chunkings,
            )
        console.print(
            f"\n[bold]{escape(str(payload['dataset']['name']))}[/bold] -> {escape(str(target))}/results.md"
        )
        typer.echo(results_table(payload))
        answers = answer_table(payload)
        if answers:
            typer.echo("\n" + answers)


def _run_abstract(
    data: Path,
    subset: str,
    methods: str,
    *,
    llm: str,
    judge: str | None,
    questions: Path | None,
    summaries: str | None,
    personas: int,
    tasks: int,
    per_task: int,
    limit: int | None,
    out: Path,
    cache: Path | None,
    embedder: str | None,
    settings: list[str],
    plots: bool,
    readers: str | None,
) -> None:
    from rich.console import Console
    from rich.markup import escape

    from ..answering.answerer import READERS
    from ..indexing.settings import parse_builder_settings
    from ..progress import RichProgress
    from .abstract import default_summaries, run_abstract
    from .abstract_report import winrate_table

    if "," in subset:
        raise ConfigError("--abstract evaluates one corpus at a time: give one --subset")
    names = parse_names(methods, "--methods")
    if summaries is None:
        summaries = default_summaries(names)
        if summaries == "corpus" and questions is None:
            typer.echo(
                "note: the questions are written from corpus excerpts (--summaries corpus): the community "
                "reports of --summaries communities need graphrag-global in --methods",
                err=True,
            )
    reader = readers.strip() if readers else None
    if reader is not None and reader not in READERS:
        raise ConfigError(f"--readers: with --abstract give one reader of {', '.join(READERS)}")
    with RichProgress() as progress:
        payload = run_abstract(
            data,
            subset,
            names,
            llm=llm,
            judge=judge,
            questions_file=questions,
            summaries=summaries,
            personas=personas,
            tasks=tasks,
            per_task=per_task,
            limit=limit,
            out_dir=out,
            cache_dir=cache if cache is not None else out / ".index-cache",
            embedder=embedder,
            reader=reader,
            builders=parse_builder_settings(settings),
            progress=progress,
            plots=plots,
        )
    Console().print(f"\n[bold]abstract questions[/bold] -> {escape(str(out))}/abstract.md")
    typer.echo(winrate_table(payload["win_rates"], "Overall"))
    jc = payload["judge_cost"]
    typer.echo(
        f"judge: {jc['calls']} calls, {jc['prompt_tokens']} prompt + {jc['completion_tokens']} completion tokens"
    )


__all__ = ["eval_command", "parse_ks", "parse_names"]
