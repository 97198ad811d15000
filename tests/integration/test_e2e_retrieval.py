"""End to end with the real MiniLM model on a slice of ../shared/data (PopQA)."""

from __future__ import annotations

from paretorag import RAG


def test_gold_passages_retrieved_for_simple_questions(tmp_path, minilm, popqa_slice):
    docs, questions = popqa_slice
    rag = RAG.open(tmp_path / "ix", embedder=minilm, methods=["vanilla"])
    report = rag.index(docs)
    assert report.added == len(docs) and rag.manifest.counts["chunks"] == len(docs)
    hits = 0
    for q, gold in questions:
        ans = rag.query(q, method="vanilla", k=5)
        got = {c.doc_id for c in ans.contexts}
        hits += bool(got & set(gold))
        assert len(ans.contexts) == 5
        assert ans.answered_by == "reader" and ans.usage.llm_calls == 0  # the reader calls no LLM
        assert ans.timings["total"] >= ans.timings["retrieval"]
        assert all(c.doc_id in {d.doc_id for d in docs} for c in ans.contexts)
    # PopQA questions name their subject: dense retrieval should find a gold passage almost always
    assert hits >= 18, f"gold passage in top-5 for only {hits}/20 questions"
    # re-indexing the same documents is a no-op
    again = rag.index(docs)
    assert again.added == 0 and again.unchanged == len(docs) and not again.committed


def test_answer_cites_retrieved_passage(tmp_path, minilm):
    src = tmp_path / "src"
    src.mkdir()
    (src / "rivers.md").write_text(
        "# Rivers\n\nThe Danube flows through Vienna and Budapest. It is 2,850 km long.\n"
    )
    (src / "peaks.txt").write_text("Mount Elbrus is the highest peak in Europe. It rises to 5,642 metres.")
    rag = RAG.open(tmp_path / "ix", embedder=minilm)
    rag.index([src])
    ans = rag.query("How long is the Danube?", k=2)
    assert "2,850" in ans.text
    assert ans.citations and ans.citations[0].title == "rivers"
    assert ans.contexts[0].title == "rivers"
