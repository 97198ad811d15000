"""``paretorag copy --from SRC --to DST``: move a committed index between backends.

The source is read under its writer lock (one consistent generation), the destination
written under its own: the store's tables (documents with their order, chunks, the
embedding and LLM caches, settings), the committed chunk vectors, every structure the
manifest names, then the manifest last, the destination's commit point. A copy killed
half-way leaves a destination without a manifest, which a re-run into an empty destination
replaces. The server's jobs are not copied (they belong to the server that accepted them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import IndexFormatError, InputError
from ..progress import NullProgress, Progress
from .backend import IndexBackend
from .store import COPIED
from .vectors import VectorIndex


@dataclass
class CopyReport:
    rows: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    structures: list[str] = field(default_factory=list)
    generation: int = 0


def copy_index(src: IndexBackend, dst: IndexBackend, progress: Progress | None = None) -> CopyReport:
    """Copy the committed index ``src`` into the empty ``dst`` (see the module docstring)."""
    progress = progress or NullProgress()
    if src.location == dst.location:
        raise InputError(f"--from and --to are the same index ({src.location}); name another --to")
    if not src.exists():
        raise IndexFormatError(f"{src.location} holds no paretorag index; nothing to copy")
    dst.create()
    with src.writer_lock(wait=True), dst.writer_lock(wait=False):
        m = src.load_manifest()
        if m is None:
            raise IndexFormatError(f"{src.location} holds no committed index; nothing to copy")
        out = dst.open_store()
        inp = src.open_store()
        try:
            if dst.load_manifest() is not None or not out.is_empty():
                raise InputError(
                    f"{dst.location} already holds an index; copy into a new folder or an empty "
                    "database schema (postgresql://...?schema=NAME)"
                )
            report = CopyReport(generation=m.generation)
            with progress.task("copying tables", len(COPIED)) as bar:
                for table in COPIED:
                    n = 0
                    for rows in inp.table_batches(table):
                        out.put_rows(table, rows)
                        n += len(rows)
                    report.rows[table] = n
                    bar.advance()
            if m.vectors:
                vectors = src.load_vectors(m.vectors, "exact")
                dst.save_vectors(
                    m.vectors, VectorIndex(vectors.matrix, kind=vectors.kind), src.vector_ids(m.vectors)
                )
                report.vectors = len(vectors)
            with progress.task("copying structures", len(m.structures)) as bar:
                for name, info in m.structures.items():
                    dst.save_structure(info["dir"], src.load_structure(info["dir"]))
                    report.structures.append(name)
                    bar.advance()
            dst.save_manifest(m)  # the commit point, last
        finally:
            inp.close()
            out.close()
    return report
