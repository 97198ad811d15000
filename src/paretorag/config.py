"""``paretorag.toml``: the command line's defaults, from a file, the environment and flags.

Each setting is taken from the first of: a command-line flag, an environment variable,
the file, the built-in default. The file is ``--config PATH`` (a global option), else
``$PARETORAG_CONFIG``, else ``paretorag.toml`` in the working directory; none is fine.
``paretorag config show`` prints the effective settings and where each came from.

::

    [index]
    path = "my-index"        # --index            $PARETORAG_INDEX (relative paths: to this file)
    method = "fusion"        # --method           $PARETORAG_METHOD
    methods = ["vanilla"]    # index --methods    $PARETORAG_METHODS (comma-separated)
    k = 8                    # -k                 $PARETORAG_K

    [llm]
    model = "openai:gpt-4o-mini"   # --llm           $PARETORAG_LLM
    max_wait = 300                 # --llm-max-wait  $PARETORAG_LLM_MAX_WAIT

    [embedder]
    model = "minilm"         # index --embedder   $PARETORAG_EMBEDDER

    [set.tree]               # index --set tree.g=4   $PARETORAG_SET="tree.g=4;tree.max_levels=3"
    g = 4

    [method.hipporag2]       # the method's settings when it answers (query, chat)
    spread__damping = 0.85

The file holds settings only (no secrets: API keys stay in ``PARETORAG_API_KEYS`` /
``OPENAI_API_KEY``). An unknown key is an error naming the file, the key and the nearest
valid one; a file that is not UTF-8 or not TOML is an error naming its line. A bad value of a
``[method.*]`` or ``[set.*]`` setting, found when the method or builder uses it, is said with
the file, table and key (or the variable, or the flag) that gave it: :func:`explained`.
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, ParetoragError, SettingError

FILENAME = "paretorag.toml"
CONFIG_ENV = "PARETORAG_CONFIG"
SET_ENV = "PARETORAG_SET"
SECTIONS = ("index", "llm", "embedder", "set", "method")


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a non-empty string")
    return value.strip()


def _positive_int(value: Any) -> int:
    if isinstance(value, str):
        value = int(value.strip()) if value.strip().lstrip("+").isdigit() else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("a positive integer, e.g. 8")
    return value


def _top_k(value: Any) -> int:
    from .types import MAX_K

    k = _positive_int(value)
    if k > MAX_K:
        raise ValueError(f"at most {MAX_K} (the limit of every entry point), e.g. 8")
    return k


def _positive_float(value: Any) -> float:
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError("a positive number of seconds, e.g. 300")
    return seconds


def _names(value: Any) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(m, str) for m in items):
        raise ValueError('a list of method names, e.g. ["vanilla", "fusion"]')
    names = [m.strip() for m in items if m.strip()]
    if not names:
        raise ValueError('at least one method name, e.g. ["vanilla"]')
    return names


@dataclass(frozen=True)
class Key:
    """One scalar setting: how its value is checked, its variable, its flag, and its default."""

    parse: Callable[[Any], Any]
    env: str
    flag: str
    default: Any
    doc: str


KEYS: dict[str, Key] = {
    "index.path": Key(
        _text, "PARETORAG_INDEX", "--index", None, "the index directory (or postgresql:// URL)"
    ),
    "index.url": Key(
        _text,
        "PARETORAG_INDEX_URL",
        "--index",
        None,
        "a postgresql:// index (used where index.path is unset)",
    ),
    "index.method": Key(
        _text, "PARETORAG_METHOD", "--method", None, "the method that answers (default: recommended if built)"
    ),
    "index.methods": Key(
        _names, "PARETORAG_METHODS", "--methods", None, "methods `index` builds for: the index's own"
    ),
    "index.k": Key(_top_k, "PARETORAG_K", "-k", None, "passages to retrieve (default: the method's)"),
    "llm.model": Key(_text, "PARETORAG_LLM", "--llm", None, "the LLM (default: the index's own)"),
    "llm.max_wait": Key(
        _positive_float, "PARETORAG_LLM_MAX_WAIT", "--llm-max-wait", 300.0, "seconds per LLM call"
    ),
    "embedder.model": Key(
        _text, "PARETORAG_EMBEDDER", "--embedder", None, "the embedder of a new index: minilm"
    ),
}


@dataclass(frozen=True)
class Setting:
    """An effective value and where it came from: ``default``, ``file``, ``env`` or ``flag``
    (``origin``: the file's path, the variable's or the flag's name)."""

    key: str
    value: Any
    source: str = "default"
    origin: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "source": self.source, "from": self.origin}


