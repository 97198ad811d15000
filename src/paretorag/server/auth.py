"""API keys: read-only and read-write, from ``PARETORAG_API_KEYS`` or a key file.

A key is sent as ``Authorization: Bearer KEY`` (or ``X-API-Key: KEY``). Keys are kept
only as SHA-256 digests and compared in constant time (:func:`hmac.compare_digest`
against every known key, so neither the match position nor the key length leaks through
timing). Keys are never logged.

Format, in the variable (comma-separated) and in the file (one per line, ``#`` comments):
``KEY`` or ``rw:KEY`` is read-write, ``ro:KEY`` is read-only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

ENV_VAR = "PARETORAG_API_KEYS"
MIN_KEY_CHARS = 16
READ = "read"
WRITE = "write"
_KEYGEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_keys(entries: Iterable[str], where: str) -> list[tuple[str, str]]:
    """``(role, key)`` pairs from ``KEY`` / ``rw:KEY`` / ``ro:KEY`` entries (blank ones skipped)."""
    out: list[tuple[str, str]] = []
    for n, raw in enumerate(entries, start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        role = WRITE
        prefix, colon, rest = entry.partition(":")
        if colon and prefix in ("ro", "rw"):
            role, entry = (READ if prefix == "ro" else WRITE), rest.strip()
        if not _encodable(entry):  # a variable's bytes that are not UTF-8 (the key is never shown)
            raise ConfigError(f"API key #{n} in {where} is not UTF-8 text; generate one with {_KEYGEN}")
        if len(entry) < MIN_KEY_CHARS or any(c.isspace() for c in entry):
            raise ConfigError(
                f"API key #{n} in {where} is shorter than {MIN_KEY_CHARS} characters or holds spaces; "
                f"generate one with {_KEYGEN}"
            )
        out.append((role, entry))
    return out


@dataclass
class KeyRing:
    """Known keys (as digests) and their roles; empty means the server runs without auth."""

    digests: list[tuple[bytes, str]] = field(default_factory=list)

    @classmethod
    def load(cls, key_file: Path | None = None, environ: dict[str, str] | None = None) -> KeyRing:
        env = os.environ if environ is None else environ
        pairs = parse_keys(env.get(ENV_VAR, "").split(","), f"${ENV_VAR}")
        if key_file is not None:
            try:
                lines = key_file.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ConfigError(
                    f"--api-key-file {key_file}: cannot read it ({exc.strerror}); check the path"
                ) from None
            except UnicodeDecodeError as exc:  # names the line only: its bytes may be a key
                line = exc.object[: exc.start].count(b"\n") + 1
                raise ConfigError(
                    f"--api-key-file {key_file} is not UTF-8 text (line {line}); save it as UTF-8"
                ) from None
            file_pairs = parse_keys(lines, str(key_file))
            if not file_pairs:
                raise ConfigError(
                    f"--api-key-file {key_file} holds no key; add one per line (ro:KEY for read-only)"
                )
            pairs += file_pairs
        return cls.from_pairs(pairs)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> KeyRing:
        return cls([(_digest(key), role) for role, key in pairs])

    def __bool__(self) -> bool:
        return bool(self.digests)

    def role(self, key: str) -> str | None:
        """The role of ``key``, or None; every known key is compared, in constant time."""
        given = _digest(key)
        found: str | None = None
        for digest, role in self.digests:
            if hmac.compare_digest(given, digest) and found != WRITE:
                found = role
        return found


def key_from_headers(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request sends: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    return None
