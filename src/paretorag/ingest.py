"""Files -> documents: ``.txt``, ``.md``, ``.html`` (text only), and ``.json``/``.jsonl``
corpora of ``{title, text}`` records (or HippoRAG's ``{title: [sentences]}`` object).

Bad files are reported, not fatal, when other files are usable: :func:`read_paths`
returns the documents and a list of :class:`Problem`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from .errors import InputError
from .types import Document

log = logging.getLogger(__name__)

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
CORPUS_SUFFIXES = frozenset({".json", ".jsonl"})
SUPPORTED = TEXT_SUFFIXES | HTML_SUFFIXES | CORPUS_SUFFIXES


def doc_id_for(title: str, text: str) -> str:
    """A document's identity: the first 16 hex digits of sha256(title NUL text)."""
    return hashlib.sha256(f"{title}\x00{text}".encode()).hexdigest()[:16]


def make_document(title: str, text: str, source: str, *, presplit: bool = False) -> Document:
    return Document(doc_id_for(title, text), title, text, source, presplit)


@dataclass(frozen=True)
class Problem:
    """A file (or record) that could not be used, and why."""

    path: str
    message: str
    skipped: bool = True  # False for warnings about files that were still read

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _TextOnly(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "pre"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, visible text) of an HTML page."""
    p = _TextOnly()
    p.feed(html)
    p.close()
    lines = [" ".join(line.split()) for line in "".join(p.parts).split("\n")]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return " ".join(p.title.split()), text.strip()


def _read_text(path: Path, problems: list[Problem]) -> str | None:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(str(path), f"cannot be read ({exc.strerror}); check its permissions"))
        return None
    if not raw.strip():
        problems.append(Problem(str(path), "is empty; add text to it or leave it out"))
        return None
    if b"\x00" in raw[:8192]:
        problems.append(
            Problem(
                str(path), "looks binary (NUL bytes); only text, Markdown, HTML and JSON corpora are read"
            )
        )
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.warning("%s is not valid UTF-8 (byte %d); decoded with replacement characters", path, exc.start)
        problems.append(
            Problem(
                str(path),
                f"invalid UTF-8 at byte {exc.start}; decoded with replacement characters",
                skipped=False,
            )
        )
        return raw.decode("utf-8", errors="replace")


def _records(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    if path.suffix == ".jsonl":
        for i, line in enumerate(text.splitlines()):
            if line.strip():
                try:
                    yield i, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        f"{path}: line {i + 1} is not JSON ({exc.msg}); fix or remove that line"
                    ) from None
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); fix the file") from None
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        # HippoRAG v1 corpus: {title: [sentences]}
        for i, (title, sents) in enumerate(data.items()):
            yield i, {"title": title, "text": "".join(str(s) for s in sents)}
    elif isinstance(data, list):
        yield from enumerate(data)
    else:
        raise InputError(
            f"{path}: expected a list of {{title, text}} records or a {{title: [sentences]}} object"
        )


def _corpus_documents(path: Path, text: str, problems: list[Problem]) -> list[Document]:
    docs: list[Document] = []
    try:
        for i, rec in _records(path, text):
            if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or not rec["text"].strip():
                problems.append(Problem(f"{path}#{i}", 'record has no non-empty "text" field; skipped'))
                continue
            title = str(rec.get("title") or "")
            docs.append(make_document(title, rec["text"], f"{path}#{i}", presplit=True))
    except InputError as exc:
        problems.append(Problem(str(path), str(exc).removeprefix(f"{path}: ")))
    if not docs and not any(p.path.startswith(str(path)) for p in problems):
        problems.append(Problem(str(path), "contains no records"))
    return docs


def read_file(path: Path, problems: list[Problem]) -> list[Document]:
    """Documents of one file; problems are appended, never raised."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        problems.append(
            Problem(
                str(path),
                f"unsupported extension {suffix or '(none)'}; supported: {', '.join(sorted(SUPPORTED))}",
            )
        )
        return []
    text = _read_text(path, problems)
    if text is None:
        return []
    if suffix in CORPUS_SUFFIXES:
        return _corpus_documents(path, text, problems)
    title = path.stem
    if suffix in HTML_SUFFIXES:
        page_title, text = html_to_text(text)
        title = page_title or title
        if not text:
            problems.append(Problem(str(path), "has no visible text"))
            return []
    return [make_document(title, text, str(path))]


def iter_files(root: Path) -> Iterator[Path]:
    """Supported files under a directory, recursively, in sorted order (hidden ones skipped)."""
    for p in sorted(root.rglob("*")):
        hidden = any(part.startswith(".") for part in p.relative_to(root).parts)
        if p.is_file() and not hidden and p.suffix.lower() in SUPPORTED:
            yield p


def read_paths(paths: Iterable[str | Path]) -> tuple[list[Document], list[Problem]]:
    """Read files and directories. Raises :class:`InputError` only if nothing is usable."""
    docs: list[Document] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            problems.append(Problem(str(path), "does not exist; check the path"))
        elif path.is_dir():
            files = list(iter_files(path))
            if not files:
                problems.append(
                    Problem(str(path), f"has no usable file (supported: {', '.join(sorted(SUPPORTED))})")
                )
            for f in files:
                docs.extend(read_file(f, problems))
        else:
            docs.extend(read_file(path, problems))
    if not docs:
        detail = "; ".join(str(p) for p in problems) or "no paths given"
        raise InputError(f"nothing to index: {detail}")
    return docs, problems
