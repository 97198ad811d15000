"""Bad input gets a clear error naming the file or argument, and nothing indexed is lost."""

from __future__ import annotations

import json

import pytest

from paretorag import RAG
from paretorag.errors import IndexFormatError, InputError, LLMError, QuestionError
from paretorag.ingest.files import read_paths
from paretorag.providers.embedders import HashEmbedder
from paretorag.providers.llm import OpenAILLM

from ..llm_server import scripted_server


def _open(path):
    return RAG.open(path, embedder=HashEmbedder(32))


def test_bad_files_are_reported_and_the_rest_indexed(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.txt").write_text("Lisbon is the capital of Portugal.")
    (src / "empty.md").write_text("   \n")
    (src / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (src / "latin1.txt").write_bytes("Caf\xe9 au lait is served in Paris.".encode("latin-1"))
    (src / "bad.json").write_text("{not json")
    (src / "norecords.json").write_text('[{"title": "x"}]')
    unsupported = tmp_path / "image.png"
    unsupported.write_bytes(b"\x89PNG")
    docs, problems = read_paths([src, unsupported, tmp_path / "missing.md"])
    msgs = {p.path.split("/")[-1]: p for p in problems}
    assert "is empty" in msgs["empty.md"].message
    assert "binary" in msgs["blob.txt"].message
    assert "read as" in msgs["latin1.txt"].message and not msgs["latin1.txt"].skipped
    assert "not valid JSON" in msgs["bad.json"].message
    assert "no non-empty" in msgs["norecords.json#0"].message
    assert "unsupported extension .png" in msgs["image.png"].message
    assert "does not exist" in msgs["missing.md"].message
    titles = sorted(d.title for d in docs)
    assert titles == ["good", "latin1"]
    assert next(d.text for d in docs if d.title == "latin1") == "Café au lait is served in Paris."

    rag = _open(tmp_path / "ix")
    report = rag.index([src, unsupported])
    assert report.added == 2 and len(report.problems) >= 6


def test_nothing_usable_raises_and_keeps_the_index(tmp_path):
    rag = _open(tmp_path / "ix")
    good = tmp_path / "good.txt"
    good.write_text("Oslo is the capital of Norway.")
    rag.index([good])
    empty_dir = tmp_path / "emptydir"
    empty_dir.mkdir()
    (empty_dir / "notes.bin").write_bytes(b"\x00")
    with pytest.raises(InputError, match="has no usable file"):
        rag.index([empty_dir])
    with pytest.raises(InputError, match="is empty"):
        (tmp_path / "e.txt").write_text("")
        rag.index([tmp_path / "e.txt"])
    assert rag.manifest.counts["documents"] == 1
    assert rag.query("Norway", context_only=True).contexts[0].title == "good"


def test_questions_empty_or_huge(tmp_path):
    rag = _open(tmp_path / "ix")
    (tmp_path / "a.txt").write_text("Some text.")
    rag.index([tmp_path / "a.txt"])
    with pytest.raises(QuestionError, match="empty"):
        rag.query("")
    with pytest.raises(QuestionError, match="102400 characters"):
        rag.query("x" * 102_400)


def test_newer_format_version_is_refused(tmp_path):
    rag = _open(tmp_path / "ix")
    rag.close()
    m = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    m["format_version"] = 99
    (tmp_path / "ix" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="newer paretorag"):
        _open(tmp_path / "ix")


def test_not_an_index_directory(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "x.txt").write_text("hi")
    with pytest.raises(IndexFormatError, match="not an index"):
        _open(tmp_path / "stuff")


def test_llm_down_garbage_and_timeout_through_query(tmp_path):
    (tmp_path / "a.txt").write_text("Quito is the capital of Ecuador.")
    rag = _open(tmp_path / "ix")
    rag.index([tmp_path / "a.txt"])
    rag._llm = OpenAILLM("m", base_url="http://127.0.0.1:9/v1", backoff=0.01, max_retries=1)
    with pytest.raises(LLMError, match="is the server running"):
        rag.query("capital of Ecuador?")
    with scripted_server([(200, b"garbage", 0)]) as (url, _):
        rag._llm = OpenAILLM("m", base_url=url, backoff=0.01, max_retries=1)
        with pytest.raises(LLMError, match="not JSON"):
            rag.query("capital of Ecuador?")
    # the index is intact and retrieval still works
    assert rag.query("capital of Ecuador?", context_only=True).contexts[0].title == "a"


def test_an_index_configured_for_an_unknown_method_names_the_fix(tmp_path) -> None:
    """A method the index was configured for that this version lacks (a removed preset, or
    an index written by a newer version) fails with the way out, and replace_methods takes it."""
    from paretorag.errors import ConfigError
    from paretorag.storage.manifest import Manifest

    ix = tmp_path / "ix"
    RAG.open(ix, methods=["vanilla"], embedder="hash").close()
    m = Manifest.load(ix)
    m.config.methods.append("no-such-method")
    m.save(ix)
    with pytest.raises(ConfigError, match=r"'no-such-method'.*--replace-methods"):
        RAG.open(ix, methods=["bm25"])
    with RAG.open(ix, methods=["vanilla", "bm25"], replace_methods=True) as rag:
        assert rag.manifest.config.methods == ["vanilla", "bm25"]
    assert Manifest.load(ix).config.methods == ["vanilla", "bm25"]
