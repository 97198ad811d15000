"""An index in PostgreSQL (``--index postgresql://USER:PASSWORD@HOST:PORT/DB[?schema=NAME]``).

Everything a folder index keeps in files lives in tables of one schema (``public``, or the
URL's ``schema``: several indexes share a database that way), created and migrated by
paretorag (:data:`SCHEMA_VERSION`), never by hand:

- ``documents``, ``chunks``, the caches, ``kv`` and the server's ``jobs``: the same tables
  as the folder's SQLite file (:mod:`paretorag.storage.store`, :mod:`paretorag.storage.jobs`).
- ``vector_sets``: each committed chunk-vector set (its stem, chunk ids, the float32 matrix
  as one ``bytea``, read whole into memory by each process, as the graph methods score
  every chunk); ``vector_rows``: the same vectors as pgvector ``vector`` rows, with an HNSW
  index (inner product) for top-k when the index's ``ann`` is ``hnsw``. Exact search
  (the default below a million chunks) runs in memory, so both backends retrieve the same
  items in the same order.
- ``structures``: each built structure's arrays (an npz ``bytea``) and JSON metadata.
- ``manifests``: the commit point. A commit is one transaction that replaces the manifest
  row (and its backup) and moves ``generation``; readers compare the generation before each
  query and reload when it moved.
- The writer lock is a session-level advisory lock (released by the server when the
  writer's connection ends, even on SIGKILL); ``writer`` names its holder. Reader leases
  are ``reader_leases`` rows tagged with their connection's backend pid: garbage
  collection keeps what a live connection's lease names.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import os
import re
import socket
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ..errors import ConfigError, DamagedIndexError, IndexFormatError, IndexLockedError
from ..types import FloatArray, Scored
from .database import PostgresDatabase, pg_errors, psycopg_module
from .manifest import Manifest
from .store import Store, schema
from .structures import StructureData
from .vectors import HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M, VectorIndex

SCHEMA_VERSION = 1  # of the tables below; `paretorag index` migrates older ones
MAIN, BACKUP = "manifest", "manifest.bak"

TABLES = """
CREATE TABLE IF NOT EXISTS paretorag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS manifests (
    name TEXT PRIMARY KEY,
    generation BIGINT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_sets (
    stem TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    n INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    ids TEXT NOT NULL,
    matrix BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_rows (
    stem TEXT NOT NULL REFERENCES vector_sets(stem) ON DELETE CASCADE,
    row INTEGER NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (stem, row)
);
CREATE TABLE IF NOT EXISTS structures (
    dirname TEXT PRIMARY KEY,
    arrays BYTEA NOT NULL,
    meta TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reader_leases (
    token TEXT PRIMARY KEY,
    backend_pid INTEGER NOT NULL,
    vectors TEXT NOT NULL,
    structures TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS writer (
    id INTEGER PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    command TEXT NOT NULL,
    since DOUBLE PRECISION NOT NULL
)
"""


@dataclass(frozen=True)
class Target:
    """A ``postgresql://`` URL split into the connection string and the schema it names."""

    conninfo: str
    schema: str
    location: str  # the URL without its password, as messages name it

    @classmethod
    def parse(cls, url: str) -> Target:
        from .database import redact

        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        names = [v for k, v in query if k == "schema"]
        schema_name = names[-1] if names else "public"
        if not schema_name.replace("_", "").isalnum() or schema_name[0].isdigit():
            raise ConfigError(
                f"schema={schema_name!r} in {redact(url)}: use letters, digits and _ (not first a digit)"
            )
        rest = urlencode([(k, v) for k, v in query if k != "schema"])
        return cls(urlunsplit(parts._replace(query=rest)), schema_name.lower(), redact(url))


POOL_SIZE = 8  # connections per process, database and schema ($PARETORAG_PG_POOL)
_POOLS: dict[tuple[str, str], Any] = {}
_POOLS_LOCK = threading.Lock()
_PRESENCE: dict[tuple[str, str, str], list[Any]] = {}  # a server's presence lock: [connection, holders]


def _new_pool(t: Target) -> Any:
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        from ..errors import MissingDependencyError

        raise MissingDependencyError(
            "a postgresql:// index needs psycopg-pool: pip install 'paretorag[postgres]'"
        ) from exc
    size = int(os.environ.get("PARETORAG_PG_POOL", POOL_SIZE))

    def configure(conn: Any) -> None:
        conn.execute(f'SET search_path TO "{t.schema}", public')
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")  # candidates per query, as faiss's

    pool = ConnectionPool(
        t.conninfo,
        kwargs={"autocommit": True},
        min_size=1,
        max_size=max(1, size),
        configure=configure,
        open=True,
        name=f"paretorag:{t.schema}",
    )
    atexit.register(pool.close)
    return pool


def _key(text: str) -> int:
    """A signed 64-bit advisory-lock key for ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def _npz(data: StructureData) -> bytes:
    for key, arr in data.arrays.items():
        if np.asarray(arr).dtype == object:
            raise IndexFormatError(
                f"structure array {key!r} has dtype object; store strings in meta or as fixed-width"
            )
    buf = io.BytesIO()
    arrays: dict[str, Any] = {k: np.asarray(v) for k, v in data.arrays.items()}
    np.savez(buf, **arrays)
    return buf.getvalue()


def _safe_stem(stem: str) -> str:
    """A vector stem as SQL text (stems are ours: ``chunks-<hex>[-titled][-hnsw]``)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", stem):
        raise IndexFormatError(f"vector stem {stem!r} is not a name this version writes")
    return stem


def hnsw_query(stem: str, dim: int) -> str:
    """Top-k by inner product over one vector set, in the form its partial HNSW index serves
    (the stem inline, as the index's predicate; parameters: query, query, k)."""
    expr = f"embedding::vector({dim})"
    return (
        f"SELECT row, -({expr} <#> ?::vector({dim})) AS score FROM vector_rows "
        f"WHERE stem='{_safe_stem(stem)}' ORDER BY {expr} <#> ?::vector({dim}) LIMIT ?"
    )


def _vector_text(row: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in row) + "]"


class PgVectorIndex(VectorIndex):
    """Chunk vectors in memory for scoring every chunk; top-k by pgvector's HNSW index in
    the database (``kind == "hnsw"``) or exactly in memory (otherwise)."""

    def __init__(self, matrix: np.ndarray, *, kind: str, backend: PostgresBackend, stem: str) -> None:
        super().__init__(matrix, kind="exact")
        self._kind = kind
        self._backend = backend
        self._stem = stem

    @property
    def kind(self) -> str:
        return self._kind

    def search(self, query: FloatArray, k: int) -> Scored:
        if self._kind != "hnsw":
            return super().search(query, k)
        k = min(k, len(self))
        if k <= 0:
            return Scored.empty()
        q = _vector_text(np.asarray(query, dtype=np.float32).reshape(-1))
        rows = self._backend.db.read(hnsw_query(self._stem, int(self.matrix.shape[1])), (q, q, k))
        return Scored(
            np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], np.float32)
        )


class PgWriterLock:
    """The writer lock: a session advisory lock on a connection of its own."""

    def __init__(
        self, backend: PostgresBackend, wait: bool | float, on_wait: Callable[[str], None] | None
    ) -> None:
        self.backend = backend
        self.wait = wait
        self.on_wait = on_wait
        self._conn: Any = None

    def _try(self) -> bool:
        return bool(
            self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.backend.lock_key,)).fetchone()[0]
        )

    def __enter__(self) -> PgWriterLock:
        b = self.backend
        self._conn = b.connect()
        if not self._try():
            who = b.holder()
            if self.wait is False:
                self._conn.close()
                raise IndexLockedError(
                    f"{b.location} is being written by {who}; wait for it to finish, "
                    "or run again without --no-wait to wait"
                )
            if self.on_wait is not None:
                self.on_wait(f"waiting for {who} to finish writing {b.location} ...")
            end = None if self.wait is True else time.monotonic() + float(self.wait)
            while not self._try():
                if end is not None and time.monotonic() >= end:
                    self._conn.close()
                    raise IndexLockedError(
                        f"{b.location} is still being written by {who} after {float(self.wait):g} s; "
                        "try again later"
                    )
                time.sleep(0.1)
        self._conn.execute(
            "INSERT INTO writer(id,pid,host,command,since) VALUES (1,%s,%s,%s,%s) ON CONFLICT (id) DO "
            "UPDATE SET pid=excluded.pid, host=excluded.host, command=excluded.command, since=excluded.since",
            (os.getpid(), socket.gethostname(), " ".join(sys.argv)[:300], time.time()),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(psycopg_module().Error):
            self._conn.execute("DELETE FROM writer WHERE id=1 AND pid=%s", (os.getpid(),))
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (self.backend.lock_key,))
        self._conn.close()


