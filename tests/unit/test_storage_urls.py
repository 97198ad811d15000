"""``--index postgresql://...``: the URL split into connection and schema, and never printed
with its password."""

from __future__ import annotations

import pytest

from paretorag.errors import ConfigError
from paretorag.storage.backend import FolderBackend, open_backend
from paretorag.storage.database import is_url, pg_sql, redact
from paretorag.storage.postgres import PostgresBackend, Target


def test_redact_hides_the_password_wherever_the_url_carries_it():
    assert redact("postgresql://me:s3cret@db:5432/rag?schema=a") == "postgresql://me:***@db:5432/rag?schema=a"
    assert redact("postgres://me@db/rag?sslmode=require&password=s3cret") == (
        "postgres://me@db/rag?sslmode=require&password=***"
    )
    assert redact("postgresql://db/rag") == "postgresql://db/rag"


def test_target_takes_the_schema_out_of_the_connection_string():
    t = Target.parse("postgresql://me:s3cret@db/rag?schema=Docs_2&sslmode=require")
    assert t.schema == "docs_2"
    assert "schema" not in t.conninfo and "sslmode=require" in t.conninfo and "s3cret" in t.conninfo
    assert "s3cret" not in t.location
    assert Target.parse("postgresql://db/rag").schema == "public"
    for bad in ("a;drop", "1abc", "x-y"):
        with pytest.raises(ConfigError, match="letters, digits and _"):
            Target.parse(f"postgresql://db/rag?schema={bad}")


def test_open_backend_picks_by_what_index_names(tmp_path):
    assert is_url("postgresql://db/rag") and is_url("postgres://db/rag") and not is_url(str(tmp_path))
    assert isinstance(open_backend(tmp_path / "ix"), FolderBackend)
    assert isinstance(open_backend("postgresql://db/rag"), PostgresBackend)  # connects on first use


def test_pg_sql_turns_placeholders_and_escapes_percent():
    assert (
        pg_sql("SELECT a FROM t WHERE b=? AND c LIKE '5%'") == "SELECT a FROM t WHERE b=%s AND c LIKE '5%%'"
    )