def _nearest(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.5)
    if not close:  # "k" or "model" written at the top: the key that ends with it
        close = [c for c in candidates if c.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]][:1]
    return f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(candidates)}"


def _same(a: Any, b: Any) -> bool:
    """The value a setting gave is the value a check refused (``1`` is not ``True``)."""
    return type(a) is type(b) and bool(a == b)


def _scalar(name: str, value: Any) -> bool:
    from .params import Params

    return name != "steps" and not isinstance(value, Params)


@dataclass
class Config:
    """The effective settings of one command line (see the module's docstring)."""

    path: Path | None = None
    settings: dict[str, Setting] = field(default_factory=dict)
    builders: dict[str, dict[str, Setting]] = field(default_factory=dict)  # [set.STRUCTURE]
    methods: dict[str, dict[str, Setting]] = field(default_factory=dict)  # [method.NAME]
    _checked: bool = False

    # -- loading ---------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        *,
        cwd: Path | None = None,
        environ: Mapping[str, str] | None = None,
        flags: Mapping[str, Any] | None = None,
        set_items: list[str] | None = None,
    ) -> Config:
        """Defaults, then the file, then the environment, then ``flags`` (``{"index.k": 5}``)
        and ``set_items`` (``["tree.g=4"]``, as ``--set``)."""
        env = os.environ if environ is None else environ
        cfg = cls(settings={k: Setting(k, key.default) for k, key in KEYS.items()})
        file = cls._locate(path, cwd or Path.cwd(), env)
        if file is not None:
            cfg.path = file
            cfg._read_file(file)
        for name, key in KEYS.items():
            raw = env.get(key.env, "")
            if raw.strip():
                cfg._put(name, raw, "env", key.env, f"${key.env}")
        if env.get(SET_ENV, "").strip():
            items = [s for s in env[SET_ENV].split(";") if s.strip()]
            cfg._put_set(items, "env", SET_ENV, f"${SET_ENV}")
        for name, value in (flags or {}).items():
            if value is not None:
                cfg._put(name, value, "flag", KEYS[name].flag, KEYS[name].flag)
        if set_items:
            cfg._put_set(set_items, "flag", "--set", "--set")
        return cfg

    @staticmethod
    def _locate(path: str | Path | None, cwd: Path, env: Mapping[str, str]) -> Path | None:
        if path is not None or env.get(CONFIG_ENV, "").strip():
            given = Path(path) if path is not None else Path(env[CONFIG_ENV].strip())
            where = "--config" if path is not None else f"${CONFIG_ENV}"
            if not given.is_file():
                raise ConfigError(
                    f"{where} {given}: no such file; write one (see docs/config.md) or fix the path"
                )
            return given.resolve()
        here = cwd / FILENAME
        return here.resolve() if here.is_file() else None

    def _put(self, name: str, raw: Any, source: str, origin: str, where: str) -> None:
        try:
            value = KEYS[name].parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{where}: {name} must be {exc}, got {raw!r}") from None
        if name == "index.path" and source == "file" and self.path is not None and "://" not in value:
            value = str((self.path.parent / value).resolve()) if not Path(value).is_absolute() else value
        self.settings[name] = Setting(name, value, source, origin)

    def _put_set(self, items: list[str], source: str, origin: str, where: str) -> None:
        from .indexing.settings import parse_builder_settings

        try:
            parsed = parse_builder_settings([s.strip() for s in items])
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        for structure, values in parsed.items():
            for name, value in values.items():
                key = f"set.{structure}.{name}"
                self.builders.setdefault(structure, {})[name] = Setting(key, value, source, origin)

    def _read_file(self, file: Path) -> None:
        try:
            with open(file, "rb") as fh:
                data = tomllib.load(fh)
        except UnicodeDecodeError as exc:
            line = exc.object[: exc.start].count(b"\n") + 1
            raise ConfigError(
                f"{file} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at position {exc.start}, "
                f"line {line}); save it as UTF-8"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file} is not valid TOML: {exc}; fix that line") from None
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read it ({exc.strerror}); check the path") from None
        origin = str(file)
        for section, body in data.items():
            if section not in SECTIONS:
                raise ConfigError(f"{file}: unknown key {section!r}{_nearest(section, [*SECTIONS, *KEYS])}")
            if not isinstance(body, dict):
                example = next((k for k in KEYS if k.startswith(section + ".")), f"{section}.NAME")
                head, _, leaf = example.partition(".")
                raise ConfigError(
                    f"{file}: {section!r} must be a table, e.g. [{head}] then {leaf} = ...; got {body!r}"
                )
            if section in ("set", "method"):
                self._read_tables(file, section, body)
                continue
            for name, value in body.items():
                key = f"{section}.{name}"
                if key not in KEYS:
                    raise ConfigError(f"{file}: unknown key {key!r}{_nearest(key, list(KEYS))}")
                self._put(key, value, "file", origin, str(file))

    def _read_tables(self, file: Path, section: str, body: dict[str, Any]) -> None:
        target = self.builders if section == "set" else self.methods
        what = "STRUCTURE" if section == "set" else "METHOD"
        for owner, values in body.items():
            if not isinstance(values, dict):
                raise ConfigError(
                    f"{file}: {section}.{owner} must be a table of settings, e.g. [{section}.{owner}] "
                    f"then NAME = VALUE ([{section}.{what}])"
                )
            for name, value in values.items():
                key = f"{section}.{owner}.{name}"
                target.setdefault(owner, {})[name] = Setting(key, value, "file", str(file))

    def add_set_flags(self, items: list[str]) -> None:
        """A command's ``--set`` items, over the file's and the variable's (the builders check
        their names and values when they are used)."""
        self._put_set(items, "flag", "--set", "--set")

    # -- reading ---------------------------------------------------------------
    def value(self, key: str) -> Any:
        return self.settings[key].value

    def check(self) -> None:
        """Every ``[set.*]`` structure and setting, and ``[method.*]`` method and setting, exists
        (imports the methods: done when they are used, not at load)."""
        if self._checked:
            return
        from .graphs.base import available_builders, builder_class
        from .retrieval.methods.base import available_methods, get_method

        structures = available_builders()
        for structure, values in self.builders.items():
            for name, s in values.items():
                if structure not in structures:
                    cands = [f"set.{b}.{name}" for b in structures]
                    raise ConfigError(f"{self._where(s)}: unknown key {s.key!r}{_nearest(s.key, cands)}")
                valid = builder_class(structure)._param_names()
                if name.partition("__")[0] not in valid:
                    cands = [f"set.{structure}.{v}" for v in valid]
                    raise ConfigError(f"{self._where(s)}: unknown key {s.key!r}{_nearest(s.key, cands)}")
        methods = available_methods()
        for method, values in self.methods.items():
            for name, s in values.items():
                if method not in methods:
                    cands = [f"method.{m}.{name}" for m in methods]
                    raise ConfigError(f"{self._where(s)}: unknown key {s.key!r}{_nearest(s.key, cands)}")
                valid = [  # the settings a value can be given to (not the steps themselves)
                    n for n, v in get_method(method).get_params(deep=True).items() if _scalar(n, v)
                ]
                if name not in valid:
                    cands = [f"method.{method}.{v}" for v in valid]
                    raise ConfigError(f"{self._where(s)}: unknown key {s.key!r}{_nearest(s.key, cands)}")
        self._checked = True

    @staticmethod
    def _where(s: Setting) -> str:
        return s.origin if s.source == "file" else f"{s.origin} (from {s.source})"

    def builder_settings(self) -> dict[str, dict[str, Any]]:
        """``[set.*]`` as ``RAG.open(builders=...)`` takes them (checked)."""
        self.check()
        return {b: {n: s.value for n, s in values.items()} for b, values in self.builders.items()}

    def method_settings(self, method: str) -> dict[str, Any]:
        """``[method.METHOD]`` as keyword arguments of ``RAG.query`` (checked)."""
        if method not in self.methods:
            return {}
        self.check()
        return {n: s.value for n, s in self.methods[method].items()}

    def explain(self, exc: SettingError, method: str | None = None) -> ConfigError | None:
        """``exc`` said by the setting that gave its value: ``FILE [method.METHOD] NAME``,
        ``FILE [set.STRUCTURE] NAME``, ``$PARETORAG_SET STRUCTURE.NAME`` or ``--set
        STRUCTURE.NAME`` (None: no setting of ``method`` or of a builder gave it)."""
        found = self._method_setting(exc, method) if method else None
        found = found or self._builder_setting(exc)
        if found is None:
            return None
        return ConfigError(f"{found}: must {exc.rule}, got {exc.value!r}")

    def _method_setting(self, exc: SettingError, method: str) -> str | None:
        from .retrieval.methods.base import get_method

        values = self.methods.get(method, {})
        if not values:
            return None
        try:
            m = get_method(method)
        except ConfigError:
            return None
        params = m.get_params(deep=True)
        aliases: Mapping[str, tuple[str, ...]] = getattr(type(m), "aliases", {})
        for name, s in values.items():
            if not _same(s.value, exc.value):
                continue
            for target in aliases.get(name, (name,)):
                path, _, leaf = target.rpartition("__")
                owner = params.get(path) if path else m
                if leaf == exc.name and type(owner).__name__ == exc.owner:
                    return f"{self._where(s)} [method.{method}] {name}"
        return None

    def _builder_setting(self, exc: SettingError) -> str | None:
        from .graphs.base import builder_class

        for structure, values in self.builders.items():
            try:
                owner = builder_class(structure).__name__
            except ConfigError:
                continue
            s = values.get(exc.name)
            if owner != exc.owner or s is None or not _same(s.value, exc.value):
                continue
            if s.source == "file":
                return f"{s.origin} [set.{structure}] {exc.name}"
            where = f"${s.origin}" if s.source == "env" else s.origin  # $PARETORAG_SET or --set
            return f"{where} {structure}.{exc.name}"
        return None

    def rows(self) -> list[Setting]:
        """Every effective setting, scalars first, then ``set.*`` and ``method.*``."""
        out = list(self.settings.values())
        for table in (self.builders, self.methods):
            out += [s for values in table.values() for s in values.values()]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path) if self.path else None,
            "settings": [s.to_json() for s in self.rows()],
        }


