"""The offline reader's sentence spans stored at index time (graphs.reader_spans)."""

from __future__ import annotations

import json

import pytest

from paretorag import RAG
from paretorag.answering.reader.stored import stored_spans
from paretorag.graphs.reader_spans import READ_SENTENCES
from paretorag.indexing import plan
from paretorag.ingest.files import make_document
from paretorag.providers import sentence_spans
from paretorag.textutil import reading_sentences

from ..conftest import DATA

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def docs(popqa_slice):
    """Eight short PopQA paragraphs and the start of a QuALITY story (chunks of many sentences)."""
    story = json.loads((DATA / "quality" / "quality.jsonl").read_text().splitlines()[0])["input"]
    long = make_document("The Tr'en", story[:9000], "quality")
    return [*popqa_slice[0][:8], long]


@pytest.fixture
def parsed(monkeypatch):
    """The sentences spaCy parses at query time (the parse memo emptied first)."""
    seen: list[str] = []
    real = sentence_spans.parse

    def counting(sentences, **kw):
        seen.extend(sentences)
        return real(sentences, **kw)

    sentence_spans._CACHE.clear()
    monkeypatch.setattr(sentence_spans, "parse", counting)
    return seen


def _answers(rag: RAG, questions: list[str]) -> list[tuple[str, float]]:
    out = []
    for q in questions:
        a = rag.query(q, k=3, reader="reader")
        out.append((a.text, round(float(a.confidence or 0.0), 9)))
    return out


def test_stored_spans_equal_the_query_time_parse(tmp_path, minilm, docs):
    rag = RAG.open(tmp_path / "ix", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(docs)
    stored = stored_spans(rag.view)
    assert stored is not None and len(stored) == len(rag.view.chunks)
    many = 0
    for row, text in enumerate(rag.view.chunks.texts):
        sents, spans = stored.chunk(row)
        every = reading_sentences(text)
        assert sents == every[:READ_SENTENCES]
        assert spans == sentence_spans.parse(sents)
        many += len(every) > READ_SENTENCES
    assert many  # some chunks have more sentences than stored


def test_a_query_parses_no_passage_sentence(tmp_path, minilm, docs, parsed):
    rag = RAG.open(tmp_path / "ix", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(docs)
    parsed.clear()  # the build's parse
    question = "Why did the Tr'en leave Korvin's door unlocked?"
    a = rag.query(question, k=5, reader="reader")
    assert len(a.contexts) == 5
    # nothing: not the passages' sentences, nor the question, whose capitalized words are all
    # entity spans stored in the index (reader.question.known_entities)
    assert parsed == []
    parsed.clear()
    sentence_spans._CACHE.clear()
    rag.use_stored_spans = False
    b = rag.query(question, k=5, reader="reader")
    assert len(parsed) > 5  # the old path parses the passages' sentences
    assert (a.text, a.confidence, a.evidence) == (b.text, b.confidence, b.evidence)


def test_insert_and_delete_keep_the_stored_spans_in_step(tmp_path, minilm, docs):
    a, b = docs[:5], docs[5:]
    only_a = RAG.open(tmp_path / "a", embedder=minilm, chunk_size=200, chunk_overlap=20)
    only_a.index(a)
    rag = RAG.open(tmp_path / "ab", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(a)
    rag.insert(b)
    info = rag.manifest.structures["reader_spans"]
    n_a = len(only_a.view.chunks)
    assert info["chunks_parsed"] == len(rag.view.chunks) - n_a  # the new chunks only
    stored = stored_spans(rag.view)
    assert stored is not None and len(stored) == len(rag.view.chunks)
    row = len(rag.view.chunks) - 1
    assert stored.chunk(row)[0] == reading_sentences(rag.view.chunks.texts[row])[:READ_SENTENCES]
    rag.delete([d.doc_id for d in b])
    assert rag.manifest.structures["reader_spans"]["chunks_parsed"] == 0
    after, before = stored_spans(rag.view), stored_spans(only_a.view)
    assert after is not None and before is not None
    assert [after.chunk(r) for r in range(len(after))] == [before.chunk(r) for r in range(len(before))]


def test_an_index_without_stored_spans_still_answers(tmp_path, minilm, docs, monkeypatch):
    questions = [
        "Why did the Tr'en leave Korvin's door unlocked?",
        "Who is Korvin?",
        "What is the occupation?",
    ]
    rag = RAG.open(tmp_path / "new", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(docs)
    expected = _answers(rag, questions)
    monkeypatch.setattr(plan, "OFFLINE_ANSWERERS", ())  # as built before the structure existed
    old = RAG.open(tmp_path / "old", embedder=minilm, chunk_size=200, chunk_overlap=20)
    old.index(docs)
    assert "reader_spans" not in old.manifest.structures
    assert stored_spans(old.view) is None
    assert _answers(old, questions) == expected


def test_the_reader_without_its_span_model_answers_by_its_own_name(tmp_path, minilm, docs):
    """``reader="reader-nospan"``: the same reader with the span model off (one eval run can hold both)."""
    rag = RAG.open(tmp_path / "ix", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(docs)
    question = "Who is the captain of the ship?"
    plain = rag.query(question, k=3, reader="reader-nospan")
    full = rag.query(question, k=3, reader="reader")
    assert plain.answered_by == "reader-nospan" and full.answered_by == "reader"
    assert rag._nospan_reader is not None and rag._nospan_reader.span_mode == "off"
    assert rag._nospan_reader._span_model is None  # never loaded
    assert rag._offline_reader is not None and rag._offline_reader.span_mode == "compare"
    assert plain.found is not None and full.found is not None


def test_the_second_hop_asks_the_same_method_again_and_shows_it_in_the_trace(tmp_path, minilm, docs):
    """``reader``: a span answer retrieves once more with the question and that answer; ``reader-onehop``
    reads once. The hop is in the trace, and a taken hop cites the passages it added."""
    rag = RAG.open(tmp_path / "ix", embedder=minilm, chunk_size=200, chunk_overlap=20)
    rag.index(docs)
    question = "Who is the captain of the ship?"
    one = rag.query(question, k=2, reader="reader-onehop")
    two = rag.query(question, k=2, reader="reader")
    assert one.answered_by == "reader-onehop" and "second_hop" not in one.trace
    hop = two.trace["second_hop"]
    first = one.short or ""
    assert hop["query"].startswith(question + " ") and hop["bridge"] and hop["query"].endswith(hop["bridge"])
    assert first == "" or hop["bridge"] == first
    assert 0 <= hop["new_passages"] <= 3 and hop["confidence"][0] == round(float(one.confidence or 0.0), 4)
    assert two.timings["second_hop"] > 0.0 and "second_hop" not in one.timings
    if hop["taken"]:
        assert len(two.contexts) == len(one.contexts) + hop["new_passages"]
        assert (two.confidence or 0.0) > (one.confidence or 0.0)
    else:
        assert [c.chunk_id for c in two.contexts] == [c.chunk_id for c in one.contexts]
        assert two.short == one.short
