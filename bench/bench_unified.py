"""LLM cost of the unified framework's methods: calls and prompt tokens to index and per query.

One fixed corpus: the first 2WikiMultihopQA passages grouped into ``--chunks`` chunks of
about 1,200 tokens (as ``bench_kg.py``), indexed once for every method with a counting
fake LLM whose answers have the formats and sizes of real ones (extraction records,
community reports of about 300 words, 100-token summaries, keyword JSON, agent choices,
map points). Tokens are counted with the index's default tokenizer (MiniLM word pieces).
These are the quantities the paper's Tables 6-8 and Figures 11-12 report in tokens; no
time is measured here (the fake answers instantly): index time and retrieval latency
come from ``paretorag eval`` with the offline defaults.

For each method: LLM calls and prompt tokens to build its structures (all of them: a
method that shares a structure with another pays for it in full), then per question
the calls and prompt tokens of retrieval (agents, keywords) and of the answer (one call,
or map-reduce: one per batch plus one). Usage::

    PYTHONPATH=src .venv/bin/python bench/bench_unified.py [--chunks 20] [--questions 10]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "2wikimultihopqa"
METHODS = [
    "vanilla",
    "raptor",
    "kgp",
    "hipporag",
    "g-retriever",
    "tog",
    "dalk",
    "fastgraphrag",
    "graphrag-local",
    "graphrag-global",
    "lightrag-local",
    "lightrag-global",
    "lightrag-hybrid",
    "vgraphrag",
    "cheaprag",
]


def _words(text: str) -> list[str]:
    return sorted({w.strip(".,()") for w in text.split() if w[:1].isupper() and len(w) > 3})


def fake_answer(req: Any) -> str:
    """Answers shaped and sized like a real model's, for every prompt the methods send."""
    last = req.messages[-1].content
    if req.task.kind == "summarize":  # RAPTOR's summaries: about 100 tokens
        return " ".join(f"{w} is discussed in the passages." for w in _words(" ".join(req.task.texts))[:12])
    if "Write a comprehensive report" in last:  # GraphRAG's report: about 300 words
        names = re.findall(r"^\d+,([^,]+),", last, re.M)[:8] or ["community"]
        findings = [
            {
                "summary": f"{n} is central",
                "explanation": f"{n} appears in several relations of this community. " * 3,
            }
            for n in names
        ]
        return json.dumps(
            {
                "title": " and ".join(names[:2]),
                "summary": "A community of related entities. " * 4,
                "rating": 6.0,
                "rating_explanation": "Moderate impact.",
                "findings": findings,
            }
        )
    if "high_level_keywords" in last:
        q = _words(last.rsplit("Query:", 1)[1])
        return json.dumps({"high_level_keywords": ["theme", "relation"], "low_level_keywords": q[:5]})
    if "numbered list of candidate" in last:
        return "2, 1, 3"
    if "---Data tables---" in last:
        return json.dumps(
            {
                "points": [
                    {"description": "The records say that the answer is in record [1]. " * 3, "score": 60}
                ]
            }
        )
    body = last.rsplit("Text:", 1)[-1].rsplit("Paragraph:", 1)[-1]
    words = _words(body)[:25]
    if last.startswith("MANY"):
        return (
            "\n".join(f'("entity"<|>"{w}X"<|>"EVENT"<|>"{w}X is mentioned once.")##' for w in words[:4])
            + "<|COMPLETE|>"
        )
    if "RDF" in last:
        return json.dumps(
            {"triples": [[words[i], "is related to", words[i + 1]] for i in range(min(20, len(words) - 1))]}
        )
    if "named entities" in last:
        return json.dumps({"named_entities": words[:20]})
    if last.startswith("-Goal-"):
        ents = [
            f'("entity"<|>"{w}"<|>"PERSON"<|>"{w} is a person mentioned in the text, who did several things.")'
            for w in words[:15]
        ]
        kw = '<|>"link, theme"' if "relationship_keywords" in last else ""
        rels = [
            f'("relationship"<|>"{words[i]}"<|>"{words[i + 1]}"<|>"{words[i]} and {words[i + 1]} appear together."{kw}<|>7)'
            for i in range(min(12, len(words) - 1))
        ]
        return "##\n".join(ents + rels) + "<|COMPLETE|>"
    if "comprehensive summary" in last:
        return "A merged description of the entity. " * 10
    return "The answer is given in the passages [1]. " * 4  # an answer: about 40 tokens


def corpus(n_chunks: int, tokenizer: Any) -> list[tuple[str, str]]:
    records = json.loads((DATA / "2wikimultihopqa_corpus.json").read_text(encoding="utf-8"))
    chunks: list[tuple[str, str]] = []
    cur: list[str] = []
    size = 0
    for r in records:
        text = f"{r['title']}\n{r['text']}"
        cur.append(text)
        size += tokenizer.count([text])[0]
        if size >= 1200:
            chunks.append((f"chunk {len(chunks)}", "\n\n".join(cur)))
            cur, size = [], 0
            if len(chunks) == n_chunks:
                break
    return chunks


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--questions", type=int, default=10)
    args = p.parse_args()

    from paretorag import RAG
    from paretorag.eval.cost import method_index_cost
    from paretorag.ingest.files import make_document
    from paretorag.providers.llm import FakeLLM

    questions = [q["question"] for q in json.loads((DATA / "2wikimultihopqa_dev164.json").read_text())][
        : args.questions
    ]
    with tempfile.TemporaryDirectory() as tmp:
        rag = RAG.open(Path(tmp) / "ix", llm=FakeLLM(fake_answer, name="counting-fake"), methods=METHODS)
        chunks = corpus(args.chunks, rag.tokenizer)
        docs = [make_document(t, x, "2wiki", presplit=True) for t, x in chunks]
        rag.index(docs)
        stats = rag.stats()
        n_tokens = sum(rag.tokenizer.count([x for _, x in chunks]))
        out: dict[str, Any] = {
            "chunks": len(chunks),
            "corpus_tokens": n_tokens,
            "questions": len(questions),
            "methods": {},
        }
        for method in METHODS:
            cost = method_index_cost(method, stats, {})
            retrieval = {"calls": 0, "prompt_tokens": 0}
            answer = {"calls": 0, "prompt_tokens": 0}
            for q in questions:
                ans = rag.query(q, method=method)
                for stage, u in ans.usage.stages.items():
                    side = answer if stage == "query.answer" else retrieval
                    side["calls"] += u.calls
                    side["prompt_tokens"] += u.prompt_tokens
            nq = max(1, len(questions))
            out["methods"][method] = {
                "index_calls": cost["llm_calls"],
                "index_prompt_tokens": cost["prompt_tokens"],
                "index_calls_per_chunk": round(cost["llm_calls"] / len(chunks), 2),
                "retrieval_calls_per_query": round(retrieval["calls"] / nq, 2),
                "retrieval_prompt_tokens_per_query": round(retrieval["prompt_tokens"] / nq),
                "answer_calls_per_query": round(answer["calls"] / nq, 2),
                "answer_prompt_tokens_per_query": round(answer["prompt_tokens"] / nq),
            }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
