"""paretorag.toml: found in the working directory or given by --config, overridden by
$PARETORAG_* and by flags, shown by `paretorag config show`, and refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag.cli import app, indexing
from paretorag.config import KEYS, Config, select
from paretorag.errors import ConfigError

from ..server_util import write_corpus

runner = CliRunner()

FILE = """\
[index]
path = "ix"
method = "bm25"
methods = ["vanilla", "bm25"]
k = 1

[embedder]
model = "hash:64"
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS.values():
        monkeypatch.delenv(key.env, raising=False)
    monkeypatch.delenv("PARETORAG_CONFIG", raising=False)
    monkeypatch.delenv("PARETORAG_SET", raising=False)
    yield
    select(None)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with paretorag.toml and the index it names, built by `paretorag index` reading the file."""
    root = tmp_path_factory.mktemp("project")
    (root / "paretorag.toml").write_text(FILE, encoding="utf-8")
    write_corpus(root / "docs")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for key in KEYS.values():
            mp.delenv(key.env, raising=False)
        r = runner.invoke(app, ["index", "docs"])  # --index, --methods and --embedder from the file
    assert r.exit_code == 0, r.output
    manifest = json.loads((root / "ix" / "manifest.json").read_text())
    assert manifest["config"]["embedder"] == "hash:64"
    assert set(manifest["config"]["methods"]) == {"vanilla", "bm25"}
    return root


def _ask(*args: str) -> dict:
    """``paretorag [GLOBAL OPTIONS] query QUESTION --json``: the question is the last argument."""
    r = runner.invoke(app, [*args[:-1], "query", args[-1], "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_file_in_working_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    data = _ask("What do otters eat?")
    assert data["method"] == "bm25" and len(data["contexts"]) == 1
    assert data["contexts"][0]["title"] == "otters"


def test_config_option_and_relative_paths(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "conf"
    elsewhere.mkdir()
    other = elsewhere / "other.toml"
    other.write_text(f'[index]\npath = "{project / "ix"}"\nmethod = "vanilla"\nk = 2\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no paretorag.toml here
    data = _ask("--config", str(other), "Which bird spears frogs?")
    assert data["method"] == "vanilla" and len(data["contexts"]) == 2
    # a relative index.path is read from the file's folder, not the working directory
    (project / "sub").mkdir(exist_ok=True)
    rel = project / "sub" / "rel.toml"
    rel.write_text('[index]\npath = "../ix"\n', encoding="utf-8")
    assert Config.load(rel).value("index.path") == str(project / "ix")
    monkeypatch.setenv("PARETORAG_CONFIG", str(rel))
    assert _ask("--config", str(other), "herons")["method"] == "vanilla"  # --config wins over the variable
    r = runner.invoke(app, ["--config", str(tmp_path / "nope.toml"), "query", "x"])
    assert r.exit_code == 2 and "--config" in r.output and "nope.toml: no such file" in r.output


def test_env_overrides_file_and_flags_override_both(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("PARETORAG_K", "2")
    monkeypatch.setenv("PARETORAG_METHOD", "vanilla")
    data = _ask("What do otters eat?")
    assert data["method"] == "vanilla" and len(data["contexts"]) == 2
    r = runner.invoke(app, ["query", "What do otters eat?", "--json", "-k", "3", "--method", "bm25"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["method"] == "bm25" and data["contexts"][0]["title"] == "otters"
    r = runner.invoke(app, ["query", "What do otters eat?", "--json", "-k", "3"])
    assert json.loads(r.stdout)["method"] == "vanilla" and len(json.loads(r.stdout)["contexts"]) == 3
    monkeypatch.setenv("PARETORAG_K", "zero")
    r = runner.invoke(app, ["query", "otters"])
    assert r.exit_code == 2 and "$PARETORAG_K: index.k must be a positive integer" in r.output


def test_method_settings_from_the_file(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "m.toml"
    conf.write_text(
        f'[index]\npath = "{project / "ix"}"\n\n[method.vanilla]\nsearch__k = 4\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["--config", str(conf), "query", "otters", "--method", "vanilla", "--json"])
    assert r.exit_code == 0, r.output
    assert (
        len(json.loads(r.stdout)["contexts"]) == 4
    )  # the method's own k, set by the file (vanilla's default is 5)


def test_set_tables_merge_with_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "paretorag.toml").write_text("[set.tree]\ng = 4\nmax_words = 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    select(None)
    assert indexing._parse_settings(["tree.g=6"]) == {"tree": {"g": 6, "max_words": 2}}
    monkeypatch.setenv("PARETORAG_SET", "tree.g=5; tree.max_words=3")
    select(None)
    assert indexing._parse_settings([]) == {"tree": {"g": 5, "max_words": 3}}


def test_config_show_sources(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("PARETORAG_K", "2")
    r = runner.invoke(app, ["config", "show", "--json", "--llm", "fake", "--set", "tree.g=4"])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    file = str((project / "paretorag.toml").resolve())
    assert shown["file"] == file
    rows = {s["key"]: s for s in shown["settings"]}
    assert rows["index.method"] == {"key": "index.method", "value": "bm25", "source": "file", "from": file}
    assert rows["index.path"]["value"] == str((project / "ix").resolve())
    assert rows["index.k"] == {"key": "index.k", "value": 2, "source": "env", "from": "PARETORAG_K"}
    assert rows["llm.model"] == {"key": "llm.model", "value": "fake", "source": "flag", "from": "--llm"}
    assert rows["llm.max_wait"]["source"] == "default" and rows["llm.max_wait"]["value"] == 300.0
    assert rows["set.tree.g"]["source"] == "flag" and rows["set.tree.g"]["value"] == 4
    r = runner.invoke(app, ["config", "show"])
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.stdout.splitlines()[1:] if line.strip()}
    assert lines["index.k"].split()[1:] == ["2", "env", "$PARETORAG_K"]
    assert lines["index.method"].split()[1:] == ["bm25", "file", file]
    assert lines["llm.model"].split()[1:3] == ["-", "default"]
    assert r.stdout.splitlines()[0] == f"settings file: {file}"


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ('[index]\nmetod = "bm25"\n', "unknown key 'index.metod'; did you mean 'index.method'?"),
        ('[indx]\npath = "ix"\n', "unknown key 'indx'; did you mean 'index'?"),
        ("k = 5\n", "unknown key 'k'; did you mean 'index.k'?"),
        ("[llm]\nmodle = 'fake'\n", "unknown key 'llm.modle'; did you mean 'llm.model'?"),
        ('llm = "fake"\n', "'llm' must be a table, e.g. [llm] then model = ..."),
        ("[index]\nk = 0\n", "index.k must be a positive integer"),
    ],
)
def test_bad_keys_name_file_key_and_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, wanted: str
) -> None:
    conf = tmp_path / "paretorag.toml"
    conf.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["config", "show"])
    assert r.exit_code == 2
    message = " ".join(r.output.split())
    assert str(conf.resolve()) in message and wanted in message
    r = runner.invoke(app, ["methods"])  # every command refuses the file, not only `config show`
    assert r.exit_code == 2 and wanted in " ".join(r.output.split())


def test_bad_set_and_method_keys_checked_against_the_registry(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("[set.tree]\ngg = 4\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key 'set.tree.gg'; did you mean 'set.tree.g'\?"):
        Config.load(conf).check()
    conf.write_text("[set.entity_grph]\nlabels = []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"did you mean 'set.entity_graph.labels'\?"):
        Config.load(conf).check()
    conf.write_text("[method.vanila]\nsearch__k = 3\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"c.toml: unknown key 'method.vanila.search__k'; did you mean 'method.vanilla"
    ):
        Config.load(conf).check()
    conf.write_text("[method.hipporag2]\nspread__damping = 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"did you mean 'method.hipporag2.ppr__damping'\?"):
        Config.load(conf).check()


def test_bad_toml_names_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "paretorag.toml"
    conf.write_text('[index]\nmethod = "bm25"\nk = = 3\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["config", "show"])
    message = " ".join(r.output.split())
    assert r.exit_code == 2
    assert f"{conf.resolve()} is not valid TOML" in message and "line 3" in message


def test_a_file_that_is_not_utf8_names_the_file_and_the_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "paretorag.toml"
    conf.write_bytes('[index]\nmethod = "caf\xe9"\n'.encode("latin-1"))  # saved as Latin-1
    monkeypatch.chdir(tmp_path)
    wanted = f"{conf.resolve()} is not UTF-8 text (byte 0xe9 at position 21, line 2); save it as UTF-8"
    for args in (["config", "show"], ["methods"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert wanted in " ".join(r.output.split()) and "Traceback" not in r.output
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        Config.load(conf)


def test_a_bad_method_setting_names_the_file_table_and_key(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "m.toml"
    conf.write_text(
        f'[index]\npath = "{project / "ix"}"\n\n[method.vanilla]\nsearch__k = "abc"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    wanted = f"{conf.resolve()} [method.vanilla] search__k: must be a positive integer, got 'abc'"
    r = runner.invoke(
        app, ["--config", str(conf), "query", "otters", "--method", "vanilla", "--context-only"]
    )
    assert r.exit_code == 2, r.output
    assert wanted in " ".join(r.output.split()) and "ChunkVDB" not in r.output
    r = runner.invoke(app, ["--config", str(conf), "chat", "--method", "vanilla", "--json"], input="otters\n")
    assert r.exit_code == 1, r.output  # a question failed; the error names the key, not the class
    assert wanted in " ".join(r.output.split()) and "ChunkVDB" not in r.output


def test_k_above_the_limit_names_the_variable_the_file_and_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARETORAG_K", "101")
    r = runner.invoke(app, ["methods"])
    assert r.exit_code == 2 and "$PARETORAG_K: index.k must be at most 100" in " ".join(r.output.split())
    monkeypatch.delenv("PARETORAG_K")
    conf = tmp_path / "paretorag.toml"
    conf.write_text("[index]\nk = 100000000\n", encoding="utf-8")
    r = runner.invoke(app, ["methods"])
    message = " ".join(r.output.split())
    assert r.exit_code == 2 and f"{conf.resolve()}: index.k must be at most 100" in message
    conf.write_text("[index]\nk = 100\n", encoding="utf-8")
    r = runner.invoke(app, ["config", "show", "-k", "101"])
    assert r.exit_code == 2 and "-k: index.k must be at most 100" in " ".join(r.output.split())
    r = runner.invoke(app, ["config", "show", "--json"])
    rows = {s["key"]: s for s in json.loads(r.stdout)["settings"]}
    assert r.exit_code == 0 and rows["index.k"]["value"] == 100  # the limit itself is allowed


def test_no_file_no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["inspect"])
    assert r.exit_code == 2
    assert "--index" in r.output and "PARETORAG_INDEX" in " ".join(r.output.split())
    r = runner.invoke(app, ["config", "show", "--json"])
    shown = json.loads(r.stdout)
    assert shown["file"] is None and all(s["source"] == "default" for s in shown["settings"])


def test_graph_commands_take_the_index_from_the_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    r = runner.invoke(app, ["graph", "entities"])  # no --index: index.path of paretorag.toml
    assert "Missing option" not in r.output, r.output
    # the file's index was opened: it has no graph built, and the error says so
    assert f"the index {project / 'ix'} holds no graph yet" in r.output, r.output
