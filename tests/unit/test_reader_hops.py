"""The reader's second hop (answering/reader/hops.py): when it runs, what it reads, what it keeps."""

from __future__ import annotations

from paretorag.answering.reader.core import ReaderResult
from paretorag.answering.reader.hops import HOP_PASSAGES, bridge_of, second_hop
from paretorag.types import Context, ContextItem


def _item(cid: str, text: str = "") -> ContextItem:
    return ContextItem(chunk_id=cid, doc_id=cid, title=cid, text=text or f"text of {cid}", score=0.0)


def _result(
    answer: str, confidence: float, *, found: bool = True, kind: str = "span", **trace
) -> ReaderResult:
    return ReaderResult(answer, (), confidence, found, kind, "person", dict(trace))


def _ctx(*ids: str) -> Context:
    return Context(items=tuple(_item(i) for i in ids), text="", n_tokens=0)


class Retriever:
    """Records its queries and returns the items it was given, best first."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.queries: list[tuple[str, int]] = []

    def __call__(self, query: str, k: int) -> list[ContextItem]:
        self.queries.append((query, k))
        return [_item(i) for i in self.ids[:k]]


def test_the_bridge_is_a_found_span_answer():
    assert bridge_of(_result("Frederick Douglass", 0.3)) == "Frederick Douglass"
    # a withheld answer asks nothing: its candidate would fetch passages about anything
    assert bridge_of(_result("", 0.01, found=False, candidate="QA")) == ""
    assert bridge_of(_result("", 0.01, found=False, span_model="VR")) == ""
    # a comparison, a yes/no, a sentence or a followed chain answers in one read
    for kind in ("choice", "yesno", "sentence", "chain"):
        assert bridge_of(_result("Paris", 0.9, kind=kind)) == ""


def test_a_surer_second_answer_replaces_the_first_and_brings_its_passages():
    first = _result("Frederick Douglass", 0.2)
    retrieve = Retriever(["a", "b", "c", "d", "e", "f"])
    seen: list[tuple[str, ...]] = []

    def read(ctx: Context):
        seen.append(tuple(it.chunk_id for it in ctx.items))
        return ctx, _result("Helen Pitts Douglass", 0.6)

    ctx, result, hop = second_hop(
        "Who married the publisher of The North Star?", _ctx("a", "b"), first, retrieve, read
    )
    assert retrieve.queries == [
        ("Who married the publisher of The North Star? Frederick Douglass", HOP_PASSAGES)
    ]
    # the first passages, then only new ones, at most HOP_PASSAGES of them
    assert seen == [("a", "b", "c")]
    assert result.answer == "Helen Pitts Douglass"
    assert [it.chunk_id for it in ctx.items] == ["a", "b", "c"]
    assert hop is not None and hop.taken and hop.new_passages == 1
    assert hop.to_json()["confidence"] == [0.2, 0.6]


def test_the_first_answer_stays_when_the_confidence_does_not_rise():
    first = _result("Compaq", 0.5)
    for second in (_result("Hewlett-Packard", 0.4), _result("Hewlett-Packard", 0.9, found=False)):
        ctx, result, hop = second_hop(
            "q", _ctx("a"), first, Retriever(["x", "y", "z", "w"]), lambda c, s=second: (c, s)
        )
        assert result is first
        assert [it.chunk_id for it in ctx.items] == ["a"]  # the unread passages are not cited
        assert hop is not None and not hop.taken and hop.new_passages == 3


def test_no_second_read_without_new_passages_or_without_a_bridge():
    def read(ctx: Context):
        raise AssertionError("no second read expected")

    first = _result("Compaq", 0.3)
    ctx, result, hop = second_hop("q", _ctx("a", "b"), first, Retriever(["b", "a"]), read)
    assert result is first and hop is not None and hop.new_passages == 0 and not hop.taken
    assert [it.chunk_id for it in ctx.items] == ["a", "b"]
    retrieve = Retriever(["c"])
    _, result, hop = second_hop("q", _ctx("a"), _result("yes", 0.9, kind="yesno"), retrieve, read)
    assert hop is None and retrieve.queries == [] and result.answer == "yes"


def test_list_and_description_questions_are_answered_with_the_sentence():
    from paretorag.answering.reader.core import Evidence, described
    from paretorag.answering.reader.question import analyze

    span = ReaderResult(
        "shiny bumps",
        (Evidence("BCC presents as red patches, shiny bumps or open sores.", 2), Evidence("Other.", 1)),
        0.4,
        True,
        "span",
        "phrase",
        {},
    )
    q = "What are common symptoms of basal cell carcinoma?"
    out = described(q, analyze(q, []), span)
    assert (
        out.kind == "sentence"
        and out.answer.startswith("BCC presents")
        and out.trace["span"] == "shiny bumps"
    )
    assert out.text == "BCC presents as red patches, shiny bumps or open sores. [2]"
    # a question that expects a person, or one that is not a list or description, keeps its span
    for other in (
        "Who are the founders of the company?",
        "What government position was held by the actress?",
    ):
        assert described(other, analyze(other, []), span) is span
    # ... unless its untyped span comes from a chunk of a long document
    from paretorag.answering.reader.candidates import Passage

    q3 = "What government position was held by the actress?"
    long = [Passage(2, "Report", "x " * 900, 0.5)]
    assert described(q3, analyze(q3, []), span, long).kind == "sentence"
    assert described(q3, analyze(q3, []), span, [Passage(2, "Note", "short text", 0.5)]) is span
    q4 = "Who are the founders of the company?"
    assert described(q4, analyze(q4, []), span, long) is span  # a typed question keeps its span
    # a table run together by a PDF's text layer is no sentence to answer with
    table = ReaderResult(
        "VR",
        (Evidence("VR RA GS LR FG 50 50 2 46 95 VR 50 64 58 64 93 " * 12, 2),),
        0.4,
        True,
        "span",
        "phrase",
        {},
    )
    assert described(q3, analyze(q3, []), table, long) is table