class PgLease:
    """A reader lease: a row naming the objects in use, tagged with a live connection."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.token = ""

    def hold(self, vectors: str, structures: Iterable[str]) -> None:
        import secrets

        conn = self.backend.lease_connection()
        self.token = self.token or f"{os.getpid()}-{secrets.token_hex(6)}"
        conn.execute(
            "INSERT INTO reader_leases(token,backend_pid,vectors,structures) VALUES "
            "(%s, pg_backend_pid(), %s, %s) ON CONFLICT (token) DO UPDATE SET vectors=excluded.vectors, "
            "structures=excluded.structures",
            (self.token, vectors, json.dumps(sorted(structures))),
        )

    def release(self) -> None:
        if self.token:
            with contextlib.suppress(psycopg_module().Error):
                self.backend.lease_connection().execute(
                    "DELETE FROM reader_leases WHERE token=%s", (self.token,)
                )
            self.token = ""


class PostgresBackend:
    """An index in a PostgreSQL database (see the module docstring)."""

    is_folder = False

    def __init__(self, url: str) -> None:
        self.url = url
        self.target = Target.parse(url)
        self.location = self.target.location
        self.lock_key = _key(f"paretorag-writer:{self.target.schema}")
        self._db: PostgresDatabase | None = None
        self._lease_conn: Any = None
        self._presence: Any = None  # a server's presence lock (hold_presence)

    def __str__(self) -> str:
        return self.location

    # -- connections ------------------------------------------------------------
    def connect(self) -> Any:
        """A new autocommit connection with this index's schema on its search path."""
        psycopg = psycopg_module()
        t = self.target
        try:
            conn = psycopg.connect(t.conninfo, autocommit=True)
        except psycopg.OperationalError as exc:
            from ..errors import StorageError

            raise StorageError(
                f"cannot connect to {self.location} ({str(exc).strip().splitlines()[0]}); start the "
                "PostgreSQL server or fix the --index URL (postgresql://USER:PASSWORD@HOST:PORT/DB)"
            ) from exc
        conn.execute(f'SET search_path TO "{t.schema}", public')
        return conn

    @property
    def db(self) -> PostgresDatabase:
        if self._db is None:
            self._db = PostgresDatabase(self._pool(), self.location)
        return self._db

    def _pool(self) -> Any:
        """The process's connection pool for this database and schema, made (and the tables
        created or migrated) by the first backend that asks."""
        t = self.target
        with _POOLS_LOCK:
            pool = _POOLS.get((t.conninfo, t.schema))
            if pool is None:
                first = self.connect()  # fails fast, with the fix, where the server is not there
                try:
                    with pg_errors(self.location):
                        self._migrate(first)
                finally:
                    first.close()
                pool = _POOLS[(t.conninfo, t.schema)] = _new_pool(t)
        return pool

    def lease_connection(self) -> Any:
        if self._lease_conn is None or self._lease_conn.closed:
            self._lease_conn = self.connect()
        return self._lease_conn

    def _schema_version(self, conn: Any) -> int | None:
        """The schema version of this index's tables (None: no tables yet)."""
        found = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema=%s AND table_name='paretorag_meta'",
            (self.target.schema,),
        ).fetchone()
        if not found:
            return None
        row = conn.execute("SELECT value FROM paretorag_meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise IndexFormatError(
                f"{self.location} was written by a newer paretorag (schema {version}, this version "
                f"reads <= {SCHEMA_VERSION}); upgrade paretorag (pip install -U paretorag)"
            )
        return version

    def _migrate(self, conn: Any) -> None:
        """Create or upgrade this schema's tables, one process at a time. Tables already at
        :data:`SCHEMA_VERSION` are only read, so a user without CREATE rights can query."""
        if self._schema_version(conn) == SCHEMA_VERSION:
            return
        t = self.target
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(f"paretorag-schema:{t.schema}"),))
            if self._schema_version(conn) == SCHEMA_VERSION:  # another process got there first
                return
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{t.schema}"')
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
            # version 1 is the first: every later version adds its ALTERs here, keyed by the old one
            for stmt in (schema("postgresql") + ";" + TABLES).split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(
                "INSERT INTO paretorag_meta(key,value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def close(self) -> None:
        """Close this backend's own connection (reader leases); pooled ones return to the pool."""
        if self._lease_conn is not None:
            with contextlib.suppress(psycopg_module().Error):
                self._lease_conn.close()
        self._lease_conn = None

    # -- the index --------------------------------------------------------------
    def exists(self) -> bool:
        """True if the schema holds an index; asking creates nothing (a mistyped schema stays
        absent until an index is built there)."""
        if self._db is not None:
            return bool(self.db.read("SELECT 1 FROM manifests WHERE name=?", (MAIN,)))
        conn = self.connect()
        try:
            with pg_errors(self.location):
                if self._schema_version(conn) is None:
                    return False
                return conn.execute("SELECT 1 FROM manifests WHERE name=%s", (MAIN,)).fetchone() is not None
        finally:
            conn.close()

    def create(self) -> None:
        self.db  # noqa: B018  (connecting creates the tables)

    def open_store(self) -> Store:
        return Store.on(PostgresDatabase(self._pool(), self.location))

    def load_manifest(self, backup: bool = False) -> Manifest | None:
        rows = self.db.read("SELECT body FROM manifests WHERE name=?", (BACKUP if backup else MAIN,))
        if not rows:
            return None
        try:
            data = json.loads(rows[0][0])
        except ValueError as exc:
            raise DamagedIndexError(
                f"the manifest of {self.location} is damaged ({exc}); run `paretorag repair --index "
                f"{self.location}`"
            ) from exc
        return Manifest.from_json(data, self.location)

    def save_manifest(self, m: Manifest) -> None:
        """The commit point: the manifest and its backup copy in one transaction."""
        from ..cancel import pause_point

        body = json.dumps(m.to_json(), sort_keys=True)
        with self.db.transaction() as c:
            for name in (MAIN, BACKUP):
                if name == BACKUP:
                    pause_point("mid-commit")  # the new manifest row written, not committed
                c.execute(
                    "INSERT INTO manifests(name,generation,body) VALUES (?,?,?) ON CONFLICT (name) DO "
                    "UPDATE SET generation=excluded.generation, body=excluded.body",
                    (name, m.generation, body),
                )

    def stamp(self) -> Any:
        rows = self.db.read("SELECT generation, md5(body) FROM manifests WHERE name=?", (MAIN,))
        return tuple(rows[0]) if rows else None

    # -- vectors ----------------------------------------------------------------
    def has_vectors(self, stem: str) -> bool:
        return bool(self.db.read("SELECT 1 FROM vector_sets WHERE stem=?", (stem,)))

    def missing_vectors(self, stem: str) -> list[str]:
        return [] if self.has_vectors(stem) else [self.vector_place(stem)]

    def save_vectors(self, stem: str, index: VectorIndex, ids: Sequence[str]) -> None:
        m = index.matrix
        kind = index.kind
        dim = int(m.shape[1]) if m.ndim == 2 and len(m) else 0
        with self.db.transaction() as c:
            c.execute("DELETE FROM vector_sets WHERE stem=?", (stem,))
            c.execute(
                "INSERT INTO vector_sets(stem,kind,n,dim,ids,matrix) VALUES (?,?,?,?,?,?)",
                (stem, kind, len(m), dim, "\n".join(ids), m.astype(np.float32).tobytes()),
            )
            with c.copy("COPY vector_rows (stem, row, embedding) FROM STDIN") as copy:
                for i, row in enumerate(m):
                    copy.write_row((stem, i, _vector_text(row)))
            if kind == "hnsw" and dim:
                name = "vector_rows_hnsw_" + hashlib.sha256(stem.encode()).hexdigest()[:16]
                c.execute(
                    f"CREATE INDEX IF NOT EXISTS {name} ON vector_rows USING hnsw "
                    f"((embedding::vector({dim})) vector_ip_ops) WITH (m = {HNSW_M}, "
                    f"ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE stem='{_safe_stem(stem)}'"
                )

    def _vector_set(self, stem: str, columns: str) -> tuple[Any, ...]:
        """``columns`` of the vector set ``stem`` (missing: DamagedIndexError)."""
        rows = self.db.read(f"SELECT {columns} FROM vector_sets WHERE stem=?", (stem,))
        if not rows:
            raise DamagedIndexError(
                f"{self.vector_place(stem)} is missing; run `paretorag repair --index {self.location}`"
            )
        return rows[0]

    def _check_size(self, stem: str, n: int, dim: int, size: int) -> None:
        if size != n * dim * 4:
            raise DamagedIndexError(
                f"{self.vector_place(stem)} holds {size} bytes for {n} x {dim} vectors; "
                f"run `paretorag repair --index {self.location}`"
            )

    def vector_ids(self, stem: str) -> list[str]:
        (ids,) = self._vector_set(stem, "ids")
        return [i for i in str(ids).split("\n") if i]

    def load_vectors(self, stem: str, kind: str) -> VectorIndex:
        stored, n, dim, data = self._vector_set(stem, "kind, n, dim, matrix")
        blob = bytes(data)
        self._check_size(stem, int(n), int(dim), len(blob))
        matrix = (
            np.frombuffer(blob, dtype=np.float32).reshape(n, dim) if n else np.zeros((0, dim), np.float32)
        )
        return PgVectorIndex(matrix, kind=str(stored), backend=self, stem=stem)

    def vector_rows(self, stem: str) -> int:
        n, dim, size = self._vector_set(stem, "n, dim, octet_length(matrix)")  # no need to read the matrix
        self._check_size(stem, int(n), int(dim), int(size))
        return int(n)

    def vector_place(self, stem: str) -> str:
        return f"vector_sets[{stem}] in {self.location}"

    # -- structures -------------------------------------------------------------
    def has_structure(self, dirname: str) -> bool:
        return bool(self.db.read("SELECT 1 FROM structures WHERE dirname=?", (dirname,)))

    def save_structure(self, dirname: str, data: StructureData) -> None:
        blob = _npz(data)
        meta = json.dumps(data.meta, ensure_ascii=False)
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO structures(dirname,arrays,meta) VALUES (?,?,?) ON CONFLICT (dirname) DO "
                "UPDATE SET arrays=excluded.arrays, meta=excluded.meta",
                (dirname, blob, meta),
            )

    def load_structure(self, dirname: str) -> StructureData:
        rows = self.db.read("SELECT arrays, meta FROM structures WHERE dirname=?", (dirname,))
        place = self.structure_place(dirname)
        if not rows:
            raise DamagedIndexError(f"{place} is missing; run `paretorag repair --index {self.location}`")
        try:
            with np.load(io.BytesIO(bytes(rows[0][0])), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(rows[0][1])
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise DamagedIndexError(
                f"cannot read structure {place} ({exc}); run `paretorag repair --index {self.location}`"
            ) from exc
        return StructureData(arrays, meta)

    def structure_meta(self, dirname: str) -> Any:
        rows = self.db.read("SELECT meta FROM structures WHERE dirname=?", (dirname,))
        try:
            return json.loads(rows[0][0]) if rows else None
        except ValueError:
            return None

    def structure_place(self, dirname: str) -> str:
        return f"structures[{dirname}] in {self.location}"

    # -- writers and readers ----------------------------------------------------
    def writer_lock(
        self, wait: bool | float = True, on_wait: Callable[[str], None] | None = None
    ) -> PgWriterLock:
        return PgWriterLock(self, wait, on_wait)

    def holder(self) -> str:
        rows = self.db.read("SELECT pid, host, command FROM writer WHERE id=1")
        if not rows:
            return "another process"
        pid, host, command = rows[0]
        return f"pid {pid} on {host}" + (f" ({str(command)[:120]})" if command else "")

    def hold_presence(self, owner: str) -> None:
        """Say, for as long as this process serves, that the server ``owner`` (``host:pid``)
        runs: a session advisory lock on a connection of its own, which the database releases
        when the process dies, on any host. :meth:`owner_alive` reads it. Services of one
        process share the lock (counted), as they share the owner id."""
        if self._presence is not None:
            return
        key = (self.target.conninfo, self.target.schema, owner)
        with _POOLS_LOCK:
            held = _PRESENCE.get(key)
            if held is None:
                conn = self.connect()
                conn.execute("SELECT pg_try_advisory_lock(%s)", (self._presence_key(owner),))
                held = _PRESENCE[key] = [conn, 0]
            held[1] += 1
        self._presence = key

    def close_presence(self) -> None:
        """This server stops: once no service of the process holds it, its jobs may be resumed."""
        if self._presence is None:
            return
        with _POOLS_LOCK:
            held = _PRESENCE.get(self._presence)
            if held is not None:
                held[1] -= 1
                if held[1] <= 0:
                    del _PRESENCE[self._presence]
                    with contextlib.suppress(psycopg_module().Error):
                        held[0].close()
        self._presence = None

    def _presence_key(self, owner: str) -> int:
        return _key(f"paretorag-server:{self.target.schema}:{owner}")

    def owner_alive(self, owner: str) -> bool | None:
        """Whether the server ``owner`` still runs (its presence lock is held), on any host."""
        key = self._presence_key(owner)
        conn = self.connect()
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
            if got:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return not got
        finally:
            conn.close()

    def reader_lease(self) -> PgLease:
        return PgLease(self)

    def collect_garbage(self, stem: str, structure_dirs: Iterable[str]) -> list[str]:
        """Delete vector sets and structures that neither the committed manifest nor a live
        reader's lease names (leases of closed connections are dropped first)."""
        with self.db.transaction() as c:
            c.execute("DELETE FROM reader_leases WHERE backend_pid NOT IN (SELECT pid FROM pg_stat_activity)")
            leases = c.execute("SELECT vectors, structures FROM reader_leases").fetchall()
            keep_stems = {stem, *(str(r[0]) for r in leases)} - {""}
            keep_dirs = set(structure_dirs) | {d for r in leases for d in json.loads(r[1])}
            stems = [str(r[0]) for r in c.execute("SELECT stem FROM vector_sets").fetchall()]
            dirs = [str(r[0]) for r in c.execute("SELECT dirname FROM structures").fetchall()]
            gone_stems = sorted(s for s in stems if s not in keep_stems)
            gone_dirs = sorted(d for d in dirs if d not in keep_dirs)
            for s in gone_stems:
                c.execute("DELETE FROM vector_sets WHERE stem=?", (s,))
                name = "vector_rows_hnsw_" + hashlib.sha256(s.encode()).hexdigest()[:16]
                c.execute(f"DROP INDEX IF EXISTS {name}")
            for d in gone_dirs:
                c.execute("DELETE FROM structures WHERE dirname=?", (d,))
        return [f"vectors/{s}" for s in gone_stems] + [f"structures/{d}" for d in gone_dirs]

    def discard(self, names: Iterable[str]) -> None:
        with self.db.transaction() as c:
            for name in names:
                kind, _, item = name.partition("/")
                if kind == "vectors":
                    c.execute("DELETE FROM vector_sets WHERE stem=?", (item,))
                elif kind == "structures":
                    c.execute("DELETE FROM structures WHERE dirname=?", (item,))

    def remove(self) -> None:
        """Drop this index's tables (its schema too, when the URL named one)."""
        t = self.target
        db = self.db
        with db.transaction() as c:
            if t.schema != "public":
                c.execute(f'DROP SCHEMA IF EXISTS "{t.schema}" CASCADE')
            else:
                for table in (
                    "job_files",
                    "job_documents",
                    "jobs",
                    "chunks",
                    "documents",
                    "embedding_cache",
                    "llm_cache",
                    "kv",
                    "reader_leases",
                    "writer",
                    "vector_rows",
                    "vector_sets",
                    "structures",
                    "manifests",
                    "paretorag_meta",
                ):
                    c.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        self.close()

    def size_bytes(self) -> dict[str, int]:
        def size(*tables: str) -> int:
            total = 0
            for t in tables:
                rows = self.db.read("SELECT pg_total_relation_size(to_regclass(?))", (t,))
                total += int(rows[0][0] or 0)
            return total

        return {
            "vectors": size("vector_sets", "vector_rows"),
            "structures": size("structures"),
            "database": size("documents", "chunks", "embedding_cache", "llm_cache", "kv"),
        }


__all__ = ["SCHEMA_VERSION", "PostgresBackend", "Target"]
