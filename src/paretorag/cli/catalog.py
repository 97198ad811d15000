"""``paretorag inspect``, ``operators`` and ``methods``: what an index holds, what the library offers."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import IndexFormatError, ParetoragError
from . import exitcodes
from .common import IndexOpt, _fail, _text, out


def inspect(
    index_dir: Path = IndexOpt,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    documents: bool = typer.Option(False, "--documents", help="List every document."),
    check: bool = typer.Option(
        False, "--check", help="Verify every file the manifest names, and SQLite; exit 1 on a problem."
    ),
) -> None:
    """Show documents, chunks, structures, sizes, models and LLM usage per stage."""
    from ..rag import RAG

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
                if rag.backend.is_folder:
                    out.print(
                        f"{index_dir}: every file the manifest names is present and consistent; SQLite ok"
                    )
                else:
                    out.print(f"{index_dir}: every object the manifest names is present and consistent")
                return
            damaged = rag.store.integrity()  # a damaged database is reported here, not only by writes
            if damaged:
                raise IndexFormatError(
                    f"{damaged[0]}; restore {rag.store.location} from a backup, or index the sources "
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
    t = _table("structure", "details")
    for name, info in stats["structures"].items():
        t.add_row(_text(name), _text(", ".join(f"{k}={v}" for k, v in info.items() if k != "dir")))
    out.print(t)
    u = _table("stage", "LLM calls", "cached", "prompt tokens", "completion tokens", "seconds", numbers=True)
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
    if calls:  # a stage's counts one per line (seven columns would not fit 80); zeros left out
        c = _table("stage", "model calls")
        for stage, n in calls.items():
            counts = [f"{n[k]} {label}" for k, label in MODEL_CALLS if n.get(k)]
            c.add_row(_text(stage), "\n".join(counts) or "none")
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


MODEL_CALLS = (  # manifest.model_calls counters, as inspect names them
    ("embed_texts", "texts embedded"),
    ("embed_batches", "embedder batches"),
    ("embed_cached", "cache hits"),
    ("pooled_spans", "spans pooled"),
    ("spacy_docs", "spaCy docs"),
    ("sentences_scored", "sentences scored (extractive)"),
)


def _table(*columns: str, numbers: bool = False, caption: str | None = None) -> Table:
    """A table whose every value stays readable at 80 columns: the first column (names such as
    ``build.entity_graph``) is never cut, the others wrap (long words fold) instead of ending in
    an ellipsis; with ``numbers``, the columns after the first are right-aligned."""
    t = Table(caption=caption)
    for i, name in enumerate(columns):
        if i == 0:
            t.add_column(name, no_wrap=True)
        else:
            t.add_column(name, overflow="fold", justify="right" if numbers else "left")
    return t


def _print_pending(pending: dict[str, Any], index_dir: Path) -> None:
    """Work stored but not committed, who left it, and server jobs not finished."""
    from ..storage.jobs import describe_origins

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
    t = _table(*columns, caption=caption)
    for row in rows:
        t.add_row(
            *(
                escape(", ".join(map(str, v)) if isinstance(v, list) else str(v))
                for v in (row.get(c, "") for c in columns)
            )
        )
    out.print(t)


def operators(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every registered retrieval operator (what it produces and requires, LLM use, paper)."""
    from ..retrieval import catalog

    _print_catalog(
        catalog.operators(),
        as_json,
        ["name", "kind", "produces", "consumes", "requires", "uses_llm", "paper"],
    )


def methods(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    table: bool = typer.Option(
        False, "--table", help="Print the unified framework's Table 3: operators per method, from the code."
    ),
    markdown: bool = typer.Option(False, "--markdown", help="With --table: print it as Markdown."),
) -> None:
    """List every registered method with its steps, structures and LLM use."""
    from ..retrieval import catalog

    if table and markdown:
        sys.stdout.write(catalog.table3_markdown())
        return
    if table:
        cols = ["method", "graph", "question", *catalog.TABLE3_COLUMNS, "query_llm", "generation"]
        _print_catalog(catalog.table3(), as_json, cols)
        return
    if not as_json:
        from .methods import render

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
