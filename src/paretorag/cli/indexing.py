"""``paretorag index``, ``insert``, ``delete`` and ``repair``: the commands that write an index."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import ConfigError, IndexFormatError, ParetoragError
from ..progress import RichProgress
from . import exitcodes
from .common import (
    IndexOpt,
    LLMMaxWaitOpt,
    NewIndexOpt,
    NoWaitOpt,
    _configured,
    _fail,
    _interrupted,
    _llm_max_wait,
    _open,
    _text,
    err,
    index_location,
    out,
)

if TYPE_CHECKING:
    from ..rag import RAG, IndexReport


def _methods(value: str | None) -> list[str] | None:
    return [m.strip() for m in value.split(",") if m.strip()] if value else None


def _notes(rag: RAG) -> None:
    for note in rag.notes:
        err.print(f"[yellow]note[/] {note}")


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
    from ..config import active
    from ..indexing.settings import parse_builder_settings

    merged = active().builder_settings()  # [set.*] of paretorag.toml and $PARETORAG_SET; --set wins
    for structure, values in parse_builder_settings(items).items():
        merged[structure] = {**merged.get(structure, {}), **values}
    active().add_set_flags(items)  # a value a builder refuses is then said as `--set STRUCTURE.NAME`
    return merged


def _build_methods(
    index_dir: Path,
    no_wait: bool,
    methods: str | None,
    settings: list[str],
    rebuild: Sequence[str] = (),
    **config: Any,
) -> None:
    """``index --index DIR --methods M`` without files: build M's structures from the stored chunks
    (``--rebuild S`` alone rebuilds S for the configured methods)."""
    names = _methods(methods)
    if not names and rebuild:
        rag = _open(index_dir, no_wait, "index", create=False, llm=config.get("llm"))
        with rag, _bars() as progress:
            rag.build(progress=progress, rebuild=rebuild)
        out.print(f"rebuilt {', '.join(rebuild)} in {_text(index_dir)}")
        return
    if not names:
        raise ConfigError(
            "index needs files or folders to add, or --methods to build for the documents already in "
            f"--index (e.g. `paretorag index --index {index_dir} --methods fusion`)"
        )
    builders = _parse_settings(settings)
    rag = _open(index_dir, no_wait, "index", create=False, methods=names, builders=builders, **config)
    try:
        with rag, _bars() as progress:
            rag.build(progress=progress, rebuild=rebuild)  # the methods were added when it opened
            _notes(rag)
            n_docs = len(rag.store.all_document_ids())
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)
    out.print(f"built {', '.join(names)} for the {n_docs} documents in {_text(index_dir)}")


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
        None,
        "--chunk-overlap",
        help="Overlap in tokens (default 100; a twelfth of --chunk-size when that is 100 or less).",
    ),
    chunking: str | None = typer.Option(
        None,
        "--chunking",
        help="Where chunks end: sentences (default: wherever a chunk is full) | sections (at headings, "
        "page breaks and paragraphs, with heading paths).",
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
    rebuild: list[str] = typer.Option(
        [],
        "--rebuild",
        metavar="STRUCTURE",
        help="Build this structure afresh instead of updating it, e.g. raptor_tree (repeatable).",
    ),
) -> None:
    """Index files and build the structures the methods need (repairing missing files).

    An edited file replaces its old version (a document is its path, or --id); exit codes:
    0 done, 2 nothing done (error), 3 some files could not be read (docs/exit-codes.md).
    """
    from ..indexing.distributed import RayCluster

    rag = None
    cluster = RayCluster(ray, num_cpus=ray_cpus) if ray else None
    try:
        _llm_max_wait(llm_max_wait)
        if not paths:
            _build_methods(
                index_dir,
                no_wait,
                methods,
                settings,
                llm=llm,
                replace_methods=replace_methods,
                rebuild=rebuild,
            )
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
            chunking=chunking,
            embed_titles=embed_titles,
            builders=_parse_settings(settings),
            ann=ann,
        )
        with rag, _bars() as progress, cluster or contextlib.nullcontext():
            report = rag.index(
                paths,
                progress=progress,
                cluster=cluster,
                strict=strict,
                prune=prune,
                key=doc_key,
                rebuild=rebuild,
            )
            _notes(rag)
            summary = _report(report, rag)
        _finish(report, summary)
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)


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
        if report.removed:
            out.print(
                f"removed {len(report.removed)} file(s) of earlier generations: {', '.join(report.removed)}"
            )
        c = rag.manifest.counts
        out.print(
            ("repaired" if report.rebuilt or report.removed else "nothing to repair")
            + f"; index has {c.get('documents', 0)} documents, {c.get('chunks', 0)} chunks"
        )
    except ParetoragError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted(rag, index_dir)


def copy(
    source: Path = typer.Option(
        ..., "--from", parser=index_location, help="The index to copy: a folder or a postgresql:// URL."
    ),
    dest: Path = typer.Option(
        ...,
        "--to",
        parser=index_location,
        help="Where to: a new folder, or a postgresql:// URL whose schema holds no index "
        "(postgresql://USER@HOST/DB?schema=NAME).",
    ),
) -> None:
    """Copy a committed index to another place or backend (folder <-> PostgreSQL), then check
    the copy as `inspect --check` does. The server's job records stay behind."""
    from ..indexing.repair import check
    from ..storage.backend import open_backend
    from ..storage.copy import copy_index

    try:
        src, dst = open_backend(source), open_backend(dest)
        with _bars() as progress:
            report = copy_index(src, dst, progress)
        manifest = dst.load_manifest()
        store = dst.open_store()
        try:
            problems = [str(p) for p in check(dst, manifest, store)] if manifest else ["no manifest"]
        finally:
            store.close()
            src.close()
            dst.close()
        if problems:
            _fail(IndexFormatError(f"the copy in {dst.location} does not check: {'; '.join(problems)}"))
        out.print(
            f"copied {report.rows.get('documents', 0)} documents, {report.vectors} chunk vectors and "
            f"{len(report.structures)} structures (generation {report.generation}) to {_text(dst.location)}; "
            "checked: no problems"
        )
    except ParetoragError as exc:
        _fail(exc)
