"""The on-disk index: SQLite (WAL) for documents, chunks, caches and stage status.

Vectors live beside it as ``.npy`` plus a faiss index (:mod:`paretorag.storage.vectors`);
built structures as ``structures/<name>/`` (:mod:`paretorag.storage.structures`).

One module (over 400 lines) because every table shares one SQLite connection, its lock
and its error translation; each method is one statement or transaction.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ..errors import DamagedIndexError
from ..textutil import heading_paths
from ..types import Chunk, Document, IntArray
from .database import Database, SqliteDatabase, Transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT UNIQUE NOT NULL,
    title TEXT NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    presplit INTEGER NOT NULL,
    n_chars INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    doc_key TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL,
    text_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, ord);
CREATE TABLE IF NOT EXISTS embedding_cache (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
);
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


# what `paretorag copy` moves, table by table: columns in insert order, and the order rows keep
# (documents by insertion, as chunk order follows it); the server's jobs stay behind
COPIED: dict[str, tuple[tuple[str, ...], str]] = {
    "documents": (("doc_id", "title", "source", "text", "presplit", "n_chars", "deleted", "doc_key"), "seq"),
    "chunks": (("chunk_id", "doc_id", "ord", "start", '"end"', "n_tokens", "text_hash"), "chunk_id"),
    "embedding_cache": (("model", "text_hash", "vector"), "model, text_hash"),
    "llm_cache": (("key", "model", "response"), "key"),
    "kv": (("key", "value"), "key"),
}


def schema(dialect: str) -> str:
    """The tables in ``dialect`` (``sqlite`` or ``postgresql``): the same columns and keys."""
    if dialect == "sqlite":
        return SCHEMA
    return (
        SCHEMA.replace(
            "seq INTEGER PRIMARY KEY AUTOINCREMENT", "seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
        ).replace("BLOB", "BYTEA")
        + "CREATE INDEX IF NOT EXISTS documents_key ON documents(doc_key);\n"
    )


def text_hash(text: str) -> str:
    """Stable content hash (sha256 hex) of a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


MIN_PASSAGE_SHARE = 0.5
"""Below this share of chunks that are their whole document, a corpus is one of long documents
(:meth:`ChunkTable.whole_document_share`): ``fusion`` keeps the walk's order there and the entity
graph leaves out generic nouns."""


