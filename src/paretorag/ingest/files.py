"""Files -> documents: ``.txt``, ``.md``, ``.html`` (text only), ``.pdf`` (text layer, via
pypdf), ``.docx`` (paragraphs and tables, via python-docx), and ``.json``/``.jsonl``
corpora of ``{title, text}`` records (or HippoRAG's ``{title: [sentences]}`` object).
Headings of HTML (``<h1>``..``<h6>``), DOCX ("Heading N" styles) and PDF (its outline) are
written into the text as Markdown headings (``## Methods``) and PDF pages are separated by a
form feed, so that chunks follow the document's sections (:func:`paretorag.textutil.outline`).

Text files are read as UTF-8 (or UTF-16/32 with a byte-order mark); other encodings
(cp1252, latin-1, Shift-JIS, ...) are detected with charset-normalizer.

Bad files are reported, not fatal, when other files are usable: :func:`read_paths`
returns the documents and a list of :class:`Problem`. Unsupported files met inside a
directory are reported too (hidden files are skipped).

One module (over 400 lines): each file type's reader is short, and they share the
problem reporting and the encoding detection.
"""

from __future__ import annotations

import codecs
import dataclasses
import hashlib
import json
import logging
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..types import Document

log = logging.getLogger(__name__)

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
CORPUS_SUFFIXES = frozenset({".json", ".jsonl"})
PDF_SUFFIXES = frozenset({".pdf"})
DOCX_SUFFIXES = frozenset({".docx"})
SUPPORTED = TEXT_SUFFIXES | HTML_SUFFIXES | CORPUS_SUFFIXES | PDF_SUFFIXES | DOCX_SUFFIXES
_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def doc_id_for(title: str, text: str) -> str:
    """A document's identity: the first 16 hex digits of sha256(title NUL text)."""
    return hashlib.sha256(f"{title}\x00{text}".encode()).hexdigest()[:16]


def document_key(path: str | Path, key: str = "") -> str:
    """The key ``index`` stores a file's documents under: ``key`` (its ``--id``), else the
    file's absolute path (symbolic links resolved; a relative path is taken from the current
    directory). Unlike the document id, it stays the same when the file is edited."""
    return key or str(Path(path).resolve())


def make_document(title: str, text: str, source: str, *, presplit: bool = False) -> Document:
    return Document(doc_id_for(title, text), title, text, source, presplit)


@dataclass(frozen=True)
class Problem:
    """A file (or record) that could not be used, and why."""

    path: str
    message: str
    skipped: bool = True  # False for warnings about files that were still read
    other_types: bool = False  # files of unsupported types met while walking a folder

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    @property
    def failed(self) -> bool:
        """A file (or record) that should have been indexed and was not: a missing or
        unsupported file named on the command line, an unreadable file of a supported type,
        a bad record (``paretorag index`` exits with :data:`paretorag.cli.exitcodes.PARTIAL`)."""
        return self.skipped and not self.other_types


class _TextOnly(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
    _BLOCK = frozenset(
        {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "pre"}
    )
    _HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

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
        elif tag in self._HEADINGS:  # written as Markdown headings: chunking follows them
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
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


def _read_bytes(path: Path, problems: list[Problem]) -> bytes | None:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(str(path), f"cannot be read ({exc.strerror}); check its permissions"))
        return None
    if not raw.strip():
        problems.append(Problem(str(path), "is empty; add text to it or leave it out"))
        return None
    return raw


def decode_text(raw: bytes) -> tuple[str, str | None]:
    """(text, encoding) of a text file's bytes; the encoding is None when nothing fits.

    A byte-order mark decides first, then UTF-8, then charset-normalizer's best guess.
    Without a guess, the text is UTF-8 with replacement characters.
    """
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(encoding), encoding
            except UnicodeDecodeError:
                break
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is not None and best.encoding:
        return str(best), best.encoding
    return raw.decode("utf-8", errors="replace"), None


