"""Abstract questions judged head to head (§7.3): verdict parsing, order swapping, win-rate arithmetic,
question generation, the pipeline end to end with scripted LLMs, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paretorag.errors import ConfigError, InputError
from paretorag.eval.abstract import (
    AbstractQuestion,
    generate_questions,
    parse_personas,
    parse_questions,
    read_questions,
    run_abstract,
)
from paretorag.eval.abstract_report import winrate_table
from paretorag.eval.judge import (
    CRITERIA,
    Judgment,
    judge_prompt,
    load_prompt,
    parse_correct,
    parse_verdict,
    win_rates,
)
from paretorag.providers.base import Request
from paretorag.providers.llm import FakeLLM

ALL_ONE = dict.fromkeys(CRITERIA, 1.0)


def _verdict_json(winners: dict[str, str]) -> str:
    return json.dumps({c: {"Winner": w, "Explanation": "because"} for c, w in winners.items()})


# -- verdict parsing ----------------------------------------------------------------------------------------
def test_verdict_well_formed_json() -> None:
    text = _verdict_json(
        {
            "Comprehensiveness": "Answer 1",
            "Diversity": "Answer 2",
            "Empowerment": "Answer 2",
            "Overall": "Answer 1",
        }
    )
    assert parse_verdict(text) == {
        "Comprehensiveness": 1.0,
        "Diversity": 2.0,
        "Empowerment": 2.0,
        "Overall": 1.0,
    }


def test_verdict_fenced_json_with_trailing_comma_and_overall_winner() -> None:
    text = (
        'Here is my evaluation:\n```json\n{"comprehensiveness": {"winner": "Answer 2"},'
        '"Diversity": "answer 1", "Empowerment": {"Winner": "2"}, "Overall Winner": {"Winner": "Answer 2"},}\n```'
    )
    assert parse_verdict(text) == {
        "Comprehensiveness": 2.0,
        "Diversity": 1.0,
        "Empowerment": 2.0,
        "Overall": 2.0,
    }


def test_verdict_free_text() -> None:
    text = (
        "Comprehensiveness: Answer 2 is better, it covers more.\n"
        "Diversity: the winner is Answer 1, although Answer 2 tries.\n"
        "Empowerment: Answer 1.\n"
        "Overall: both are equally good."
    )
    assert parse_verdict(text) == {
        "Comprehensiveness": 2.0,
        "Diversity": 1.0,
        "Empowerment": 1.0,
        "Overall": 1.5,
    }


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I refuse.",
        "{not json",
        "[1, 2, 3]",
        '{"Overall": 7}',
        "Overall: Answer 1 and Answer 2 differ.",
        "\x00" * 5,
    ],
)
def test_verdict_malformed_is_invalid_never_a_crash(text: str) -> None:
    assert parse_verdict(text) == dict.fromkeys(CRITERIA)


def test_verdict_partial_json_keeps_what_it_can_read() -> None:
    v = parse_verdict(
        '{"Comprehensiveness": {"Winner": "Answer 2"}, "Diversity": {"Explanation": "no winner"}}'
    )
    assert v == {"Comprehensiveness": 2.0, "Diversity": None, "Empowerment": None, "Overall": None}


def test_verdict_cut_off_json_falls_back_to_text() -> None:
    v = parse_verdict(
        '{"Comprehensiveness": {"Winner": "Answer 1", "Explanation": "x"}, "Diversity": {"Winner": "Ans'
    )
    assert v["Comprehensiveness"] == 1.0 and v["Diversity"] is None and v["Overall"] is None


def test_correct_parser() -> None:
    assert parse_correct('{"correct": true}') == 1.0
    assert parse_correct('{"correct": false}') == 0.0
    assert parse_correct("The prediction is incorrect.") == 0.0
    assert parse_correct("Correct.") == 1.0
    assert parse_correct("maybe") is None


# -- win rates -----------------------------------------------------------------------------------------------
def test_position_one_judge_gives_fifty_percent_after_swapping() -> None:
    methods = ["a", "b", "c"]
    js = [
        Judgment(q, first, second, ALL_ONE)
        for q in ("q1", "q2")
        for x, y in (("a", "b"), ("a", "c"), ("b", "c"))
        for first, second in ((x, y), (y, x))
    ]
    m = win_rates(methods, js)
    for c in CRITERIA:
        assert all(m["rates"][c][a][b] == 50.0 for a in methods for b in methods)
        assert m["valid"][c]["a"]["b"] == 4 and m["invalid"][c] == 0


def test_matrix_arithmetic() -> None:
    # q1: a beats b in both orders; q2: a wins once, b once (position bias); q3: a tie, one invalid
    prefer = dict.fromkeys(CRITERIA, 2.0)
    tie = dict.fromkeys(CRITERIA, 1.5)
    invalid = dict.fromkeys(CRITERIA)
    js = [
        Judgment("q1", "a", "b", ALL_ONE),
        Judgment("q1", "b", "a", prefer),
        Judgment("q2", "a", "b", ALL_ONE),
        Judgment("q2", "b", "a", ALL_ONE),
        Judgment("q3", "a", "b", tie),
        Judgment("q3", "b", "a", invalid),
    ]
    m = win_rates(["a", "b", "c"], js)
    # a's scores: 1, 1, 1, 0, 0.5 over 5 valid verdicts = 70 %
    assert m["rates"]["Overall"]["a"]["b"] == 70.0 and m["rates"]["Overall"]["b"]["a"] == 30.0
    assert m["rates"]["Diversity"]["a"]["a"] == 50.0
    assert m["rates"]["Overall"]["a"]["c"] is None  # never compared
    assert m["invalid"]["Overall"] == 1 and m["valid"]["Overall"]["a"]["b"] == 5
    table = winrate_table(m, "Overall").splitlines()
    assert table[2] == "| `a` | 50 | 70 | – |" and table[3] == "| `b` | 30 | 50 | – |"


# -- question generation ---------------------------------------------------------------------------------
def test_parse_personas_json_and_text() -> None:
    js = '{"personas": [{"persona": "A nurse", "tasks": ["triage", "teach"]}, {"user": "A GP", "tasks": []}]}'
    assert parse_personas(js) == [("A nurse", ["triage", "teach"]), ("A GP", [])]
    text = "User 1: A nurse\n- Task 1: triage\n- Task 2: teach\n**User 2:** A student\nTask 1: revise"
    assert parse_personas(text) == [("A nurse", ["triage", "teach"]), ("A student", ["revise"])]
    assert parse_personas("nothing useful") == []


def test_parse_questions_json_and_lines() -> None:
    assert parse_questions('```json\n{"questions": ["Why X?", "How Y?", "Why X?"]}\n```') == [
        "Why X?",
        "How Y?",
    ]
    text = (
        "Here you go:\n1. How do treatments compare across cancers?\n2) What themes recur?\n- not a question"
    )
    assert parse_questions(text) == ["How do treatments compare across cancers?", "What themes recur?"]
    assert parse_questions("no questions") == []
    text = "Question: What is the main theme?\nAnswer: fertility.\nQuestion 2: What is the main theme?\n**Q3:** Why?"
    assert parse_questions(text) == ["What is the main theme?", "Why?"]
    assert parse_questions("- Quality of life: how do treatments differ?") == [
        "Quality of life: how do treatments differ?"
    ]


def _writer(request: Request) -> str:
    prompt = request.messages[-1].content
    if "Identify 2 potential users" in prompt:
        return '{"personas": [{"persona": "P1", "tasks": ["T1", "T2"]}, {"persona": "P2", "tasks": ["T3"]}]}'
    if "Task: T3" in prompt:
        return "I cannot help."
    return '{"questions": ["How do A and B relate?", "What themes recur?", "A third?"]}'


def test_generate_questions_counts_and_limits() -> None:
    llm = FakeLLM(_writer)
    qs, counts = generate_questions(llm, "summary text", personas=2, tasks=2, per_task=2)
    assert [(q.persona, q.task) for q in qs] == [("P1", "T1"), ("P1", "T1"), ("P1", "T2"), ("P1", "T2")]
    assert qs[0].qid == "u1-t1-q1" and qs[0].text == "How do A and B relate?"
    assert counts == {"unreadable_personas": 0, "unreadable_questions": 1}
    assert "summary text" in llm.requests[0].messages[-1].content
    with pytest.raises(ConfigError, match="personas"):
        generate_questions(llm, "s", personas=0)


def test_generate_questions_with_unreadable_personas_uses_one_generic_user() -> None:
    llm = FakeLLM(lambda r: "Why?" if "Identify" in r.messages[-1].content else '["Q one?"]')
    qs, counts = generate_questions(llm, "s", personas=3, tasks=1, per_task=1)
    assert len(qs) == 1 and qs[0].text == "Q one?" and counts["unreadable_personas"] == 1


def test_prompts_are_packaged_and_cited() -> None:
    assert "{question}" not in judge_prompt("Q?", "first", "second")
    assert "Comprehensiveness" in load_prompt("abstract_judge") and "Answer 1" in load_prompt(
        "abstract_judge"
    )
    from paretorag.eval.judge import PROMPTS

    for name in ("abstract_personas", "abstract_questions", "abstract_judge", "answer_correct"):
        assert "§7" in (PROMPTS / f"{name}.txt").read_text() or name == "answer_correct"
        assert not load_prompt(name).startswith("#")


def test_read_questions_formats(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("How?\n\nWhy?\n")
    assert [q.text for q in read_questions(tmp_path / "q.txt")] == ["How?", "Why?"]
    (tmp_path / "q.jsonl").write_text('{"id": "x", "question": "How?", "persona": "P"}\n')
    assert read_questions(tmp_path / "q.jsonl") == [AbstractQuestion("x", "How?", "P", "")]
    (tmp_path / "q.json").write_text('["A?", {"question": "B?"}]')
    assert [q.qid for q in read_questions(tmp_path / "q.json")] == ["q1", "q2"]
    (tmp_path / "bad.json").write_text('[{"text": "no question key"}]')
    with pytest.raises(InputError, match="item 1"):
        read_questions(tmp_path / "bad.json")
    with pytest.raises(InputError, match="no such file"):
        read_questions(tmp_path / "missing.txt")


# -- end to end ------------------------------------------------------------------------------------------
CORPUS = [
    (
        "Basal cell carcinoma",
        "Basal cell carcinoma is the most common skin cancer. Sun exposure raises its risk.",
    ),
    (
        "Melanoma",
        "Melanoma spreads early. Surgery and immunotherapy treat it; sun exposure is a risk factor.",
    ),
    ("Breast cancer", "Breast cancer screening uses mammograms. Treatments include surgery and radiation."),
    ("Lung cancer", "Smoking causes most lung cancer. Screening uses low-dose CT for heavy smokers."),
    ("Prostate cancer", "Prostate cancer often grows slowly. Active surveillance suits low-risk cases."),
    ("Survivorship", "After cancer treatment, follow-up visits watch for recurrence and late effects."),
]


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as f:
        for title, text in CORPUS:
            f.write(json.dumps({"title": title, "text": text, "presplit": True}) + "\n")
    (folder / "questions.jsonl").write_text('{"question": "unused?", "answer": "x"}\n')
    return folder


def _answerer(request: Request) -> str:
    prompt = request.messages[-1].content
    if "potential users" in prompt:
        return '{"personas": [{"persona": "An oncologist", "tasks": ["compare cancers"]}]}'
    if "questions this user would ask" in prompt:
        return (
            '{"questions": ["How does sun exposure shape cancer risk?", "How do screening methods differ?"]}'
        )
    return f"An answer from a prompt of {len(prompt)} characters."


def test_pipeline_end_to_end_with_a_position_one_judge(tmp_path: Path) -> None:
    judge = FakeLLM([_verdict_json(dict.fromkeys(CRITERIA, "Answer 1"))], name="fake-judge")
    out = tmp_path / "out"
    payload = run_abstract(
        _corpus(tmp_path),
        "jsonl",
        ["vanilla", "zeroshot", "ea-graphrag-dense-only"],  # no structure to build: fast
        llm=FakeLLM(_answerer),
        judge=judge,
        summaries="corpus",
        personas=1,
        tasks=1,
        per_task=2,
        out_dir=out,
        embedder="hash",
    )
    assert [q["text"] for q in payload["questions"]] == [
        "How does sun exposure shape cancer risk?",
        "How do screening methods differ?",
    ]
    # 2 questions x 3 pairs x 2 orders
    assert len(payload["judgments"]) == 12 and payload["judge_cost"]["calls"] == 12
    # identical prompts (two methods can answer alike) come from the index's response cache
    assert len(judge.requests) + payload["judge_cost"]["cached"] == 12
    firsts = {(r["first"], r["second"]) for r in payload["judgments"] if r["qid"] == "u1-t1-q1"}
    assert ("vanilla", "zeroshot") in firsts and ("zeroshot", "vanilla") in firsts
    m = payload["win_rates"]
    assert all(m["rates"][c][a][b] == 50.0 for c in CRITERIA for a in m["methods"] for b in m["methods"])
    assert payload["judge_cost"]["prompt_tokens"] > 0
    cost = payload["cost"]["vanilla"]
    assert cost["llm_calls_per_query"] == 1.0 and cost["prompt_tokens_per_query"] > 0
    assert cost["seconds_per_query"] > 0
    assert payload["generation"]["usage"]["abstract.questions"]["calls"] == 2
    md = (out / "abstract.md").read_text()
    assert "**Overall** (0 unreadable verdicts)" in md and "Table 11" in md and "Judge: 12 calls" in md
    assert (out / "abstract_winrates.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((out / "abstract.json").read_text())
    assert saved["win_rates"] == m


def test_pipeline_counts_unreadable_verdicts_and_reads_a_questions_file(tmp_path: Path) -> None:
    qfile = tmp_path / "questions.txt"
    qfile.write_text("How do cancers compare?\n")
    judge = FakeLLM(["no idea", _verdict_json(dict.fromkeys(CRITERIA, "Answer 2"))], name="fake-judge")
    payload = run_abstract(
        _corpus(tmp_path),
        "jsonl",
        ["vanilla", "zeroshot"],  # different prompts, so different answers: no cached verdict
        llm=FakeLLM(_answerer),
        judge=judge,
        questions_file=qfile,
        out_dir=tmp_path / "out",
        embedder="hash",
        plots=False,
    )
    m = payload["win_rates"]
    # (vanilla, zeroshot): unreadable; (zeroshot, vanilla): Answer 2 = vanilla wins
    assert m["invalid"]["Overall"] == 1 and m["rates"]["Overall"]["vanilla"]["zeroshot"] == 100.0
    assert (
        payload["config"]["questions"] == str(qfile)
        and not (tmp_path / "out" / "abstract_winrates.png").exists()
    )


def test_pipeline_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    data = _corpus(tmp_path)
    with pytest.raises(ConfigError, match="at least two methods"):
        run_abstract(data, "jsonl", ["vanilla"], llm="fake", out_dir=tmp_path / "o")
    with pytest.raises(ConfigError, match="graphrag-global"):
        run_abstract(
            data,
            "jsonl",
            ["vanilla", "zeroshot"],
            llm="fake",
            summaries="communities",
            out_dir=tmp_path / "o",
        )
    with pytest.raises(ConfigError, match="judge"):
        run_abstract(
            data, "jsonl", ["vanilla", "zeroshot"], llm="fake", judge="extractive", out_dir=tmp_path / "o"
        )


def test_cli_abstract(tmp_path: Path) -> None:
    import typer

    from paretorag.eval.cli import eval_command

    app = typer.Typer()
    app.command()(eval_command)
    qfile = tmp_path / "q.txt"
    qfile.write_text("How do cancers compare?\n")
    args = [
        "--data",
        str(_corpus(tmp_path)),
        "--subset",
        "jsonl",
        "--methods",
        "vanilla,zeroshot",
        "--abstract",
    ]
    args += ["--llm", "fake", "--questions", str(qfile), "--embedder", "hash", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| `vanilla` | 50 |" in result.output and "judge: 2 calls" in result.output
    bad = CliRunner().invoke(
        app, [*args[:5], "vanilla", "--abstract", "--llm", "fake", "--out", str(tmp_path / "p")]
    )
    assert bad.exit_code == 2 and "at least two methods" in bad.output


def test_offline_answers_with_a_model_that_writes_and_judges(tmp_path: Path) -> None:
    """--llm extractive answers offline; the judge also writes the questions."""

    def judge_and_writer(request: Request) -> str:
        prompt = request.messages[-1].content
        if "compare two answers" in prompt:
            return _verdict_json(dict.fromkeys(CRITERIA, "Answer 2"))
        return _answerer(request)

    judge = FakeLLM(judge_and_writer, name="fake-judge")
    payload = run_abstract(
        _corpus(tmp_path),
        "jsonl",
        ["vanilla", "zeroshot"],
        llm="extractive",
        judge=judge,
        summaries="corpus",
        personas=1,
        tasks=1,
        per_task=1,
        out_dir=tmp_path / "out",
        embedder="hash",
        plots=False,
    )
    assert [q["text"] for q in payload["questions"]] == ["How does sun exposure shape cancer risk?"]
    assert payload["generation"]["usage"]["abstract.questions"]["calls"] == 2
    assert payload["answers"]["vanilla"][0]["text"].strip()  # evidence sentences, no model
    assert payload["win_rates"]["rates"]["Overall"]["vanilla"]["zeroshot"] == 50.0  # position 2, both orders


def test_without_graphrag_global_the_questions_are_written_from_the_corpus(tmp_path: Path) -> None:
    judge = FakeLLM([_verdict_json(dict.fromkeys(CRITERIA, "Answer 1"))], name="fake-judge")
    payload = run_abstract(  # no --summaries: communities would need graphrag-global
        _corpus(tmp_path),
        "jsonl",
        ["vanilla", "zeroshot"],
        llm=FakeLLM(_answerer),
        judge=judge,
        personas=1,
        tasks=1,
        per_task=1,
        out_dir=tmp_path / "out",
        embedder="hash",
        plots=False,
    )
    assert payload["config"]["questions"] == "generated from corpus summaries"
    assert [q["text"] for q in payload["questions"]] == ["How does sun exposure shape cancer risk?"]


def test_cli_abstract_says_on_stderr_when_it_writes_questions_from_the_corpus(tmp_path: Path) -> None:
    import typer

    from paretorag.eval.cli import eval_command

    app = typer.Typer()
    app.command()(eval_command)
    args = ["--data", str(_corpus(tmp_path)), "--subset", "jsonl", "--methods", "vanilla,zeroshot"]
    args += ["--abstract", "--llm", "fake", "--embedder", "hash", "--out", str(tmp_path / "o"), "--no-plots"]
    result = CliRunner().invoke(app, args)
    assert "graphrag-global to --methods" not in result.output, result.output
    assert "written from corpus excerpts (--summaries corpus)" in result.stderr
    # past the summaries: the scripted model ("ok") writes no question, which is the error now
    assert result.exit_code == 2 and "wrote no readable questions" in result.stderr