@dataclass(frozen=True)
class ChunkTable:
    """All chunks of an index in canonical order (documents by insertion, then chunk order).

    Row ``i`` of every chunk-level array (vectors, graphs) refers to ``ids[i]``.
    """

    ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    titles: tuple[str, ...]
    texts: tuple[str, ...]
    orders: IntArray
    starts: IntArray
    ends: IntArray
    n_tokens: IntArray
    headings: tuple[str, ...] = ()  # heading path of each chunk ("" for none); () when all are ""

    def __len__(self) -> int:
        return len(self.ids)

    def chunk(self, row: int) -> Chunk:
        return Chunk(
            chunk_id=self.ids[row],
            doc_id=self.doc_ids[row],
            order=int(self.orders[row]),
            start=int(self.starts[row]),
            end=int(self.ends[row]),
            text=self.texts[row],
            n_tokens=int(self.n_tokens[row]),
            title=self.titles[row],
            heading=self.heading(row),
        )

    def heading(self, row: int) -> str:
        """The chunk's heading path, ``"Methods > Indexing"`` ("" outside any heading)."""
        return self.headings[row] if self.headings else ""

    def whole_document_share(self) -> float:
        """The share of chunks that are their whole document: under one half, a corpus of long
        documents (``fusion`` and the entity graph treat it so), else of passages."""
        per_doc = Counter(self.doc_ids)
        return sum(1 for d in self.doc_ids if per_doc[d] == 1) / max(len(self.doc_ids), 1)

    def embedded_texts(self, titles: bool = True, headings: bool = False) -> list[str]:
        """The texts whose vectors are the chunk vectors (``headings``: BM25's texts).

        With ``titles``, a chunk that is its whole document (a ``{title, text}`` passage) is
        embedded as ``"title\ntext"``, as HippoRAG and most dense retrievers embed passages.
        Chunks of longer documents are embedded as text only: they all share the title, which
        then blurs the chunks of one page together (answer-in-context@5 on nq_leval fell from
        88.1 to 81.0 with titles on every chunk; passage sets gained 0.6-2.9 R@5). With
        ``titles`` and ``headings`` (BM25), those chunks are prefixed with their heading path
        instead (``"Episodes > Season 2\ntext"``); the vectors leave it out (on nq_leval's
        section chunks CR@5 was 83.3 with paths in vectors and BM25, 84.5 without, and every
        existing index would re-embed its long documents). The chunk's text is always the
        returned text's suffix.
        """
        if not titles:
            return list(self.texts)
        per_doc: dict[str, int] = {}
        for d in self.doc_ids:
            per_doc[d] = per_doc.get(d, 0) + 1
        out: list[str] = []
        for row, (d, t, x) in enumerate(zip(self.doc_ids, self.titles, self.texts, strict=True)):
            if per_doc[d] == 1:
                out.append(f"{t}\n{x}" if t.strip() else x)
            else:
                h = self.heading(row) if headings else ""
                out.append(f"{h}\n{x}" if h else x)
        return out

    def fingerprint(self) -> str:
        """Hash of the chunk ids in order: structures built for it are valid iff it matches."""
        h = hashlib.sha256()
        for cid in self.ids:
            h.update(cid.encode())
            h.update(b"\n")
        return h.hexdigest()

    @classmethod
    def from_chunks(cls, chunks: Sequence[Chunk]) -> ChunkTable:
        return cls(
            ids=tuple(c.chunk_id for c in chunks),
            doc_ids=tuple(c.doc_id for c in chunks),
            titles=tuple(c.title for c in chunks),
            texts=tuple(c.text for c in chunks),
            orders=np.array([c.order for c in chunks], dtype=np.int64),
            starts=np.array([c.start for c in chunks], dtype=np.int64),
            ends=np.array([c.end for c in chunks], dtype=np.int64),
            n_tokens=np.array([c.n_tokens for c in chunks], dtype=np.int64),
            headings=tuple(c.heading for c in chunks) if any(c.heading for c in chunks) else (),
        )


