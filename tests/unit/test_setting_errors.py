"""A bad setting's value is said where it came from (the file's table and key, the variable, the
flag), and ``k`` has one limit at every entry point."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from paretorag.config import KEYS, Config
from paretorag.errors import ConfigError, SettingError
from paretorag.params import check_positive_int
from paretorag.retrieval.operators.dense import ChunkVDB
from paretorag.types import MAX_K


def test_a_setting_error_keeps_the_class_message_and_says_what_was_wrong() -> None:
    with pytest.raises(SettingError) as caught:
        check_positive_int(ChunkVDB(), "k", "abc")
    exc = caught.value
    assert isinstance(exc, ConfigError)
    assert str(exc) == "ChunkVDB.k must be a positive integer, got 'abc'"  # the Python API's words
    assert (exc.owner, exc.name, exc.value, exc.rule) == ("ChunkVDB", "k", "abc", "be a positive integer")
    again = pickle.loads(pickle.dumps(exc))  # crosses process boundaries (workers) intact
    assert str(again) == str(exc) and again.value == "abc"


def test_explain_names_the_file_table_and_key(tmp_path: Path) -> None:
    conf = tmp_path / "paretorag.toml"
    conf.write_text('[method.vanilla]\nsearch__k = "abc"\n\n[set.tree]\ng = 0\n', encoding="utf-8")
    cfg = Config.load(conf, environ={})
    said = cfg.explain(SettingError("ChunkVDB", "k", "abc", "be a positive integer"), "vanilla")
    assert str(said) == f"{conf.resolve()} [method.vanilla] search__k: must be a positive integer, got 'abc'"
    said = cfg.explain(SettingError("SummaryTree", "g", 0, "be a positive integer"))
    assert str(said) == f"{conf.resolve()} [set.tree] g: must be a positive integer, got 0"
    # a value no setting gave (a default, another method, another class) keeps the class's words
    assert cfg.explain(SettingError("ChunkVDB", "k", -1, "be a positive integer"), "vanilla") is None
    assert cfg.explain(SettingError("ChunkVDB", "k", "abc", "be a positive integer"), "bm25") is None
    assert cfg.explain(SettingError("RaptorTree", "g", 0, "be a positive integer")) is None


def test_explain_names_an_alias_of_a_step_setting(tmp_path: Path) -> None:
    conf = tmp_path / "paretorag.toml"
    conf.write_text("[method.tog]\ndepth = -3\n", encoding="utf-8")
    said = Config.load(conf, environ={}).explain(
        SettingError("BeamSearch", "depth", -3, "be a positive integer"), "tog"
    )
    assert str(said) == f"{conf.resolve()} [method.tog] depth: must be a positive integer, got -3"


def test_explain_names_the_variable_and_the_flag() -> None:
    cfg = Config.load(None, cwd=Path("/nonexistent"), environ={"PARETORAG_SET": "tree.g=-1"})
    said = cfg.explain(SettingError("SummaryTree", "g", -1, "be a positive integer"))
    assert str(said) == "$PARETORAG_SET tree.g: must be a positive integer, got -1"
    cfg.add_set_flags(["tree.g=abc"])  # a command's --set, over the variable
    said = cfg.explain(SettingError("SummaryTree", "g", "abc", "be a positive integer"))
    assert str(said) == "--set tree.g: must be a positive integer, got 'abc'"


def test_one_k_limit_for_the_file_the_variable_the_server_and_mcp() -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")
    from paretorag.server import Limits
    from paretorag.server import mcp_stdio as mcp_server

    assert MAX_K == 100
    assert Limits().max_k == MAX_K and mcp_server.MAX_K == MAX_K
    assert KEYS["index.k"].parse(MAX_K) == MAX_K and KEYS["index.k"].parse(str(MAX_K)) == MAX_K
    with pytest.raises(ValueError, match=f"at most {MAX_K}"):
        KEYS["index.k"].parse(MAX_K + 1)
    with pytest.raises(ConfigError, match=f"index.k must be at most {MAX_K}"):
        Config.load(None, cwd=Path("/nonexistent"), environ={"PARETORAG_K": "100000000"})
