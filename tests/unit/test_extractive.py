"""The extractive backend's answers: whole sentences, scored against the question, cited, within budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paretorag.answering.answer import generate
from paretorag.errors import ConfigError
from paretorag.providers.base import Request, Task
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.extractive import NO_ANSWER, ExtractiveLLM, candidates, term_overlap
from paretorag.textutil import reading_sentences
from paretorag.types import Context, ContextItem

from ..conftest import write

# the passage of "Lost in Translation" (QuALITY) whose old split answered `"You are\n to go to him. [4]`
KORVIN = (
    '   "The Ruler is the Ruler," Didyak said, slightly discomfited. "You are\n'
    ' to go to him. Such is his command." \n\n'
    '   Korvin shrugged, sighed and smoothed back his hair. "I obey the\n'
    ' command of the Ruler," he said—another ritual. Everybody obeyed the\n'
    " command of the Ruler."
)


def test_sentences_have_no_line_break_debris_and_keep_quotations_whole() -> None:
    assert reading_sentences(KORVIN) == [
        '"The Ruler is the Ruler," Didyak said, slightly discomfited.',
        '"You are to go to him. Such is his command."',
        "Korvin shrugged, sighed and smoothed back his hair.",
        '"I obey the command of the Ruler," he said—another ritual.',
        "Everybody obeyed the command of the Ruler.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Watson met J. R. Smith in St. Louis on Jan. 5. They talked.",
            ["Dr. Watson met J. R. Smith in St. Louis on Jan. 5.", "They talked."],
        ),
        ("\u201cGo now. Run.\u201d She ran off.", ["\u201cGo now. Run.\u201d", "She ran off."]),
        ("He said, 'no.' Then he left the room.", ["He said, 'no.'", "Then he left the room."]),
        (
            "Steps:\n- Open the lid.\n- Pour the water in.",
            ["Steps:", "- Open the lid.", "- Pour the water in."],
        ),
        # a quotation does not run on past its paragraph
        ('"Wait. Stop.\n\nShe stopped.', ['"Wait. Stop.', "She stopped."]),
    ],
)
def test_sentence_cases(text: str, expected: list[str]) -> None:
    assert reading_sentences(text) == expected


def test_an_unclosed_quotation_joins_at_most_six_sentences() -> None:
    text = '"Start. ' + " ".join(f"Sentence number {i} here." for i in range(20))
    sents = reading_sentences(text)
    assert len(sents) == 20 - 5 + 1 and sents[0].count(".") == 6


def test_fragments_and_headings_are_not_candidates() -> None:
    text = "LOST IN TRANSLATION\n\nBy\n\nLARRY M. HARRIS\n\nThe cell had been put together efficiently. Yes."
    assert candidates("cell", [text]).sentences == ["The cell had been put together efficiently."]


def test_term_overlap_weights_rare_question_terms() -> None:
    sents = ["The tower is tall.", "The tower is in Paris.", "Koechlin drew the tower first."]
    scores = term_overlap("Who drew the tower for Koechlin?", sents)
    # "tower" is in every sentence, "koechlin" and "drew" only in the third
    assert scores.argmax() == 2 and scores[0] == scores[1] < 0.2 < scores[2] == pytest.approx(1.0)


def _ctx(texts: list[str]) -> Context:
    return Context(tuple(ContextItem(f"c{i}", f"d{i}", f"t{i}", t, 1.0) for i, t in enumerate(texts)), "", 0)


PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It is named after the engineer "
    "Gustave Eiffel, whose company built it. Millions of people visit the Eiffel Tower every year.",
    "Maurice Koechlin and Emile Nouguier, two engineers of the company, drew the first design of the "
    "tower in 1884. The tower was finished in March 1889 for the World's Fair.",
    "The Statue of Liberty was designed by Frederic Auguste Bartholdi and dedicated in 1886.",
]


@pytest.mark.slow
def test_minilm_scoring_picks_the_answer_sentence_and_cites_its_passage(minilm) -> None:
    llm = ExtractiveLLM(embedder=minilm, tokenizer=minilm.tokenizer)
    ctx = _ctx(PASSAGES)
    text, cites = generate(llm, "Who drew the first design of the Eiffel Tower?", ctx)
    first = text.split(" [")[0]
    assert "Koechlin" in first and text.startswith(reading_sentences(PASSAGES[1])[0])
    assert cites[0].chunk_id == "c1"
    text, cites = generate(llm, "When was the Eiffel Tower completed?", ctx)
    # "completed" is not "finished": passage 1 matches "Eiffel Tower" better, so the year's
    # sentence comes after it, but it is in the answer (the answer type: a year) and cited
    assert "The tower was finished in March 1889 for the World's Fair. [2]" in text
    assert "c1" in [c.chunk_id for c in cites]
    text, cites = generate(llm, "Who designed the Statue of Liberty?", ctx)
    assert "Bartholdi" in text.split(" [")[0] and cites[0].chunk_id == "c2"


def test_every_cited_sentence_is_in_the_passage_it_cites() -> None:
    llm = ExtractiveLLM(embedder=HashEmbedder(64), keep_ratio=0.0)  # three sentences, whatever their scores
    ctx = _ctx([KORVIN, *PASSAGES])
    text, cites = generate(llm, "Who obeyed the command of the Ruler and who drew the tower?", ctx)
    parts = re.findall(r"(.+?) \[(\d+)\](?: |$)", text)
    assert len(parts) == 3 and {c.marker for c in cites} == {int(n) for _, n in parts}
    for sentence, n in parts:
        assert sentence in " ".join(ctx.items[int(n) - 1].text.split())


def test_the_answer_respects_max_tokens() -> None:
    tok = RegexTokenizer()
    llm = ExtractiveLLM(tokenizer=tok, keep_ratio=0.0)
    texts = tuple(PASSAGES)
    req = Request((), Task("answer", texts=texts, question="Who drew the first design of the tower?"))
    full = llm.complete(req).text
    assert full.count("[") == 3 and tok.count([full])[0] > 30
    short = llm.complete(Request((), req.task, max_tokens=30)).text
    assert short.count("[") < 3 and tok.count([short])[0] <= 30 and short in full
    tiny = llm.complete(Request((), req.task, max_tokens=8)).text
    assert tok.count([tiny])[0] <= 8 and tiny.endswith("]") and " … [" in tiny


def test_no_answer_without_question_terms_or_sentences() -> None:
    llm = ExtractiveLLM()
    assert (
        llm.complete(Request((), Task("answer", texts=("Text here is long enough.",), question="Why?"))).text
        == NO_ANSWER
    )
    assert (
        llm.complete(Request((), Task("answer", texts=("Yes.",), question="Who drew it?"))).text == NO_ANSWER
    )


def test_settings_are_checked_and_identify_the_answers() -> None:
    with pytest.raises(ConfigError, match="answer_sentences"):
        ExtractiveLLM(answer_sentences=0)
    with pytest.raises(ConfigError, match="keep_ratio"):
        ExtractiveLLM(keep_ratio=1.5)
    bound = ExtractiveLLM()
    before = bound.identity
    bound.bind(HashEmbedder(64), RegexTokenizer())
    assert bound.identity != before and bound.identity["embedder"] == "hash-64"


def test_an_index_answers_with_its_embedder_within_the_budget(tmp_path: Path) -> None:
    from paretorag import RAG

    files = [write(tmp_path / "docs" / f"p{i}.txt", t) for i, t in enumerate(PASSAGES)]
    rag = RAG.open(tmp_path / "idx", embedder=HashEmbedder(64))
    rag.index(files)
    assert rag._base_llm().embedder is not None  # type: ignore[attr-defined]
    ans = rag.query("Who drew the first design of the tower?", k=3, budget=80, reader="extractive")
    assert ans.answered_by == "extractive" and ans.short is None
    assert 0 < len(ans.contexts) < 3  # the budget left a passage out
    assert ans.citations and all(1 <= c.marker <= len(ans.contexts) for c in ans.citations)
    kept = {c.chunk_id for c in ans.contexts}
    assert {c.chunk_id for c in ans.citations} <= kept
    short = rag.query(
        "Who drew the first design of the tower?", k=3, max_answer_tokens=10, reader="extractive"
    )
    assert rag.tokenizer.count([short.text])[0] <= 10


def test_a_sentence_repeated_by_overlapping_chunks_is_said_once() -> None:
    llm = ExtractiveLLM(embedder=HashEmbedder(64), keep_ratio=0.0)
    overlap = "Gustave Eiffel's company built the tower in Paris."
    texts = (f"{PASSAGES[0]} {overlap}", f"{overlap}  {PASSAGES[1]}")
    text = llm.complete(
        Request((), Task("answer", texts=texts, question="Who built the tower in Paris?"))
    ).text
    assert text.count(overlap) == 1 and text.count("[") == 3
