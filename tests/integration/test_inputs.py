"""Input formats: PDF, DOCX, other encodings, JSON lines with bad lines, unsupported files in a directory."""

from __future__ import annotations

import json

from paretorag import RAG
from paretorag.ingest.files import read_paths
from paretorag.providers.embedders import HashEmbedder
from paretorag.textutil import heading_paths


def minimal_pdf(lines: list[str], title: str = "") -> bytes:
    """A valid one-page PDF with a text layer (Helvetica), written by hand."""
    ops = ["BT /F1 12 Tf 72 720 Td 14 TL"]
    for line in lines:
        esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"({esc}) Tj T*")
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    info = f"<< /Title ({title}) >>" if title else "<< >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        info.encode("latin-1"),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_pdf_text_is_read_with_its_title(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(minimal_pdf(["The otter (Lutra lutra) eats fish.", "It lives near rivers."], "Otters"))
    docs, problems = read_paths([path])
    assert problems == []
    [doc] = docs
    assert doc.title == "Otters" and doc.source == str(path)
    assert "The otter (Lutra lutra) eats fish." in doc.text and "It lives near rivers." in doc.text


def test_pdf_pages_and_outline_become_sections(tmp_path):
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for lines in (["Otters eat fish."], ["Beavers build dams."], ["Both swim well."]):
        writer.add_page(PdfReader(io.BytesIO(minimal_pdf(lines))).pages[0])
    top = writer.add_outline_item(title="Animals", page_number=0)
    writer.add_outline_item(title="Beavers", page_number=1, parent=top)
    path = tmp_path / "animals.pdf"
    with open(path, "wb") as fh:
        writer.write(fh)
    [doc], problems = read_paths([path])
    assert problems == []
    assert doc.text == (
        "# Animals\n\nOtters eat fish.\n\n\f## Beavers\n\nBeavers build dams.\n\n\fBoth swim well."
    )
    assert heading_paths(doc.text, [doc.text.index("Beavers build"), doc.text.index("Both")]) == [
        "Animals > Beavers",
        "Animals > Beavers",  # a page break ends a section without naming one
    ]


def test_html_headings_are_kept_as_markdown_headings(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Guide</title></head><body><h1>Guide</h1><p>Intro.</p>"
        "<h2>Install <em>it</em></h2><p>Run pip.</p><script>x()</script></body></html>"
    )
    [doc], _ = read_paths([path])
    assert doc.text == "# Guide\n\nIntro.\n\n## Install it\n\nRun pip."
    assert heading_paths(doc.text, [doc.text.index("Run pip")], doc.title) == ["Install it"]


def test_broken_and_imageonly_pdfs_are_reported(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf at all")
    (tmp_path / "blank.pdf").write_bytes(minimal_pdf([]))
    (tmp_path / "ok.txt").write_text("Fine text here.")
    docs, problems = read_paths([tmp_path])
    msgs = {p.path.split("/")[-1]: p.message for p in problems}
    assert "not a readable PDF" in msgs["broken.pdf"]
    assert "no text layer" in msgs["blank.pdf"] and "OCR" in msgs["blank.pdf"]
    assert [d.title for d in docs] == ["ok"]


def test_docx_paragraphs_and_tables_are_read(tmp_path):
    import docx

    d = docx.Document()
    d.core_properties.title = "Field notes"
    d.add_heading("Rivers", level=1)
    d.add_paragraph("The Rhine flows to the North Sea.")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "river", "length"
    table.cell(1, 0).text, table.cell(1, 1).text = "Rhine", "1233 km"
    d.add_paragraph("After the table.")
    path = tmp_path / "notes.docx"
    d.save(str(path))
    (tmp_path / "fake.docx").write_bytes(b"not a zip")
    docs, problems = read_paths([path, tmp_path / "fake.docx"])
    [doc] = docs
    assert doc.title == "Field notes"
    assert (
        doc.text
        == "# Rivers\n\nThe Rhine flows to the North Sea.\n\nriver | length\n\nRhine | 1233 km\n\nAfter the table."
    )
    assert len(problems) == 1 and "not a readable DOCX" in problems[0].message


def test_other_encodings_are_detected_not_replaced(tmp_path):
    text = "Le café de la gare est très animé. Les élèves déjeunent à côté du théâtre, où l'on joue Molière."
    (tmp_path / "cp1252.txt").write_bytes(text.replace("'", "\u2019").encode("cp1252"))
    (tmp_path / "latin1.md").write_bytes(text.encode("latin-1"))
    (tmp_path / "utf16.txt").write_bytes(text.encode("utf-16"))  # with a byte-order mark
    (tmp_path / "bom8.txt").write_bytes(text.encode("utf-8-sig"))
    docs, problems = read_paths([tmp_path])
    by_title = {d.title: d.text for d in docs}
    assert by_title["cp1252"] == text.replace("'", "\u2019")
    assert by_title["latin1"] == text
    assert by_title["utf16"] == text and by_title["bom8"] == text
    assert all("\ufffd" not in t for t in by_title.values())
    notes = {p.path.split("/")[-1]: p for p in problems}
    assert set(notes) <= {"cp1252.txt", "latin1.md"}  # UTF-16/UTF-8 with a BOM need no note
    assert all(not p.skipped and "read as" in p.message for p in notes.values())


def test_jsonl_keeps_every_good_line_and_names_the_bad_ones(tmp_path):
    lines = [json.dumps({"title": f"t{i}", "text": f"record number {i}"}) for i in range(6)]
    lines[2] = '{"title": "broken", "text": '
    lines[4] = "not json at all"
    lines.insert(1, "")  # blank lines are fine
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    docs, problems = read_paths([path])
    assert sorted(d.title for d in docs) == ["t0", "t1", "t3", "t5"]
    assert len(problems) == 1
    p = problems[0]
    assert p.path == str(path) and "lines 4, 6 are not JSON" in p.message  # 1-based, counting the blank line

    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(32))
    report = rag.index([path])
    assert report.added == 4 and rag.manifest.counts["documents"] == 4


