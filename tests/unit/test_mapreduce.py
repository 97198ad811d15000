"""Map-reduce generation (unified framework §6.3; GraphRAG global search, CheapRAG)."""

from __future__ import annotations

import json

from paretorag.answering.context import pack
from paretorag.answering.mapreduce import NO_ANSWER, batches, map_reduce, parse_points
from paretorag.providers.base import Request
from paretorag.providers.embedders import RegexTokenizer
from paretorag.providers.llm import ExtractiveLLM, FakeLLM
from paretorag.types import Budget, ContextItem

TOK = RegexTokenizer()
REPORTS = [
    "The Curie family: Marie Curie was born in Warsaw and worked in Paris.",
    "Warsaw is the capital of Poland.",
    "The Eiffel Tower stands in Paris.",
    "Stockholm hosts the Nobel Prize ceremony.",
    "Radium was discovered by the Curies.",
]


def context():
    items = [
        ContextItem(f"community:{i}", "", f"Community {i}", t, 1.0 - i / 10) for i, t in enumerate(REPORTS)
    ]
    return pack(items, Budget(), TOK)


def test_batches_are_consecutive_and_bounded():
    ctx = context()
    sizes = TOK.count([f"[{i + 1}] Community {i}\n{t}" for i, t in enumerate(REPORTS)])
    groups = batches(ctx.items, TOK, limit=max(sizes) + 3)
    assert [i for g in groups for i in g] == list(range(len(REPORTS)))
    assert len(groups) >= 3
    assert batches(ctx.items, TOK, limit=1) == [
        [i] for i in range(len(REPORTS))
    ]  # one item over the limit is alone


def test_points_are_parsed_and_renumbered_never_evaluated():
    reply = '```json\n{"points": [{"description": "Born in Warsaw [2]", "score": 80}, {"description": 5}, {"description": "x [9]", "score": "high"}]}\n```'
    points = parse_points(reply, positions=[3, 4], batch=1)
    assert [(p.text, p.score, p.cites) for p in points] == [
        ("Born in Warsaw [5]", 80.0, (5,)),
        ("x", 0.0, ()),
    ]
    (p,) = parse_points("The context does not contain an answer.", [0], 0)
    assert p.score == 0
    (p,) = parse_points("Marie Curie was born in Warsaw. [1]", [2], 0)
    assert p.score == 50 and p.cites == (3,)
    assert parse_points("__import__('os')", [0], 0)[0].score == 50  # text, not code


def test_map_reduce_calls_once_per_batch_plus_one_and_cites_the_context():
    def reply(req: Request) -> str:
        prompt = req.messages[-1].content
        if "---Analyst Reports---" in prompt:
            return "Marie Curie was born in Warsaw [1], the capital of Poland [2]."
        data = prompt.split("---Data tables---\n", 1)[1]
        score = 90 if "Warsaw" in data else 0
        return json.dumps({"points": [{"description": "From these records [1].", "score": score}]})

    llm = FakeLLM(reply)
    ctx = context()
    text, cites, points = map_reduce(llm, "Where was Marie Curie born?", ctx, TOK, batch_tokens=20)
    n_batches = len(batches(ctx.items, TOK, 20))
    assert len(llm.requests) == n_batches + 1 and len(points) == n_batches
    assert [c.chunk_id for c in cites] == ["community:0", "community:1"]
    assert text == "Marie Curie was born in Warsaw [1], the capital of Poland [2]."


def test_no_useful_point_means_no_reduce_call():
    llm = FakeLLM(['{"points": [{"description": "I do not know.", "score": 0}]}'])
    text, cites, _ = map_reduce(llm, "Who?", context(), TOK, batch_tokens=10_000)
    assert text == NO_ANSWER and cites == [] and len(llm.requests) == 1


def test_extractive_backend_runs_map_reduce_offline():
    text, cites, points = map_reduce(
        ExtractiveLLM(), "Where was Marie Curie born?", context(), TOK, batch_tokens=20
    )
    assert "Warsaw" in text and cites and cites[0].chunk_id == "community:0"
    # the extractive backend always offers its best sentence, so every batch is one point
    assert len(points) == len(batches(context().items, TOK, 20)) and all(p.score == 50 for p in points)
