"""Disk and database failures as one-line errors that name the cause and the fix.

Writes of an index go through :func:`disk_errors` (files) or :func:`sqlite_errors`
(the database), so that a full disk, a read-only folder or a damaged database never
reach the user as a traceback. Nothing is committed half-way: the manifest is written
last, so a failed write leaves the last commit in place.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import IndexFormatError, StorageError

RESUME = "run the same command again to resume (finished work is kept)"


def storage_error(exc: OSError, path: Path | str) -> StorageError | None:
    """The :class:`StorageError` for a full disk, read-only file system or refused write, else None."""
    where = exc.filename or path
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageError(
            f"no space left on the device while writing {where}; free some space and {RESUME}"
        )
    if exc.errno == errno.EROFS:
        return StorageError(f"{where} is on a read-only file system; index into a writable --index directory")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StorageError(
            f"permission denied writing {where}; make the index directory writable (chmod u+w) "
            "or choose another --index"
        )
    return None


def database_error(exc: sqlite3.Error, path: Path) -> StorageError | IndexFormatError | None:
    """The error for SQLite's disk-full, read-only and damaged-file failures, else None."""
    msg = str(exc).lower()
    if "disk is full" in msg or "disk i/o error" in msg:
        return StorageError(f"{path}: {exc}; free some space and {RESUME}")
    if "readonly" in msg or "read-only" in msg or "unable to open" in msg:
        return StorageError(
            f"{path} cannot be opened for writing ({exc}); make the index directory writable "
            "or choose another --index"
        )
    if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
        return IndexFormatError(
            f"{path} is damaged ({exc}); the documents cannot be recovered from it: restore it from a "
            "backup, or index the sources again into a new --index directory"
        )
    return None


@contextmanager
def disk_errors(path: Path | str) -> Iterator[None]:
    """Turn a full disk or a refused write while writing ``path`` into a :class:`StorageError`."""
    try:
        yield
    except OSError as exc:
        mapped = storage_error(exc, path)
        if mapped is None:
            raise
        raise mapped from exc


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """Turn SQLite's disk-full, read-only and damaged-file errors into paretorag errors."""
    try:
        yield
    except sqlite3.Error as exc:
        mapped = database_error(exc, path)
        if mapped is None:
            raise
        raise mapped from exc