def test_unsupported_files_in_a_directory_are_reported(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.md").write_text("# A\n\nSome text.")
    (src / "image.png").write_bytes(b"\x89PNG\r\n")
    (src / "sub" / "table.xlsx").write_bytes(b"PK")
    (src / ".hidden.bin").write_bytes(b"x")
    docs, problems = read_paths([src])
    assert [d.title for d in docs] == ["a"]
    [p] = problems
    assert p.path == str(src) and "2 file(s) with unsupported extensions skipped" in p.message
    assert "image.png" in p.message and "sub/table.xlsx" in p.message and ".hidden" not in p.message


def test_retrieved_passages_carry_their_heading_path(tmp_path):
    from paretorag.answering.context import format_block

    body = " ".join(f"Line {i} of the operations section." for i in range(9))  # over half a chunk
    (tmp_path / "manual.md").write_text(
        f"# Manual\n\nIntro text.\n\n## Operations\n\n{body}\n\n### Key rotation\n\n"
        "Rotate the signing keys with `paretorag keys rotate` every ninety days.\n"
    )
    with RAG.open(
        tmp_path / "ix",
        methods=["bm25"],
        embedder=HashEmbedder(dim=64),
        chunk_size=120,
        chunk_overlap=10,
        chunking="sections",
    ) as rag:
        rag.index([tmp_path / "manual.md"])
        _, items = rag.retrieve("How often are the signing keys rotated?", "bm25", k=3)
    best = items[0]
    assert "ninety days" in best.text and best.heading == "Operations > Key rotation"
    assert best.to_json()["heading"] == "Operations > Key rotation"
    assert format_block(1, best).startswith("[1] manual > Operations > Key rotation\n")


def test_chunking_is_kept_by_the_index_and_fixed_once_documents_exist(tmp_path):
    import pytest

    from paretorag.errors import ConfigError
    from paretorag.storage.manifest import IndexConfig

    assert IndexConfig().chunking == "sentences" and IndexConfig.from_json({}).chunking == "sentences"
    (tmp_path / "a.md").write_text("# A\n\nSome text about otters.\n")
    with RAG.open(tmp_path / "ix", embedder=HashEmbedder(dim=32), chunking="sections") as rag:
        rag.index([tmp_path / "a.md"])
        assert rag.manifest.config.chunking == "sections"
    with pytest.raises(ConfigError, match="chunked by sections"):
        RAG.open(tmp_path / "ix", embedder=HashEmbedder(dim=32), chunking="sentences")
    with pytest.raises(ConfigError, match="chunking must be sections or sentences"):
        IndexConfig(chunking="pages").validate()
