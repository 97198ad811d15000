"""Estimator-like settings (scikit-learn's conventions), shared by operators, methods and builders.

A class with settings takes them as keyword-only ``__init__`` parameters, stores each
unchanged under the same name and validates it on first use. ``get_params`` /
``set_params`` / ``clone`` come from :class:`Params`; nested settings are addressed as
``name__param`` (``Pipeline.set_params(spread__damping=0.85)``).
"""

from __future__ import annotations

import copy
import inspect
import math
from typing import Any, TypeVar

from .errors import ConfigError, SettingError

T = TypeVar("T", bound="Params")


class Params:
    """Keyword settings with ``get_params`` / ``set_params`` / ``clone``.

    Subclasses declare their settings as keyword-only ``__init__`` parameters and
    store each unchanged on ``self`` under the same name.
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Settings as a dict (``deep`` adds ``name__param`` entries of nested Params)."""
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and isinstance(value, Params):
                for sub, v in value.get_params(deep=True).items():
                    out[f"{name}__{sub}"] = v
        return out

    def set_params(self: T, **params: Any) -> T:
        """Change settings in place; ``name__param`` reaches into nested Params."""
        valid = set(self._param_names())
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, _, rest = key.partition("__")
            if head not in valid:
                raise ConfigError(
                    f"{type(self).__name__} has no setting {head!r}; valid settings: {sorted(valid)}"
                )
            if rest:
                nested.setdefault(head, {})[rest] = value
            else:
                setattr(self, head, value)
        for head, sub in nested.items():
            target = getattr(self, head)
            if not isinstance(target, Params):
                raise ConfigError(f"{type(self).__name__}.{head} has no nested settings")
            target.set_params(**sub)
        return self

    def clone(self: T) -> T:
        """A fresh copy with the same settings."""
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        """Same class and same settings (compared shallowly; nested Params by their own ``==``)."""
        if not isinstance(other, Params) or type(other) is not type(self):
            return NotImplemented
        return self.get_params(deep=False) == other.get_params(deep=False)

    __hash__ = None  # type: ignore[assignment]  # settings are mutable

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"


def check_positive_int(owner: object, name: str, value: object) -> int:
    """Validate a positive integer setting, naming the owner in the error."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingError(type(owner).__name__, name, value, "be a positive integer")
    return value


def check_k(owner: object, name: str, value: object) -> int | None:
    """Validate an optional top-k setting: a positive integer, or ``None`` for all."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingError(type(owner).__name__, name, value, "be a positive integer or None (all)")
    return value


def check_fraction(owner: object, name: str, value: object, *, closed: bool = True) -> float:
    """Validate a setting in [0, 1]."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise SettingError(type(owner).__name__, name, value, "be a number")
    v = float(value)
    if not (0.0 <= v <= 1.0) or (not closed and v in (0.0, 1.0)):
        raise SettingError(type(owner).__name__, name, value, "lie in [0, 1]")
    return v


def check_nonneg_number(owner: object, name: str, value: object, hint: str = "") -> float:
    """Validate a finite number >= 0 (weights, exponents); ``hint`` names the default."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        extra = f" ({hint})" if hint else ""
        raise SettingError(type(owner).__name__, name, value, f"be a number >= 0{extra}")
    return float(value)


def check_nonneg_int(owner: object, name: str, value: object) -> int:
    """Validate a non-negative integer setting (hops, depths), naming the owner in the error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingError(type(owner).__name__, name, value, "be a non-negative integer")
    return value
