from __future__ import annotations

import itertools

import pytest

from paretorag.errors import ConfigError
from paretorag.ingest.chunking import chunk_document
from paretorag.ingest.files import make_document
from paretorag.textutil import sentence_spans

SENT = "The quick brown fox number {i} jumps over the lazy dog near the river bank. "


def _doc(n: int = 60):
    return make_document("t", "".join(SENT.format(i=i) for i in range(n)).strip(), "mem")


def test_chunks_respect_size_offsets_and_sentences(minilm):
    doc = _doc(60)
    chunks = chunk_document(doc, minilm.tokenizer, size=100, overlap=20)
    assert len(chunks) > 5
    starts = {a for a, _ in sentence_spans(doc.text)}
    ends = {b for _, b in sentence_spans(doc.text)}
    for order, c in enumerate(chunks):
        assert c.order == order
        assert c.chunk_id == f"{doc.doc_id}#{order}"
        assert doc.text[c.start : c.end] == c.text
        assert c.start in starts and c.end in ends  # never cut inside a sentence
        assert minilm.tokenizer.count([c.text])[0] == c.n_tokens <= 100
    # consecutive chunks overlap by at most `overlap` tokens, and cover the text
    for a, b in itertools.pairwise(chunks):
        assert b.start <= a.end
        if b.start < a.end:
            assert minilm.tokenizer.count([doc.text[b.start : a.end]])[0] <= 20
        assert b.start > a.start
    assert chunks[0].start == 0 and chunks[-1].end == len(doc.text)


def test_overlap_is_used_when_it_fits(minilm):
    chunks = chunk_document(_doc(30), minilm.tokenizer, size=100, overlap=40)
    assert any(b.start < a.end for a, b in itertools.pairwise(chunks))


def test_long_sentence_is_cut_at_word_boundaries(minilm):
    words = " ".join(f"word{i}" for i in range(700))
    doc = make_document("long", words, "mem")
    chunks = chunk_document(doc, minilm.tokenizer, size=120, overlap=0)
    assert len(chunks) > 3
    for c in chunks:
        assert minilm.tokenizer.count([c.text])[0] <= 120
        assert c.text.split()[0].startswith("word")  # starts at a word
    assert " ".join(c.text for c in chunks).split() == words.split()


def test_presplit_passages_are_kept(minilm):
    doc = make_document("p", _doc(40).text, "corpus.json#0", presplit=True)
    chunks = chunk_document(doc, minilm.tokenizer, size=50, overlap=10)
    assert len(chunks) == 1 and chunks[0].text == doc.text


def test_bad_settings(minilm):
    with pytest.raises(ConfigError, match="overlap"):
        chunk_document(_doc(3), minilm.tokenizer, size=10, overlap=10)


