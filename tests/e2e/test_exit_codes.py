"""`paretorag index` exit codes: files of a supported type that cannot be read (and files named
on the command line that are missing or unsupported) leave the rest indexed, are listed, and
exit 3; other types met in a folder are skipped and counted (exit 0); --strict stops at the
first bad file (exit 2, nothing stored). The codes are those of docs/exit-codes.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from paretorag.cli import app, exitcodes

from ..conftest import ROOT

runner = CliRunner()
GOOD = "Lisbon is the capital of Portugal and lies on the Tagus."


def _folder(tmp_path: Path, *, bad: bool = True) -> Path:
    src = tmp_path / "docs"
    src.mkdir()
    (src / "lisbon.txt").write_text(GOOD)
    (src / "photo.png").write_bytes(b"\x89PNG\r\n")  # another type: skipped, not a failure
    if bad:
        (src / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage")
        (src / "blob.txt").write_bytes(b"\x00\x01\x02\x03 binary")
    return src


def _index(tmp_path: Path, *args: str):
    return runner.invoke(
        app, ["index", *args, "--index", str(tmp_path / "ix"), "--embedder", "hash", "--methods", "vanilla"]
    )


def _documents(tmp_path: Path) -> list[str]:
    r = runner.invoke(app, ["inspect", "--index", str(tmp_path / "ix"), "--json", "--documents"])
    assert r.exit_code == 0, r.output
    return [d["title"] for d in json.loads(r.stdout)["documents"]]


def test_unreadable_files_are_listed_and_the_rest_indexed_exit_3(tmp_path):
    r = _index(tmp_path, str(_folder(tmp_path)))
    assert r.exit_code == exitcodes.PARTIAL == 3, r.output
    err = " ".join(r.stderr.split())
    assert re.search(r"failed \S*corrupt\.pdf: is not a readable PDF", err), err
    assert re.search(r"failed \S*blob\.txt: looks binary", err), err
    assert "skipped" in err and "photo.png" in err and "failed" not in err.split("photo.png")[0][-40:]
    assert r.stdout.startswith("added 1, updated 0, unchanged 0, removed 0;")
    assert "2 file(s) could not be read (listed above)" in r.stdout
    assert _documents(tmp_path) == ["lisbon"]


def test_a_folder_with_other_types_only_is_exit_0(tmp_path):
    r = _index(tmp_path, str(_folder(tmp_path, bad=False)))
    assert r.exit_code == exitcodes.OK, r.output
    assert "photo.png" in r.stderr and "could not be read" not in r.stdout


def test_missing_or_unsupported_files_named_on_the_command_line_exit_3(tmp_path):
    good = tmp_path / "lisbon.txt"
    good.write_text(GOOD)
    odt = tmp_path / "minutes.odt"
    odt.write_bytes(b"PK\x03\x04")
    r = _index(tmp_path, str(good), str(tmp_path / "gone.md"))
    assert r.exit_code == exitcodes.PARTIAL, r.output
    assert "gone.md: does not exist" in " ".join(r.stderr.split())
    r = _index(tmp_path, str(good), str(odt))
    assert r.exit_code == exitcodes.PARTIAL, r.output
    assert "minutes.odt: unsupported extension .odt" in " ".join(r.stderr.split())
    assert _documents(tmp_path) == ["lisbon"]


def test_nothing_readable_is_an_error_exit_2(tmp_path):
    r = _index(tmp_path, str(tmp_path / "gone.md"))
    assert r.exit_code == exitcodes.ERROR == 2 and "does not exist" in r.output
    assert not (tmp_path / "ix").exists()


def test_strict_makes_the_first_bad_file_fatal(tmp_path):
    src = _folder(tmp_path)
    r = _index(tmp_path, str(src), "--strict")
    assert r.exit_code == exitcodes.ERROR, r.output
    err = " ".join(r.stderr.split())
    assert "blob.txt: looks binary" in err and "--strict stops at the first file" in err
    assert "corrupt.pdf" not in err  # the first bad file (sorted) stops the run
    assert not (tmp_path / "ix" / "manifest.json").exists()  # nothing stored
    # other types met in a folder are not bad files, even with --strict
    (src / "blob.txt").unlink()
    (src / "corrupt.pdf").unlink()
    r = _index(tmp_path, str(src), "--strict")
    assert r.exit_code == exitcodes.OK, r.output
    assert _documents(tmp_path) == ["lisbon"]


def test_a_usage_error_is_exit_2():
    r = runner.invoke(app, ["index", "--no-such-option"])
    assert r.exit_code == exitcodes.ERROR


def test_every_code_is_in_the_documented_table():
    doc = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| *(\d+) *\| *`?([A-Z]+)`? *\|", doc, flags=re.M))
    names = {
        getattr(exitcodes, n): n for n in ("OK", "FAILED", "ERROR", "PARTIAL", "INTERRUPTED", "TERMINATED")
    }
    assert {int(k): v for k, v in rows.items()} == names
    assert set(exitcodes.CODES) == set(names)