# -- the command line's configuration (one per invocation) ----------------------
_SELECTED: dict[str, Any] = {"path": None, "config": None}


def select(path: Path | None) -> None:
    """The CLI's ``--config`` of this invocation (forgets the configuration loaded before)."""
    _SELECTED.update(path=path, config=None)


def selected_path() -> Path | None:
    """The ``--config`` of this invocation (None: ``$PARETORAG_CONFIG`` or ``./paretorag.toml``)."""
    path: Path | None = _SELECTED["path"]
    return path


def explained(exc: ParetoragError, method: str | None = None) -> ParetoragError:
    """``exc`` as the command line says it: a :class:`~paretorag.errors.SettingError` whose value
    came from this invocation's file, variable or ``--set`` names them instead of a class
    (``method``: the method that answered, whose ``[method.*]`` table applied)."""
    cfg: Config | None = _SELECTED["config"]
    if isinstance(exc, SettingError) and cfg is not None:
        return cfg.explain(exc, method) or exc
    return exc


def active() -> Config:
    """The configuration of this invocation, loaded on first use."""
    if _SELECTED["config"] is None:
        _SELECTED["config"] = Config.load(_SELECTED["path"])
    cfg: Config = _SELECTED["config"]
    return cfg


__all__ = [
    "CONFIG_ENV",
    "FILENAME",
    "KEYS",
    "Config",
    "Setting",
    "active",
    "explained",
    "select",
    "selected_path",
]
