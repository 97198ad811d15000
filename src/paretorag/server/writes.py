"""What each server write does, and how a stored write is rebuilt after a crash.

A job's work is a function of the writing RAG and its progress (:data:`~.jobs.Work`);
:func:`insert_work` and :func:`delete_work` make them, for new jobs and for jobs an
earlier server stored and did not finish (:func:`resume`, at start-up). A resumed job
finds what the killed run stored (documents, cached vectors, finished structures) and only
finishes the work; its counts are those of its first run (``baseline``), so an insert
killed after its commit still reports its documents as added.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, ParetoragError
from ..ingest.files import Problem, doc_id_for, read_paths
from ..rag import RAG
from ..storage.jobs import MAX_ATTEMPTS, UPLOADS, JobRecord, JobTable, committed_doc_ids
from ..types import Document
from .jobs import JobProgress, Work, Writer

log = logging.getLogger("paretorag.server")
Loader = Callable[[], tuple[list[Document], list[Problem]]]


def insert_work(
    table: JobTable,
    job_id: str,
    load: Loader,
    *,
    resumed: bool,
    names: dict[str, str] | None = None,
    folder: Path | None = None,
) -> Work:
    """Insert what ``load`` reads; ``folder`` (an upload's saved files) is removed when the job ends."""

    def work(rag: RAG, progress: JobProgress) -> dict[str, Any]:
        try:
            docs, problems = load()
            ids = [d.doc_id for d in docs]
            # the job's documents already committed when it first ran: "unchanged" even
            # when a re-run after a crash finds all of them committed
            table.set_baseline(job_id, sorted(set(ids) & committed_doc_ids(rag.backend, rag.manifest)))
            record = table.get(job_id) if resumed else None
            report = rag.insert(docs, progress=progress)
            report.problems = [*problems, *report.problems]
            out = report_json(report, rag, ids, names)
            if record is not None and record.baseline is not None:
                unique = set(ids)
                out["unchanged"] = len(unique & set(record.baseline))
                out["added"] = len(unique) - out["unchanged"]
            return out
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    return work


def files_work(table: JobTable, job_id: str, folder: Path, names: dict[str, str], *, resumed: bool) -> Work:
    """Insert the files of an upload (``names``: saved path -> uploaded name)."""

    def load() -> tuple[list[Document], list[Problem]]:
        docs, problems = read_paths(list(names))
        return [uploaded(d, names) for d in docs], problems

    return insert_work(table, job_id, load, resumed=resumed, names=names, folder=folder)


def delete_work(doc_ids: list[str], *, resumed: bool) -> Work:
    def work(rag: RAG, progress: JobProgress) -> dict[str, Any]:
        ids = list(doc_ids)
        gone: list[str] = []
        if resumed:  # removed by the run that was killed after its commit
            known = rag.store.all_document_ids()
            gone = [i for i in ids if i not in known]
            ids = [i for i in ids if i in known]
        removed = rag.delete(ids, progress=progress) if ids else []
        return {
            "deleted": [*removed, *gone],
            "documents": int(rag.manifest.counts.get("documents", 0)),
            "chunks": int(rag.manifest.counts.get("chunks", 0)),
            "generation": rag.manifest.generation,
        }

    return work


def resume(
    root: Path, table: JobTable, writer: Writer, probe: Callable[[str], bool | None] | None = None
) -> list[str]:
    """Queue the jobs an earlier server accepted and did not finish; fail, with the
    reason, those whose input is gone. Returns one line per job, for the log. ``probe``
    says whether a job's owner (``host:pid``) still runs, on any host, where the index can
    tell (:meth:`~paretorag.storage.postgres.PostgresBackend.owner_alive`)."""
    lines: list[str] = []
    unfinished = table.unfinished()
    for rec in unfinished:
        if rec.owner_alive(probe):  # another server on this index runs it
            lines.append(f"job {rec.job_id} is run by the server {rec.owner}; not resumed here")
            continue
        table.claim(rec.job_id)
        if rec.attempts >= MAX_ATTEMPTS:  # it may be what killed the server: not run again
            reason = ParetoragError(
                f"the server stopped {rec.attempts} times while running job {rec.job_id} (killed, out of "
                "memory?); it is not run again: see the server's log, then send the write again"
            )
            writer.fail(rec, reason)
            lines.append(f"job {rec.job_id} failed: {reason}")
            continue
        try:
            work, what = recover(root, table, rec)
        except InputError as exc:
            writer.fail(rec, exc)
            lines.append(f"job {rec.job_id} failed: {exc}")
            continue
        writer.submit(rec.kind, rec.detail, work, job_id=rec.job_id, resumed=rec)
        lines.append(f"resuming job {rec.job_id}: {what}")
    live = {r.job_id for r in unfinished}
    uploads = root / UPLOADS
    if uploads.is_dir():  # files of uploads killed before their job was stored
        for d in uploads.iterdir():
            if d.name not in live:
                shutil.rmtree(d, ignore_errors=True)
    for line in lines:
        log.warning("%s", line)
    return lines


def recover(root: Path, table: JobTable, rec: JobRecord) -> tuple[Work, str]:
    """The work of a stored job, rebuilt from its stored input, and what it is (for the log)."""
    inputs = rec.input
    if rec.kind == "delete":
        ids = [str(i) for i in inputs.get("doc_ids", [])]
        if not ids:
            raise InputError(f"job {rec.job_id} stored no document id to delete; send the DELETE again")
        return delete_work(ids, resumed=True), f"delete of {len(ids)} document(s)"
    if inputs.get("source") == "records":
        docs = table.documents(rec.job_id)
        expected = int(inputs.get("documents", -1))
        if len(docs) != expected:
            raise InputError(
                f"job {rec.job_id} was accepted with {expected} records, but {len(docs)} are stored "
                f"in {table.store.location}; send them again"
            )
        return insert_work(table, rec.job_id, lambda: (docs, []), resumed=True), f"{len(docs)} documents"
    if inputs.get("source") == "files":
        folder = root / UPLOADS / rec.job_id
        names = {str(root / p): str(n) for p, n in dict(inputs.get("files", {})).items()}
        if any(not Path(p).is_file() for p in names):  # accepted on another host: stored with the job
            table.restore_files(rec.job_id, root)
        missing = [n for p, n in names.items() if not Path(p).is_file()]
        if not names or missing:
            raise InputError(
                f"job {rec.job_id}: the uploaded file(s) {', '.join(missing) or '(none)'} are no longer "
                f"in {folder}; upload them again"
            )
        return files_work(table, rec.job_id, folder, names, resumed=True), f"{len(names)} uploaded file(s)"
    raise InputError(f"job {rec.job_id} has an input this version cannot read ({inputs}); send it again")


def uploaded(doc: Document, names: dict[str, str]) -> Document:
    """A document read from a saved upload, under the uploaded name: its source, and its title
    where the title is the file's name (a long name is saved shortened, see
    :func:`~.service.saved_name`)."""
    path = doc.source.partition("#")[0]
    doc = dataclasses.replace(doc, source=upload_source(doc.source, names))
    original = names.get(path)
    if original is None or doc.title != Path(path).stem or Path(original).stem == doc.title:
        return doc
    title = Path(original).stem
    return dataclasses.replace(doc, title=title, doc_id=doc_id_for(title, doc.text))


def upload_source(source: str, names: dict[str, str]) -> str:
    """``/tmp/paretorag-upload-x/000/a.json#3`` -> ``upload:a.json#3``."""
    path, hash_, rest = source.partition("#")
    return f"upload:{names.get(path, Path(path).name)}" + (hash_ + rest if hash_ else "")


def report_json(
    report: Any, rag: RAG, doc_ids: list[str], names: dict[str, str] | None = None
) -> dict[str, Any]:
    problems = []
    for p in report.problems:
        text = str(p)
        for saved, original in (names or {}).items():  # name the uploaded file, not where it was saved
            text = text.replace(saved, original)
        problems.append(text)
    return {
        "added": report.added,
        "unchanged": report.unchanged,
        "resumed": report.resumed,
        "doc_ids": doc_ids,
        "problems": problems,
        "committed": report.committed,
        "documents": int(rag.manifest.counts.get("documents", 0)),
        "chunks": int(rag.manifest.counts.get("chunks", 0)),
        "generation": rag.manifest.generation,
        "seconds": round(report.seconds, 3),
    }
