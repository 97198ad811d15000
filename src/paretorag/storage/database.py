"""The SQL seam: one connection to SQLite (the folder index) or PostgreSQL, same statements.

:class:`~paretorag.storage.store.Store` and :class:`~paretorag.storage.jobs.JobTable` write
their SQL once, in the dialect both engines read: ``?`` placeholders, ``INSERT ... ON
CONFLICT (key) DO UPDATE`` (SQLite >= 3.24), ``"end"`` quoted. :class:`PostgresDatabase`
turns ``?`` into psycopg's ``%s``; each class translates its engine's disk-full, read-only
and damaged-database failures into paretorag errors. Nothing outside ``storage/`` opens a
database connection.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ..errors import IndexFormatError, MissingDependencyError, StorageError
from .diskerrors import database_error, sqlite_errors

URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(index: str | Path) -> bool:
    """``index`` names a database (a ``postgresql://`` URL), not a folder. Here, beside the SQL
    seam, so that the CLI tells them apart without importing the backends."""
    return isinstance(index, str) and index.startswith(URL_SCHEMES)


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Transaction(Protocol):
    """What a write sees inside :meth:`Database.transaction`."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...


class Database(Protocol):
    """One database connection of an index (thread-safe: callers serialise on :attr:`lock`)."""

    dialect: str  # "sqlite" or "postgresql"
    location: str  # what messages name: a file path, or a URL without its password
    lock: threading.RLock

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def transaction(self) -> Any: ...  # context manager yielding a Transaction

    def errors(self) -> Any: ...  # context manager mapping engine errors to paretorag errors

    def has_table(self, name: str) -> bool: ...

    def integrity(self) -> list[str]: ...

    def close(self) -> None: ...


class SqliteDatabase:
    """``index.sqlite`` of a folder index (WAL mode; every write in ``BEGIN IMMEDIATE``)."""

    dialect = "sqlite"

    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self.location = str(path)
        self.lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(schema)
        except sqlite3.Error as exc:
            mapped = database_error(exc, path)
            if mapped is not None:
                raise mapped from exc
            raise IndexFormatError(
                f"{path} is not a readable paretorag database ({exc}); restore it from a backup "
                "or index the sources again into a new --index directory"
            ) from exc

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock, sqlite_errors(self.path):
            return [tuple(r) for r in self._conn.execute(sql, tuple(params))]

    def try_execute(self, sql: str) -> bool:
        """Run one schema statement outside a transaction; False if SQLite refuses it
        (a read-only database, or another process did it first)."""
        try:
            with self.lock:
                self._conn.execute(sql)
        except sqlite3.OperationalError:
            return False
        return True

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock, sqlite_errors(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def errors(self) -> Any:
        return sqlite_errors(self.path)

    def has_table(self, name: str) -> bool:
        return bool(self.read("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)))

    def columns(self, table: str) -> set[str]:
        return {str(r[1]) for r in self.read(f"PRAGMA table_info({table})")}

    def integrity(self) -> list[str]:
        rows = [str(r[0]) for r in self.read("PRAGMA quick_check")]
        return [] if rows == ["ok"] else [f"{self.path}: {r}" for r in rows[:10]]

    def close(self) -> None:
        self._conn.close()


_PLACEHOLDER = re.compile(r"\?")


def pg_sql(sql: str) -> str:
    """A statement with ``?`` placeholders in psycopg's ``%s`` style (``%`` escaped)."""
    return _PLACEHOLDER.sub("%s", sql.replace("%", "%%"))


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise MissingDependencyError(
            "a postgresql:// index needs psycopg 3: pip install 'paretorag[postgres]'"
        ) from exc
    return psycopg


def redact(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages and logs), in the
    authority or as a ``password=`` parameter.

    >>> redact("postgresql://me:s3cret@db/rag?schema=a")
    'postgresql://me:***@db/rag?schema=a'
    >>> redact("postgresql://me@db/rag?password=s3cret&sslmode=require")
    'postgresql://me@db/rag?password=***&sslmode=require'
    """
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


@contextmanager
def pg_errors(location: str) -> Iterator[None]:
    """Turn PostgreSQL's disk-full, permission and connection failures into paretorag errors
    that name ``location`` (a URL without its password) and the fix."""
    psycopg = psycopg_module()
    try:
        yield
    except psycopg.errors.DiskFull as exc:
        raise StorageError(f"{location}: the database server's disk is full ({exc})") from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StorageError(
            f"{location}: permission denied ({str(exc).strip()}); grant the user CREATE and "
            "write rights on the database, or choose another --index"
        ) from exc
    except psycopg.OperationalError as exc:
        raise StorageError(
            f"{location}: the connection failed ({str(exc).strip().splitlines()[0]}); "
            "check that the server is running, then run the same command again"
        ) from exc


class _PgTransaction:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def copy(self, sql: str) -> Any:
        """psycopg's ``COPY ... FROM STDIN`` writer, inside this transaction."""
        return self._conn.cursor().copy(sql)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(pg_sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        with self._conn.cursor() as cur:
            cur.executemany(pg_sql(sql), [tuple(r) for r in rows])
            return cur


class PostgresDatabase:
    """The index's PostgreSQL database through a psycopg 3 connection pool (shared by every
    store of the process on the same database and schema): each read takes a pooled
    connection (autocommit), each write one connection for one transaction."""

    dialect = "postgresql"

    def __init__(self, pool: Any, location: str) -> None:
        psycopg_module()  # says how to install it, before any use
        self.location = location
        self.lock = threading.RLock()  # callers group reads under it; the pool serves threads alike
        self.pool = pool

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.errors(), self.pool.connection() as conn:
            return [tuple(r) for r in conn.execute(pg_sql(sql), tuple(params)).fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[_PgTransaction]:
        with self.lock, self.errors(), self.pool.connection() as conn, conn.transaction():
            yield _PgTransaction(conn)

    def errors(self) -> Any:
        return pg_errors(self.location)

    def has_table(self, name: str) -> bool:
        return bool(
            self.read(
                "SELECT 1 FROM information_schema.tables WHERE table_schema=current_schema() AND table_name=?",
                (name,),
            )
        )

    def integrity(self) -> list[str]:
        return []  # the server keeps its own files consistent (WAL, checksums where enabled)

    def close(self) -> None:
        """Nothing to close: the pool is the process's, closed at exit."""
