"""One RAG answers many questions at once: concurrent answers equal serial ones, usage included.

The server shares one reading RAG per index (``server.service.ReaderPool``); these tests hold
the facade to what that needs: each answer carries its own usage and trace, and threads
sharing a RAG (and its loaded view) get the answers they would get one at a time.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from paretorag import RAG
from paretorag.providers.embedders import HashEmbedder
from paretorag.retrieval.methods.base import get_method
from paretorag.types import Answer

THREADS = 8


def _key(a: Answer) -> tuple:
    return (
        a.method,
        a.text,
        a.short,
        [(c.chunk_id, round(c.score, 5)) for c in a.contexts],
        [c.to_json() for c in a.citations],
        json.dumps(a.to_json()["trace"], sort_keys=True),  # what the method recorded, as JSON
        {  # seconds vary, and the cache hits depend on which question asked first
            stage: (u["calls"], u["prompt_tokens"], u["completion_tokens"])
            for stage, u in a.usage.to_json().items()
        },
    )


def _serial_then_concurrent(rag: RAG, jobs: list[tuple[str, str]]) -> tuple[list, list]:
    serial = [_key(rag.query(q, m, k=5)) for q, m in jobs]
    with ThreadPoolExecutor(THREADS) as pool:
        together = list(pool.map(lambda job: _key(rag.query(job[0], job[1], k=5)), jobs * 2))
    return serial, together


@pytest.fixture(scope="module")
def real_index(tmp_path_factory, popqa_slice, onnx_minilm):
    docs, questions = popqa_slice
    methods = ["vanilla", "bm25", "hybrid", "entity-walk", "fusion"]
    rag = RAG.open(tmp_path_factory.mktemp("shared") / "ix", embedder=onnx_minilm, methods=methods)
    rag.index(docs)
    yield rag, [q for q, _ in questions], methods
    rag.close()


def test_threads_sharing_one_rag_get_the_serial_answers(real_index):
    """The recommended method and its neighbours, the offline reader answering, on real MiniLM + spaCy."""
    rag, questions, methods = real_index
    jobs = [(q, m) for q in questions[:8] for m in methods]
    rag.view.forget_queries()
    serial, together = _serial_then_concurrent(rag, jobs)
    assert together == serial * 2
    assert any(k[2] for k in serial)  # the reader found short answers: the comparison is not of empties


def test_each_answer_counts_only_its_own_llm_calls_when_threads_share_a_rag(tmp_path):
    """Methods that call the LLM while retrieving: each answer's usage is its own question's."""
    from tests.unified_world import documents, scripted_llm

    agents = [m for m in ("tog", "lightrag-local", "hipporag2") if get_method(m).needs_generative]
    assert agents, "no method calls the LLM at query time"
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(64), llm=scripted_llm(), methods=agents)
    rag.index(documents())
    questions = [
        "Where was Marie Curie born?",
        "Who married Marie Curie?",
        "Where is the Nobel Prize awarded?",
    ]
    jobs = [(q, m) for q in questions for m in agents]
    serial, together = _serial_then_concurrent(rag, jobs)
    assert together == serial * 2
    assert all(k[6] for k in serial), "each answer should count its retrieval's LLM calls"
    rag.close()