def _read_text(path: Path, problems: list[Problem]) -> str | None:
    raw = _read_bytes(path, problems)
    if raw is None:
        return None
    has_bom = any(raw.startswith(bom) for bom, _ in _BOMS)
    if not has_bom and b"\x00" in raw[:8192]:
        problems.append(
            Problem(
                str(path),
                "looks binary (NUL bytes); supported: " + ", ".join(sorted(SUPPORTED)),
            )
        )
        return None
    text, encoding = decode_text(raw)
    if encoding is None:
        log.warning("%s: encoding not recognised; decoded as UTF-8 with replacement characters", path)
        problems.append(
            Problem(
                str(path),
                "encoding not recognised; decoded as UTF-8 with replacement characters "
                "(convert it to UTF-8 to fix)",
                skipped=False,
            )
        )
    elif encoding not in ("utf-8", "utf-8-sig", "utf-16", "utf-32", "ascii"):
        problems.append(
            Problem(
                str(path),
                f"is not UTF-8; read as {encoding} (detected); convert it to UTF-8 if the text looks wrong",
                skipped=False,
            )
        )
    return text


def _pdf_document(path: Path, problems: list[Problem]) -> list[Document]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            problems.append(Problem(str(path), "is an encrypted PDF; save a decrypted copy to index it"))
            return []
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
        marks = _pdf_outline(reader)
    except FileNotDecryptedError:
        problems.append(Problem(str(path), "is an encrypted PDF; save a decrypted copy to index it"))
        return []
    except (PyPdfError, OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        problems.append(Problem(str(path), f"is not a readable PDF ({exc}); check the file"))
        return []
    # a page break (form feed) and the outline's headings at the pages they point to:
    # chunking follows them (paretorag.textutil.outline)
    text = "\n\n\f".join(
        "".join(f"{'#' * level} {title}\n\n" for level, title in marks.get(i, ())) + p.strip()
        for i, p in enumerate(pages)
        if p.strip() or marks.get(i)
    )
    if not text.replace("\f", "").strip():
        problems.append(
            Problem(str(path), "has no text layer (a scanned PDF?); run OCR on it first, e.g. ocrmypdf")
        )
        return []
    return [make_document(str(meta_title).strip() or path.stem, text, str(path))]


def _pdf_outline(reader: Any) -> dict[int, list[tuple[int, str]]]:
    """The PDF's outline (bookmarks) as ``{page index: [(level, title), ...]}``; {} without one."""
    from pypdf.errors import PyPdfError

    marks: dict[int, list[tuple[int, str]]] = {}

    def walk(items: Any, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            page = reader.get_destination_page_number(item)
            if title and page is not None and page >= 0:
                marks.setdefault(page, []).append((min(level, 6), title[:200]))

    try:
        walk(reader.outline, 1)
    except (PyPdfError, KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
        log.warning("the PDF outline could not be read (%s); chunks follow its pages only", exc)
        return {}
    return marks


def _docx_document(path: Path, problems: list[Problem]) -> list[Document]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(str(path))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                for row in item.rows:
                    cells = [" ".join(c.text.split()) for c in row.cells]
                    blocks.append(" | ".join(c for c in cells if c))
            else:
                blocks.append(_docx_heading(item) + item.text.strip())
        title = document.core_properties.title or ""
    except (PackageNotFoundError, zipfile.BadZipFile, OSError, KeyError, ValueError, SyntaxError) as exc:
        problems.append(Problem(str(path), f"is not a readable DOCX file ({exc}); check the file"))
        return []
    text = "\n\n".join(b for b in blocks if b)
    if not text:
        problems.append(Problem(str(path), "has no text"))
        return []
    return [make_document(title.strip() or path.stem, text, str(path))]


def _docx_heading(paragraph: Any) -> str:
    """``"## "`` for a paragraph styled "Heading 2" ("# " for "Title"), else ""."""
    if not paragraph.text.strip():
        return ""
    name = str(getattr(getattr(paragraph, "style", None), "name", "") or "")
    if name == "Title":
        return "# "
    level = name.removeprefix("Heading ").strip()
    return (
        "#" * int(level) + " "
        if name.startswith("Heading ") and level.isdigit() and 1 <= int(level) <= 6
        else ""
    )


def _jsonl_records(path: Path, text: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """Records of a JSON-lines file; bad lines are reported (by number) and the rest kept."""
    bad: list[int] = []
    first_error = ""
    # split on "\n" only: str.splitlines() also splits at U+2028, which JSON strings may hold
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(i + 1)
            first_error = first_error or exc.msg
            continue
        yield i, record
    if bad:
        shown = ", ".join(str(n) for n in bad[:20]) + (f" and {len(bad) - 20} more" if len(bad) > 20 else "")
        problems.append(
            Problem(
                str(path),
                f"line{'s' if len(bad) > 1 else ''} {shown} {'are' if len(bad) > 1 else 'is'} not JSON "
                f"({first_error}); skipped, the other lines were read; fix or remove the bad lines",
            )
        )


def _records(path: Path, text: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    if path.suffix.lower() == ".jsonl":
        yield from _jsonl_records(path, text, problems)
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
        for i, rec in _records(path, text, problems):
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
    if suffix in PDF_SUFFIXES or suffix in DOCX_SUFFIXES:
        if _read_bytes(path, problems) is None:
            return []
        return _pdf_document(path, problems) if suffix in PDF_SUFFIXES else _docx_document(path, problems)
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


def scan_dir(root: Path) -> tuple[list[Path], list[Path]]:
    """(supported, unsupported) files under a directory, recursively, sorted; hidden ones are left out."""
    supported: list[Path] = []
    unsupported: list[Path] = []
    for p in sorted(root.rglob("*")):
        if any(part.startswith(".") for part in p.relative_to(root).parts) or not p.is_file():
            continue
        (supported if p.suffix.lower() in SUPPORTED else unsupported).append(p)
    return supported, unsupported


def read_paths(
    paths: Iterable[str | Path], *, strict: bool = False, key: str = "", allow_empty: bool = False
) -> tuple[list[Document], list[Problem]]:
    """Read files and directories. Raises :class:`InputError` only if nothing is usable
    (with ``allow_empty``, only if a path is missing or unreadable: ``--prune`` of a folder
    whose files are all gone).

    Each document's ``key`` is its file's absolute path (all records of a corpus file share
    it), or ``key`` itself, which names the document of exactly one file. With ``strict``,
    the first file that cannot be read raises :class:`InputError` (files of other types met
    in a folder and encoding warnings do not).
    """
    docs: list[Document] = []
    problems: list[Problem] = []
    supported_list = ", ".join(sorted(SUPPORTED))
    items = [Path(p) for p in paths]
    if key and (len(items) != 1 or items[0].is_dir()):
        raise InputError(
            f"--id {key!r} names one document: give exactly one file with it, not "
            + ("a folder" if len(items) == 1 else f"{len(items)} paths")
        )

    def read(f: Path) -> None:
        found = read_file(f, problems)
        docs.extend(dataclasses.replace(d, key=document_key(f, key)) for d in found)

    for path in items:
        if not path.exists():
            problems.append(Problem(str(path), "does not exist; check the path"))
        elif path.is_dir():
            files, others = scan_dir(path)
            if others:
                names = ", ".join(str(p.relative_to(path)) for p in others[:10])
                more = f" and {len(others) - 10} more" if len(others) > 10 else ""
                problems.append(
                    Problem(
                        str(path),
                        f"{len(others)} file(s) with unsupported extensions skipped: {names}{more} "
                        f"(supported: {supported_list})",
                        other_types=True,
                    )
                )
            if not files:
                problems.append(
                    Problem(str(path), f"has no usable file (supported: {supported_list})", other_types=True)
                )
            for f in files:
                read(f)
                _stop_if_strict(strict, problems)
        else:
            read(path)
        _stop_if_strict(strict, problems)
    if not docs and not (allow_empty and items and not any(p.failed for p in problems)):
        detail = "; ".join(str(p) for p in problems) or "no paths given"
        raise InputError(f"nothing to index: {detail}")
    return docs, problems


def _stop_if_strict(strict: bool, problems: list[Problem]) -> None:
    bad = next((p for p in problems if p.failed), None) if strict else None
    if bad is not None:
        raise InputError(f"{bad} (--strict stops at the first file that cannot be read; nothing was indexed)")
