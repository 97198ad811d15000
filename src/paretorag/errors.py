"""All exceptions raised by paretorag, in one tree.

::

    ParetoragError
    ├── ConfigError            a setting or argument is invalid (names it and the fix)
    │   └── SettingError       a setting of an operator, method or builder (its class and rule)
    ├── InputError             a file, directory or question cannot be used
    │   └── QuestionError      an empty or oversized question
    ├── IndexFormatError       an index directory is missing, empty, damaged or too new
    │   └── DamagedIndexError  a file the manifest names is missing or unreadable: `paretorag repair`
    ├── IndexLockedError       another process is writing the index (names its pid)
    ├── StorageError           the disk is full, read-only or refuses a write (names the file)
    ├── MissingStructureError  a method needs a structure the index has not built
    ├── MissingDependencyError an optional extra is not installed
    └── ProviderError          an embedder or LLM backend failed
        ├── LLMError
        │   ├── LLMTimeoutError
        │   └── LLMResponseError   the server answered garbage
        └── EmbedderError

Empty retrieval is never an error: it is an empty result.
"""

from __future__ import annotations


class ParetoragError(Exception):
    """Base class of every paretorag error."""


class ConfigError(ParetoragError, ValueError):
    """A setting or argument has an invalid value."""


class SettingError(ConfigError):
    """A setting of an operator, method or builder has an invalid value.

    The message names the class (``ChunkVDB.k must be a positive integer, got 'abc'``), as the
    Python API sets it; ``owner``, ``name``, ``value`` and ``rule`` (``"be a positive integer"``)
    let the command line and the configuration file say it in their own terms instead (the
    file, table and key, the variable or the flag that gave the value).
    """

    def __init__(self, owner: str, name: str, value: object, rule: str) -> None:
        super().__init__(f"{owner}.{name} must {rule}, got {value!r}")
        self.owner = owner
        self.name = name
        self.value = value
        self.rule = rule

    def __reduce__(self) -> tuple[type[SettingError], tuple[str, str, object, str]]:
        return (type(self), (self.owner, self.name, self.value, self.rule))


class InputError(ParetoragError, ValueError):
    """An input file, directory or text cannot be used."""


class QuestionError(InputError):
    """A question is empty or too long."""


class IndexFormatError(ParetoragError):
    """An index directory is missing, empty, damaged or written by a newer version."""


class DamagedIndexError(IndexFormatError):
    """A file of the index is missing or unreadable; ``paretorag repair`` rebuilds it."""


class IndexLockedError(ParetoragError):
    """Another process holds the index's writer lock (``--no-wait``, or the wait timed out)."""


class StorageError(ParetoragError):
    """A file of the index cannot be written: disk full, read-only file system, permission denied."""


class MissingStructureError(ParetoragError):
    """A method requires a structure that the index has not built."""


class MissingDependencyError(ParetoragError, ImportError):
    """An optional dependency (an extra) is not installed."""


class ProviderError(ParetoragError):
    """An embedder or LLM backend failed."""


class LLMError(ProviderError):
    """An LLM backend failed (server down, refused, exhausted retries)."""


class LLMTimeoutError(LLMError):
    """An LLM call timed out after every retry."""


class LLMResponseError(LLMError):
    """An LLM server answered with something that is not a valid completion."""


class EmbedderError(ProviderError):
    """An embedding backend failed."""


__all__ = [
    "ConfigError",
    "DamagedIndexError",
    "EmbedderError",
    "IndexFormatError",
    "IndexLockedError",
    "InputError",
    "LLMError",
    "LLMResponseError",
    "LLMTimeoutError",
    "MissingDependencyError",
    "MissingStructureError",
    "ParetoragError",
    "ProviderError",
    "QuestionError",
    "SettingError",
    "StorageError",
]