class _Recording:
    """A tokenizer that records the longest text it was given (memory is bounded by it)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.longest = 0

    def count(self, texts):
        self.longest = max([self.longest, *(len(t) for t in texts)])
        return self.inner.count(texts)

    def offsets(self, text):
        self.longest = max(self.longest, len(text))
        return self.inner.offsets(text)


def _check_cover(doc, chunks, tokenizer, size):
    assert chunks[0].start == 0 and chunks[-1].end == len(doc.text)
    for a, b in itertools.pairwise(chunks):
        assert b.start > a.start and not doc.text[a.end : b.start].strip()  # no text is lost
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text and c.n_tokens <= size


def test_unpunctuated_megabytes_are_cut_at_the_token_limit_in_bounded_pieces():
    from paretorag.providers.embedders import RegexTokenizer

    words = [f"w{i % 997}x" for i in range(600_000)]  # ~3.5 MB, one "sentence"
    doc = make_document("flat", " ".join(words), "mem")
    tok = _Recording(RegexTokenizer())
    chunks = chunk_document(doc, tok, size=1200, overlap=100)
    _check_cover(doc, chunks, tok.inner, 1200)
    assert len(chunks) == pytest.approx(600_000 / 1200, rel=0.01)  # full windows, not tiny pieces
    assert tok.longest <= 40_000  # never the whole text at once
    assert " ".join(c.text for c in chunks).split() == words


def test_text_without_any_word_boundary_is_cut_hard(minilm):
    text = "汉字" * 10_000  # 20,000 tokens and no space: no word boundary to cut at
    doc = make_document("blob", text, "mem")
    chunks = chunk_document(doc, minilm.tokenizer, size=200, overlap=20)
    assert len(chunks) > 1
    _check_cover(doc, chunks, minilm.tokenizer, 200)
    assert "".join(c.text for c in chunks) == text
    for c in chunks:
        assert minilm.tokenizer.count([c.text])[0] == c.n_tokens


def test_long_runs_of_initials_split_in_linear_time():
    # each "A." looks like an abbreviation: the splitter used to rescan the growing sentence
    text = "A. " * 150_000 + "End of it. Next sentence here."
    spans = sentence_spans(text)
    assert len(spans) == 2 and text[spans[-1][0] : spans[-1][1]] == "Next sentence here."


def test_minilm_unpunctuated_text_uses_bounded_tokenizer_calls(minilm):
    words = " ".join(f"token{i % 50} value" for i in range(40_000))
    doc = make_document("flat", words, "mem")
    tok = _Recording(minilm.tokenizer)
    chunks = chunk_document(doc, tok, size=300, overlap=30)
    _check_cover(doc, chunks, minilm.tokenizer, 300)
    assert tok.longest <= 40_000
    assert sum(c.n_tokens for c in chunks) == minilm.tokenizer.count([words])[0]


def test_a_small_chunk_size_alone_gets_an_overlap_that_fits(tmp_path):
    from paretorag.indexing.settings import OpenSettings
    from paretorag.storage.manifest import IndexConfig, Manifest

    m = Manifest(IndexConfig())
    OpenSettings(chunk_size=40).apply(tmp_path, m)  # the default overlap, 100, would not fit
    assert (m.config.chunk_size, m.config.chunk_overlap) == (40, 3)
    m.config.validate()
    m = Manifest(IndexConfig())
    OpenSettings(chunk_size=600).apply(tmp_path, m)  # the default fits: kept
    assert (m.config.chunk_size, m.config.chunk_overlap) == (600, 100)
    m = Manifest(IndexConfig())
    OpenSettings(chunk_size=40, chunk_overlap=39).apply(tmp_path, m)  # given: kept as given
    assert m.config.chunk_overlap == 39


def _sectioned(n_sections: int = 4, sentences: int = 12) -> str:
    parts = []
    for s in range(n_sections):
        parts.append(f"## Part {s}\n\n")
        for p in range(2):
            parts.append(
                " ".join(SENT.format(i=f"{s}.{p}.{i}") for i in range(sentences // 2)).strip() + "\n\n"
            )
    return "# Report\n\n" + "".join(parts).strip()


def test_section_chunks_start_at_headings_without_overlap(minilm):
    doc = make_document("Report", _sectioned(), "mem.md")
    chunks = chunk_document(doc, minilm.tokenizer, size=300, overlap=40, by="sections")
    heads = [doc.text.index(f"## Part {s}") for s in range(4)]
    # the title heading is too small alone: it joins the first part; every other part starts a chunk
    assert [c.start for c in chunks] == [0, *heads[1:]]
    for a, b in itertools.pairwise(chunks):
        assert a.end <= b.start  # no overlap across a section's start
    by_sentences = chunk_document(doc, minilm.tokenizer, size=300, overlap=40, by="sentences")
    assert [c.start for c in by_sentences] != [c.start for c in chunks]


def test_a_long_section_is_cut_at_a_paragraph_with_overlap_inside_it(minilm):
    text = "\n\n".join(" ".join(SENT.format(i=f"{p}.{i}") for i in range(5)) for p in range(6))
    doc = make_document("long", "## Only\n\n" + text, "mem.md")
    chunks = chunk_document(doc, minilm.tokenizer, size=200, overlap=30, by="sections")
    assert len(chunks) > 2
    for c in chunks[:-1]:  # each ends where a paragraph ends
        assert doc.text[c.end :].lstrip(" ").startswith("\n\n")
    assert all(c.n_tokens <= 200 for c in chunks)
    assert all(b.start < a.end for a, b in itertools.pairwise(chunks))  # overlap inside the section


def test_unknown_chunking_is_a_clear_error(minilm):
    with pytest.raises(ConfigError, match="chunking must be one of sections, sentences"):
        chunk_document(_doc(5), minilm.tokenizer, by="pages")
