from __future__ import annotations

import itertools

import pytest

from paretorag.chunking import chunk_document
from paretorag.errors import ConfigError
from paretorag.ingest import make_document
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
