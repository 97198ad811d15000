"""The fresh-machine set-up: `make test` shows progress and leaves the slow llamacpp build out."""

from __future__ import annotations

import re
import tomllib

from ..conftest import ROOT


def _recipe(makefile: str, target: str) -> str:
    m = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert m, target
    return m.group(1)


def test_make_test_leaves_llamacpp_out_and_pip_shows_progress():
    makefile = (ROOT / "Makefile").read_text()
    assert "llamacpp" not in _recipe(makefile, "$(DEVSTAMP)")
    assert "llamacpp" in _recipe(makefile, "$(LLAMASTAMP)")
    assert "tests/integration/test_llamacpp.py" in _recipe(makefile, "test-llamacpp")
    pip_lines = [line for line in makefile.splitlines() if "pip install" in line or "$(PIP)" in line]
    assert pip_lines and not any(re.search(r"\s-q\b", line) for line in pip_lines)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_input_format_libraries_are_core_dependencies():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in deps}
    assert {"pypdf", "python-docx", "charset-normalizer"} <= names
