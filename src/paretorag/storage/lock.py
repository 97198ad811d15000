"""Who uses an index: one writer at a time, and readers holding the files they loaded.

- **Writer lock.** ``<index>/.writer.lock`` is an exclusive OS file lock (``filelock``;
  released by the OS if the process dies, even on SIGKILL). ``<index>/.writer.json``
  names the holder (pid, command), so a second writer can say whom it waits for. The CLI,
  the API and any server take the same lock: ``index``, ``insert``, ``build``, ``delete``
  and ``repair``.
- **Reader leases.** A reader that loaded a committed generation writes
  ``<index>/readers/<pid>-<token>.json`` listing its vector files and structure
  directories, and removes it when it loads a newer generation or closes. Garbage
  collection (under the writer lock) deletes only files that neither the committed
  manifest nor a live lease names; leases of dead processes are ignored and removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from ..errors import IndexLockedError

LOCKFILE = ".writer.lock"
HOLDER = ".writer.json"
READERS = "readers"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def holder(root: Path) -> str:
    """Who holds the writer lock, in words (``pid 1234 (paretorag insert ...)``)."""
    try:
        info = json.loads((root / HOLDER).read_text(encoding="utf-8"))
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
    command = str(info.get("command", ""))[:120]
    return f"pid {pid}" + (f" ({command})" if command else "")


class WriterLock:
    """The exclusive writer lock of an index directory (a context manager).

    Parameters
    ----------
    root : Path
        The index directory (must exist).
    wait : bool or float
        ``True`` waits as long as needed, ``False`` fails at once with
        :class:`~paretorag.errors.IndexLockedError`, a number waits that many seconds.
    on_wait : callable, optional
        Called once with a message naming the holder when the lock is busy and we wait.
    """

    def __init__(
        self, root: Path, *, wait: bool | float = True, on_wait: Callable[[str], None] | None = None
    ) -> None:
        self.root = root
        self.wait = wait
        self.on_wait = on_wait
        self._lock = FileLock(root / LOCKFILE, thread_local=False, preserve_lock_file=True)

    def __enter__(self) -> WriterLock:
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            who = holder(self.root)
            if self.wait is False:
                raise IndexLockedError(
                    f"{self.root} is being written by {who}; wait for it to finish, "
                    "or run again without --no-wait to wait"
                ) from None
            if self.on_wait is not None:
                self.on_wait(f"waiting for {who} to finish writing {self.root} ...")
            timeout = -1.0 if self.wait is True else float(self.wait)
            try:
                self._lock.acquire(timeout=timeout, poll_interval=0.1)
            except Timeout:
                raise IndexLockedError(
                    f"{self.root} is still being written by {who} after {timeout:g} s; try again later"
                ) from None
        info = {"pid": os.getpid(), "command": " ".join(sys.argv)[:300], "since": time.time()}
        tmp = self.root / f".{HOLDER}.{os.getpid()}.tmp"
        with contextlib.suppress(OSError):  # the name is a courtesy; the lock is what counts
            tmp.write_text(json.dumps(info), encoding="utf-8")
            os.replace(tmp, self.root / HOLDER)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(OSError):
            (self.root / HOLDER).unlink(missing_ok=True)
        self._lock.release()


class ReaderLease:
    """Keeps the files of one loaded generation from garbage collection until released."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path: Path | None = None

    def hold(self, vectors: str, structures: Iterable[str]) -> None:
        """Name the files in use (replacing what this lease named before)."""
        if self.path is None:
            self.path = self.root / READERS / f"{os.getpid()}-{secrets.token_hex(4)}.json"
        data = {"pid": os.getpid(), "vectors": vectors, "structures": sorted(structures)}
        tmp = self.path.with_suffix(".tmp")
        try:
            self.path.parent.mkdir(exist_ok=True)
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # a read-only index: no writer can collect its files either
            self.path = None

    def release(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)
            self.path = None


def leased_files(root: Path) -> tuple[set[str], set[str]]:
    """Vector stems and structure directories named by live reader leases (stale ones removed)."""
    stems: set[str] = set()
    dirs: set[str] = set()
    rdir = root / READERS
    if not rdir.is_dir():
        return stems, dirs
    for f in rdir.glob("*.json"):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            pid = int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or garbage: keep everything it might name this time
        if not _alive(pid):
            f.unlink(missing_ok=True)
            continue
        stems.add(str(data.get("vectors", "")))
        dirs.update(str(d) for d in data.get("structures", []))
    return stems, dirs


def collect_garbage(root: Path, stem: str, structure_dirs: Iterable[str]) -> list[str]:
    """Delete vector files and structure directories that neither the committed manifest
    (``stem``, ``structure_dirs``) nor a live reader names. Call under the writer lock.
    Returns what was deleted (``vectors/NAME``, ``structures/DIR``)."""
    leased_stems, leased_dirs = leased_files(root)
    keep_stems = {s for s in (stem, *leased_stems) if s}
    removed: list[str] = []
    vdir = root / "vectors"
    if vdir.exists():
        for f in sorted(vdir.iterdir()):
            if not any(f.name.startswith(f"{s}.") for s in keep_stems):
                f.unlink(missing_ok=True)
                removed.append(f"vectors/{f.name}")
    keep = set(structure_dirs) | leased_dirs
    sdir = root / "structures"
    if sdir.exists():
        for d in sorted(sdir.iterdir()):
            if d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
                removed.append(f"structures/{d.name}")
    return removed