def _headings(docs: dict[str, tuple[str, str, bool]], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Heading path of each chunk row ``(chunk_id, doc_id, ord, start, ...)`` (documents that
    are one pre-split passage have none)."""
    starts: dict[str, list[int]] = {}
    for r in rows:
        if not docs[r[1]][2]:
            starts.setdefault(r[1], []).append(r[3])
    paths = {d: iter(heading_paths(docs[d][1], offs, docs[d][0])) for d, offs in starts.items()}
    return [next(paths[r[1]]) if r[1] in paths else "" for r in rows]


P = ParamSpec("P")
R = TypeVar("R")


def _guarded(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """Report the database's disk-full, read-only and damaged-file errors as paretorag errors."""

    @functools.wraps(method)
    def wrapper(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.db.errors():
            return method(self, *args, **kwargs)

    return wrapper


class Store:
    """Documents, chunks, caches and stage status of one index: ``index.sqlite`` in a folder
    index (WAL mode), or the tables of a PostgreSQL database (:meth:`on`). Every write is
    one transaction."""

    FILENAME = "index.sqlite"

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / self.FILENAME
        sqlite = SqliteDatabase(self.path, SCHEMA)
        self.db: Database = sqlite
        self._lock = sqlite.lock
        self._add_key_column(sqlite)

    @classmethod
    def on(cls, db: Database) -> Store:
        """The store over an open database whose tables :func:`schema` created."""
        self = cls.__new__(cls)
        self.path = Path(db.location)
        self.db = db
        self._lock = db.lock
        return self

    @property
    def location(self) -> str:
        """What messages name: the SQLite file, or the PostgreSQL URL without its password."""
        return self.db.location

    @staticmethod
    def _add_key_column(db: SqliteDatabase) -> None:
        """Give a database made before document keys its ``doc_key`` column (NULL: matched by source).

        A read-only database is left as it is: only writers use the column.
        """
        if "doc_key" not in db.columns("documents"):
            db.try_execute("ALTER TABLE documents ADD COLUMN doc_key TEXT")
            if "doc_key" not in db.columns("documents"):  # read-only (not another process first)
                return
        db.try_execute("CREATE INDEX IF NOT EXISTS documents_key ON documents(doc_key)")

    def integrity(self) -> list[str]:
        """The database's own consistency check: empty if it is sound."""
        return self.db.integrity()

    def close(self) -> None:
        self.db.close()

    def transaction(self) -> Any:
        """One atomic write: committed on success, rolled back on any error (a context
        manager yielding a :class:`~paretorag.storage.database.Transaction`)."""
        return self.db.transaction()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.db.read(sql, params)
        return rows[0] if rows else None

    # -- documents and chunks -------------------------------------------------
    @_guarded
    def has_document(self, doc_id: str) -> bool:
        """True if the document is stored and not marked deleted."""
        with self._lock:
            row = self._one("SELECT 1 FROM documents WHERE doc_id=? AND deleted=0", (doc_id,))
        return row is not None

    def add_document(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        """Store a document and its chunks atomically (a no-op if already stored)."""
        with self.transaction() as c:
            self._insert(c, doc, chunks)

    def replace_documents(
        self, old_ids: Iterable[str], new: Sequence[tuple[Document, Sequence[Chunk]]]
    ) -> None:
        """Mark ``old_ids`` deleted and store ``new`` in one transaction: the new version of an
        edited file. A kill inside leaves the old version; after it, the committed index keeps
        serving the old version until the next commit, which serves only the new one."""
        from ..cancel import pause_point

        with self.transaction() as c:
            c.executemany("UPDATE documents SET deleted=1 WHERE doc_id=?", [(d,) for d in old_ids])
            pause_point("mid-replace")  # the old version marked, the new one not stored yet
            for doc, chunks in new:
                self._insert(c, doc, chunks)

    @staticmethod
    def _insert(c: Transaction, doc: Document, chunks: Sequence[Chunk]) -> None:
        if c.execute("SELECT 1 FROM documents WHERE doc_id=?", (doc.doc_id,)).fetchone():
            c.execute("UPDATE documents SET deleted=0 WHERE doc_id=?", (doc.doc_id,))
            if doc.key:  # a document stored before keys existed takes its file's key
                c.execute(
                    "UPDATE documents SET doc_key=? WHERE doc_id=? AND doc_key IS NULL", (doc.key, doc.doc_id)
                )
            return
        c.execute(
            "INSERT INTO documents(doc_id,title,source,text,presplit,n_chars,doc_key) VALUES (?,?,?,?,?,?,?)",
            (doc.doc_id, doc.title, doc.source, doc.text, int(doc.presplit), len(doc.text), doc.key or None),
        )
        c.executemany(
            'INSERT INTO chunks(chunk_id,doc_id,ord,start,"end",n_tokens,text_hash) VALUES (?,?,?,?,?,?,?)',
            [
                (ch.chunk_id, ch.doc_id, ch.order, ch.start, ch.end, ch.n_tokens, text_hash(ch.text))
                for ch in chunks
            ],
        )

    @_guarded
    def keyed_documents(self) -> list[tuple[str, str | None, str, bool, bool]]:
        """``(doc_id, key, source, presplit, deleted)`` of every stored document, in insertion order
        (``key`` is None for documents stored before keys existed)."""
        with self._lock:
            return [
                (str(r[0]), r[1], str(r[2]), bool(r[3]), bool(r[4]))
                for r in self.db.read(
                    "SELECT doc_id, doc_key, source, presplit, deleted FROM documents ORDER BY seq"
                )
            ]

    def mark_deleted(self, doc_ids: Iterable[str]) -> list[str]:
        """Mark documents deleted (they stay readable until :meth:`purge_deleted`).

        Returns the ids that exist, including those already marked by an unfinished
        ``delete``. The committed index keeps serving them until the next commit, so a
        crash in between loses nothing, and the next writer finishes the delete.
        """
        found: list[str] = []
        with self.transaction() as c:
            for doc_id in doc_ids:
                c.execute("UPDATE documents SET deleted=1 WHERE doc_id=?", (doc_id,))
                if c.execute("SELECT 1 FROM documents WHERE doc_id=?", (doc_id,)).fetchone():
                    found.append(doc_id)
        return found

    @_guarded
    def pending_deletes(self) -> list[str]:
        """Documents marked deleted whose delete has not been committed yet."""
        with self._lock:
            return [r[0] for r in self.db.read("SELECT doc_id FROM documents WHERE deleted=1")]

    @_guarded
    def live_document_ids(self) -> set[str]:
        """Stored documents not marked deleted (committed or not)."""
        with self._lock:
            return {r[0] for r in self.db.read("SELECT doc_id FROM documents WHERE deleted=0")}

    @_guarded
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read (for tables kept by other modules, e.g. :mod:`paretorag.storage.jobs`)."""
        with self._lock:
            return self.db.read(sql, params)

    @_guarded
    def all_document_ids(self) -> set[str]:
        """Every stored document id, pending deletes included."""
        with self._lock:
            return {r[0] for r in self.db.read("SELECT doc_id FROM documents")}

    def purge_deleted(self, keep: Iterable[str] = ()) -> int:
        """Remove documents marked deleted (and their chunks), except those in ``keep``."""
        keep_set = set(keep)
        with self.transaction() as c:
            ids = [r[0] for r in c.execute("SELECT doc_id FROM documents WHERE deleted=1")]
            gone = [d for d in ids if d not in keep_set]
            c.executemany("DELETE FROM documents WHERE doc_id=?", [(d,) for d in gone])
        return len(gone)

    @_guarded
    def documents(self, *, include_deleted: bool = False) -> list[dict[str, Any]]:
        """Stored documents in insertion order (with ``include_deleted``: also pending deletes)."""
        where = "" if include_deleted else "WHERE d.deleted=0 "
        with self._lock:
            rows = self.db.read(
                "SELECT d.doc_id, d.title, d.source, d.n_chars, d.presplit, COUNT(c.chunk_id), d.deleted "
                f"FROM documents d LEFT JOIN chunks c ON c.doc_id=d.doc_id {where}"
                "GROUP BY d.seq ORDER BY d.seq"
            )
        return [
            {
                "doc_id": r[0],
                "title": r[1],
                "source": r[2],
                "n_chars": r[3],
                "presplit": bool(r[4]),
                "n_chunks": r[5],
                **({"pending_delete": bool(r[6])} if include_deleted else {}),
            }
            for r in rows
        ]

    @_guarded
    def document_text(self, doc_id: str) -> str | None:
        with self._lock:
            row = self._one("SELECT text FROM documents WHERE doc_id=?", (doc_id,))
        return None if row is None else str(row[0])

    @_guarded
    def chunk_table(self, ids: Sequence[str] | None = None) -> ChunkTable:
        """Chunks in canonical order (live documents), or exactly ``ids`` in that order.

        Chunk texts are sliced from their document's text by offset.
        """
        with self._lock:
            docs = {
                r[0]: (r[1], r[2], bool(r[3]))
                for r in self.db.read(
                    "SELECT doc_id, title, text, presplit FROM documents"
                    + ("" if ids else " WHERE deleted=0")
                )
            }
            rows = self.db.read(
                'SELECT c.chunk_id, c.doc_id, c.ord, c.start, c."end", c.n_tokens FROM chunks c '
                "JOIN documents d ON d.doc_id=c.doc_id ORDER BY d.seq, c.ord"
            )
        if ids is None:
            rows = [r for r in rows if r[1] in docs]
        else:
            by_id = {r[0]: r for r in rows}
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise DamagedIndexError(
                    f"{self.path}: {len(missing)} committed chunks are missing (e.g. {missing[0]}); "
                    f"run `paretorag repair --index {self.path.parent}`"
                )
            rows = [by_id[i] for i in ids]
        chunks = [
            Chunk(
                chunk_id=r[0],
                doc_id=r[1],
                order=r[2],
                start=r[3],
                end=r[4],
                n_tokens=r[5],
                title=docs[r[1]][0],
                text=docs[r[1]][1][r[3] : r[4]],
                heading=heading,
            )
            for r, heading in zip(rows, _headings(docs, rows), strict=True)
        ]
        return ChunkTable.from_chunks(chunks)

    @_guarded
    def counts(self) -> dict[str, int]:
        with self._lock:
            docs = self.db.read("SELECT COUNT(*) FROM documents WHERE deleted=0")[0][0]
            chunks, tokens = self.db.read(
                "SELECT COUNT(*), COALESCE(SUM(c.n_tokens),0) FROM chunks c "
                "JOIN documents d ON d.doc_id=c.doc_id WHERE d.deleted=0"
            )[0]
            cache = self.db.read("SELECT COUNT(*) FROM llm_cache")[0][0]
        return {
            "documents": int(docs),
            "chunks": int(chunks),
            "tokens": int(tokens),
            "llm_cache_entries": int(cache),
        }

    # -- caches ---------------------------------------------------------------
    @_guarded
    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(hashes), 500):
                part = list(hashes[i : i + 500])
                q = f"SELECT text_hash, vector FROM embedding_cache WHERE model=? AND text_hash IN ({','.join('?' * len(part))})"
                for h, blob in self.db.read(q, [model, *part]):
                    out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_vectors(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO embedding_cache(model,text_hash,vector) VALUES (?,?,?) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET vector=excluded.vector",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    @_guarded
    def get_llm(self, key: str) -> str | None:
        with self._lock:
            row = self._one("SELECT response FROM llm_cache WHERE key=?", (key,))
        return None if row is None else str(row[0])

    def put_llm(self, key: str, model: str, response: str) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO llm_cache(key,model,response) VALUES (?,?,?) "
                "ON CONFLICT (key) DO UPDATE SET model=excluded.model, response=excluded.response",
                (key, model, response),
            )

    @_guarded
    def get_kv(self, key: str) -> Any:
        with self._lock:
            row = self._one("SELECT value FROM kv WHERE key=?", (key,))
        return None if row is None else json.loads(row[0])

    def get_kv_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """JSON values of the ``keys`` that are stored (per-chunk extraction caches)."""
        out: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = list(keys[i : i + 500])
                q = f"SELECT key, value FROM kv WHERE key IN ({','.join('?' * len(part))})"
                for k, v in self.db.read(q, part):
                    out[str(k)] = json.loads(v)
        return out

    def put_kv_many(self, items: Sequence[tuple[str, Any]]) -> None:
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO kv(key,value) VALUES (?,?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                [(k, json.dumps(v)) for k, v in items],
            )

    def put_kv(self, key: str, value: Any) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO kv(key,value) VALUES (?,?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (key, json.dumps(value)),
            )

    def delete_kv(self, key: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM kv WHERE key=?", (key,))

    # -- copying an index -------------------------------------------------------
    def table_batches(self, table: str, size: int = 2000) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of one :data:`COPIED` table, in its order, ``size`` at a time."""
        cols, order = COPIED[table]
        offset = 0
        while True:
            rows = self.db.read(
                f"SELECT {', '.join(cols)} FROM {table} ORDER BY {order} LIMIT ? OFFSET ?", (size, offset)
            )
            if not rows:
                return
            yield [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]
            offset += len(rows)

    def put_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert rows read by :meth:`table_batches` (one transaction)."""
        cols, _ = COPIED[table]
        with self.transaction() as c:
            c.executemany(
                f"INSERT INTO {table}({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows
            )

    def is_empty(self) -> bool:
        return not self.db.read("SELECT 1 FROM documents LIMIT 1")
