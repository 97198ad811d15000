"""Abstract questions, judged head to head (unified framework §7.1 and §7.3, Figures 6-10, Table 11).

:func:`run_abstract` indexes a corpus, gets its questions, has every method answer them and
a judge compare the answers pair by pair in both orders:

1. Questions. From a file (:func:`read_questions`), or generated the way the paper does
   (§7.1, after LightRAG §4.1 / GraphRAG §3.1): an LLM reads summaries of the corpus (the
   GraphRAG community reports, most highly rated first, or excerpts spread over the corpus),
   names ``personas`` users and ``tasks`` tasks per user (``abstract_personas.txt``), then
   writes ``per_task`` questions per user and task (``abstract_questions.txt``).
2. Answers: ``RAG.query`` per method, with its cost (calls, prompt and completion tokens,
   seconds per query: the paper's Table 11).
3. Verdicts: :mod:`paretorag.eval.judge`; win-rate matrices per criterion as Markdown tables
   and heatmaps (:mod:`paretorag.eval.abstract_report`), with the judge's own token cost.

One module (over 400 lines) because question generation, answering and judging share one
run's records and cost accounting; the verdict parser and the report are apart (judge.py,
abstract_report.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..types import Usage
from .judge import Judgment, judge_prompt, load_prompt, parse_verdict, win_rates

SOURCES = ("communities", "corpus")


def default_summaries(methods: Sequence[str]) -> str:
    """What the question writer reads when not told: the GraphRAG community reports when
    ``graphrag-global`` is among ``methods`` (its index builds them), else corpus excerpts."""
    return "communities" if "graphrag-global" in methods else "corpus"


@dataclass(frozen=True)
class AbstractQuestion:
    """A generated or given abstract question, with the user and task it was written for."""

    qid: str
    text: str
    persona: str = ""
    task: str = ""


# -- question generation ------------------------------------------------------------------------------
_NUMBERED = re.compile(  # "1.", "- ", "Question 2:", "**Q3:**" before a question
    r"^\s*(?:[-*\u2022]\s+|\(?\d+[.):]\s*)?(?:\*\*)?\s*"
    r"(?:(?:question|q)\s*\d*\s*(?:\*\*)?\s*[:.)]\s*(?:\*\*)?\s*)?",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^\s*(?:[-*\u2022]\s+)?(?:\*\*)?\s*(user|persona|task)\s*\d*\s*(?:\*\*)?\s*[:.)-]\s*(?:\*\*)?\s*(.+)$",
    re.IGNORECASE,
)


def _strings(value: Any) -> list[str]:
    return [v.strip() for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def parse_personas(text: str) -> list[tuple[str, list[str]]]:
    """Users and their tasks from the step-1 answer: JSON ``{"personas": [{"persona", "tasks"}]}``
    (or the bare list), else ``User 1: ...`` / ``Task 1: ...`` lines. Empty when unreadable."""
    from ..graphs.kg_prompts import parse_json

    data = parse_json(text)
    rows = data.get("personas", data.get("users")) if isinstance(data, dict) else data
    out: list[tuple[str, list[str]]] = []
    if isinstance(rows, list):
        for row in rows:
            if not isinstance(row, dict):
                continue
            who = next((row[k] for k in ("persona", "user", "name") if isinstance(row.get(k), str)), "")
            if who.strip():
                out.append((who.strip(), _strings(row.get("tasks"))))
        if out:
            return out
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m is None:
            continue
        kind, value = m.group(1).lower(), m.group(2).strip().strip("*").strip()
        if kind in ("user", "persona"):
            out.append((value, []))
        elif out:
            out[-1][1].append(value)
    return out


def parse_questions(text: str) -> list[str]:
    """Questions from the step-2 answer: JSON ``{"questions": [...]}`` (or a list), else the lines
    that end with a question mark, numbering and bullets removed."""
    from ..graphs.kg_prompts import parse_json

    data = parse_json(text)
    rows = data.get("questions") if isinstance(data, dict) else data
    found = _strings(rows)
    if not found:
        found = [_NUMBERED.sub("", line).strip().strip("*").strip() for line in text.splitlines()]
        found = [q for q in found if q.endswith("?") and len(q) > 3]
    return list(dict.fromkeys(found))


def corpus_summaries(rag: Any, source: str, max_chars: int = 12000) -> str:
    """What the question writer reads: community reports (best rated first) or corpus excerpts.

    ``communities`` needs the ``communities`` structure (built by ``graphrag-global`` /
    ``graphrag-local``); ``corpus`` takes the opening of chunks spread evenly over the corpus.
    """
    import numpy as np

    if source not in SOURCES:
        raise ConfigError(f"--summaries must be one of {', '.join(SOURCES)}, got {source!r}")
    parts: list[str] = []
    if source == "communities":
        from ..retrieval.operators.base import load_graph

        if not rag.built("graphrag-global"):
            raise ConfigError(
                "--summaries communities needs the community reports: add graphrag-global to --methods "
                "(or use --summaries corpus)"
            )
        c = load_graph(rag.view, "communities").communities
        if c is None or not len(c):
            raise InputError("the index has no communities to summarise; use --summaries corpus")
        rating = np.asarray(c.rating if c.rating is not None else np.zeros(len(c)), dtype=float)
        order = sorted(range(len(c)), key=lambda i: (int(c.level[i]), -float(rating[i]), i))
        parts = [c.reports[i].strip() for i in order if i < len(c.reports) and c.reports[i].strip()]
    else:
        chunks = rag.view.chunks
        n = len(chunks)
        if n == 0:
            raise InputError("the index has no chunks: index a corpus first")
        want = max(1, min(n, max_chars // 600))
        rows = sorted({int(r) for r in np.linspace(0, n - 1, want)})
        parts = [" ".join(chunks.texts[r].split())[:600] for r in rows]
    out: list[str] = []
    used = 0
    for p in parts:
        if used + len(p) > max_chars and out:
            break
        out.append(p[: max_chars - used])
        used += len(out[-1]) + 2
    return "\n\n".join(out)


def generate_questions(
    llm: Any, summaries: str, *, personas: int = 5, tasks: int = 5, per_task: int = 5
) -> tuple[list[AbstractQuestion], dict[str, int]]:
    """``personas * tasks * per_task`` questions (fewer when the model writes fewer), and counts of
    the answers that could not be read (``unreadable_personas``, ``unreadable_questions``).

    When the user list cannot be read, one generic user is assumed, so a weak model still
    yields questions; a (user, task) whose questions cannot be read is skipped.
    """
    from ..providers.base import user_prompt

    for name, v in (("personas", personas), ("tasks", tasks), ("questions per task", per_task)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"the number of {name} must be a positive integer, got {v!r}")
    counts = {"unreadable_personas": 0, "unreadable_questions": 0}
    step1 = load_prompt("abstract_personas").format(summaries=summaries, n_personas=personas, n_tasks=tasks)
    users = parse_personas(llm.complete(user_prompt(step1, max_tokens=1024)).text)[:personas]
    if not users:
        counts["unreadable_personas"] += 1
        users = [("a reader who wants an overview of the whole collection", [])]
    out: list[AbstractQuestion] = []
    for u, (who, their_tasks) in enumerate(users):
        chosen = their_tasks[:tasks] or ["understand the main themes of the collection and how they relate"]
        for t, task in enumerate(chosen):
            step2 = load_prompt("abstract_questions").format(
                summaries=summaries, persona=who, task=task, n_questions=per_task
            )
            found = parse_questions(llm.complete(user_prompt(step2, max_tokens=1024)).text)[:per_task]
            if not found:
                counts["unreadable_questions"] += 1
            out += [
                AbstractQuestion(f"u{u + 1}-t{t + 1}-q{i + 1}", q, who, task) for i, q in enumerate(found)
            ]
    return out, counts


def read_questions(path: Path) -> list[AbstractQuestion]:
    """Questions from a file: JSON Lines or a JSON list of ``{"question", "id"?, "persona"?, "task"?}``
    (or of strings), or plain text with one question per line."""
    if not path.is_file():
        raise InputError(f"--questions {path}: no such file; give a .jsonl, .json or .txt file of questions")
    text = path.read_text(encoding="utf-8")
    rows: list[Any]
    if path.suffix == ".jsonl":
        from .files import read_jsonl

        rows = list(read_jsonl(path))
    elif path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"--questions {path} is not valid JSON ({exc})") from exc
        rows = data if isinstance(data, list) else []
    else:
        rows = [line.strip() for line in text.splitlines() if line.strip()]
    out: list[AbstractQuestion] = []
    for i, row in enumerate(rows):
        if isinstance(row, str):
            out.append(AbstractQuestion(f"q{i + 1}", row))
        elif isinstance(row, dict) and isinstance(row.get("question"), str) and row["question"].strip():
            out.append(
                AbstractQuestion(
                    str(row.get("id", f"q{i + 1}")),
                    row["question"].strip(),
                    str(row.get("persona", "")),
                    str(row.get("task", "")),
                )
            )
        else:
            raise InputError(
                f"--questions {path}, item {i + 1}: expected a string or an object with 'question'"
            )
    if not out:
        raise InputError(f"--questions {path} holds no questions")
    return out


# -- answers and verdicts -------------------------------------------------------------------------------
def _cost(usage: Usage, seconds: float) -> dict[str, Any]:
    t = usage.total
    return {
        "calls": t.calls,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "seconds": round(seconds, 4),
    }


def answer_all(
    rag: Any,
    methods: Sequence[str],
    questions: Sequence[AbstractQuestion],
    *,
    reader: str | None,
    progress: Any,
) -> dict[str, list[dict[str, Any]]]:
    """Every method's answer to every question, with its cost."""
    answers: dict[str, list[dict[str, Any]]] = {}
    for method in methods:
        rows: list[dict[str, Any]] = []
        with progress.task(f"answers · {method}", total=len(questions)) as bar:
            for q in questions:
                t0 = time.perf_counter()
                ans = rag.query(q.text, method=method, reader=reader)
                rows.append({"qid": q.qid, "text": ans.text, **_cost(ans.usage, time.perf_counter() - t0)})
                bar.advance()
        answers[method] = rows
    return answers


def judge_all(
    judge: Any,
    methods: Sequence[str],
    questions: Sequence[AbstractQuestion],
    answers: dict[str, list[dict[str, Any]]],
    *,
    progress: Any,
) -> list[dict[str, Any]]:
    """Every pair of methods on every question, in both orders: one record per verdict."""
    from ..providers.base import user_prompt
    from ..providers.wrappers import complete_many

    jobs: list[tuple[str, str, str, str]] = []
    for i, q in enumerate(questions):
        for a_i, a in enumerate(methods):
            for b in methods[a_i + 1 :]:
                jobs += [(q.qid, a, b, str(i)), (q.qid, b, a, str(i))]
    records: list[dict[str, Any]] = []
    with progress.task("judge", total=len(jobs)) as bar:
        for start in range(0, len(jobs), 16):  # batches, so the bar moves
            batch = jobs[start : start + 16]
            requests = [
                user_prompt(
                    judge_prompt(
                        questions[int(i)].text,
                        answers[first][int(i)]["text"],
                        answers[second][int(i)]["text"],
                    ),
                    max_tokens=1024,
                )
                for _, first, second, i in batch
            ]
            for (qid, first, second, _), out in zip(batch, complete_many(judge, requests), strict=True):
                records.append(
                    {
                        "qid": qid,
                        "first": first,
                        "second": second,
                        "verdict": parse_verdict(out.text),
                        "raw": out.text,
                    }
                )
            bar.advance(len(batch))
    return records


def method_costs(answers: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per method, per query: seconds, LLM calls, prompt and completion tokens (Table 11)."""
    out: dict[str, dict[str, float]] = {}
    for method, rows in answers.items():
        n = max(len(rows), 1)
        out[method] = {
            "seconds_per_query": round(sum(r["seconds"] for r in rows) / n, 3),
            "llm_calls_per_query": round(sum(r["calls"] for r in rows) / n, 3),
            "prompt_tokens_per_query": round(sum(r["prompt_tokens"] for r in rows) / n, 1),
            "completion_tokens_per_query": round(sum(r["completion_tokens"] for r in rows) / n, 1),
        }
    return out


def run_abstract(
    data_dir: Path | str,
    subset: str,
    methods: Sequence[str],
    *,
    llm: Any = "extractive",
    judge: Any = None,
    questions_file: Path | None = None,
    summaries: str | None = None,
    personas: int = 5,
    tasks: int = 5,
    per_task: int = 5,
    limit: int | None = None,
    out_dir: Path | str = "eval-out",
    cache_dir: Path | str | None = None,
    embedder: Any = None,
    reader: str | None = None,
    builders: dict[str, dict[str, Any]] | None = None,
    progress: Any = None,
    plots: bool = True,
) -> dict[str, Any]:
    """Generate (or read) abstract questions, answer them with every method, judge every pair.

    Parameters
    ----------
    data_dir, subset : the corpus, as for ``paretorag eval`` (its own questions are not used).
    methods : at least two registered method names.
    llm : LLM spec or object: indexing, answers and question generation (the judge writes the
        questions when ``llm`` is not generative, e.g. offline ``extractive`` answers).
    judge : LLM spec or object for the verdicts (default: ``llm``); must be generative.
    questions_file : read the questions from this file instead of generating them.
    summaries : ``communities`` or ``corpus``, what the question writer reads (default:
        :func:`default_summaries`).
    personas, tasks, per_task : users, tasks per user and questions per task to generate.
    limit : keep the first ``limit`` questions.
    out_dir : where ``abstract.json``, ``abstract.md`` and ``abstract_winrates.png`` go.

    Returns
    -------
    dict
        The content of ``abstract.json``.
    """
    from ..answering.llms import make_llm
    from ..progress import NullProgress
    from ..providers.base import is_generative
    from ..rag import RAG
    from .abstract_report import write_abstract_report
    from .loaders import load_dataset
    from .runner import index_dir_for

    names = list(dict.fromkeys(methods))
    if len(names) < 2:
        raise ConfigError("head-to-head evaluation needs at least two methods, e.g. --methods vanilla,raptor")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be a positive number of questions, got {limit}")
    progress = progress or NullProgress()
    judge_llm = make_llm(judge) if isinstance(judge, str) else judge
    llm_name = llm if isinstance(llm, str) else str(getattr(llm, "name", "llm"))
    judge_name = judge if isinstance(judge, str) else str(getattr(judge_llm, "name", llm_name))
    if judge_llm is not None and not is_generative(judge_llm):
        raise ConfigError(
            f"--judge {judge_name} cannot follow the judge's instructions; use --judge openai:MODEL"
        )
    if summaries is None:
        summaries = default_summaries(names)
    if questions_file is None and summaries == "communities" and "graphrag-global" not in names:
        raise ConfigError(
            "--summaries communities reads the GraphRAG community reports: add graphrag-global to --methods, "
            "use --summaries corpus, or give --questions FILE"
        )
    out = Path(out_dir)
    ds = load_dataset(data_dir, subset)
    cache = Path(cache_dir) if cache_dir is not None else out / ".index-cache"
    index_dir = index_dir_for(cache, ds, embedder if isinstance(embedder, str) else None, llm_name)
    index_dir.mkdir(parents=True, exist_ok=True)
    gen_usage, judge_usage = Usage(), Usage()
    with RAG.open(
        index_dir, methods=names, replace_methods=True, llm=llm, embedder=embedder, builders=builders
    ) as rag:
        rag.index(ds.documents(), progress=progress)
        base = judge_llm
        if base is None and not is_generative(rag._base_llm()):
            raise ConfigError(f"--llm {llm_name} cannot judge answers; give --judge openai:MODEL")
        source = "file"
        gen_counts: dict[str, int] = {}
        if questions_file is not None:
            questions = read_questions(Path(questions_file))
            source = str(questions_file)
        else:
            writer_model = rag._base_llm()
            if not is_generative(writer_model) and judge_llm is not None:  # offline answers, a model writes
                writer_model = judge_llm
            writer = rag._llm_for(gen_usage, "abstract.questions", writer_model)
            if not is_generative(writer):
                raise ConfigError(
                    f"--llm {llm_name} cannot write questions; give --llm openai:MODEL, a generative "
                    "--judge, or --questions FILE"
                )
            window = getattr(writer_model, "context_window", None)
            # a small local model: summaries that leave room for the prompt and 1,024 tokens of answer
            budget = 12000 if not window else max(1000, min(12000, (int(window) - 1400) * 3))
            text = corpus_summaries(rag, summaries, max_chars=budget)
            questions, gen_counts = generate_questions(
                writer, text, personas=personas, tasks=tasks, per_task=per_task
            )
            source = f"generated from {summaries} summaries"
            if not questions:
                raise InputError(
                    f"{llm_name} wrote no readable questions; try a stronger --llm or --questions FILE"
                )
        questions = questions[:limit] if limit else questions
        if reader is None and not is_generative(rag._base_llm()):
            reader = "extractive"  # whole evidence sentences: the offline reader's short spans suit no essay
        answers = answer_all(rag, names, questions, reader=reader, progress=progress)
        records = judge_all(
            rag._llm_for(judge_usage, "judge", base), names, questions, answers, progress=progress
        )
    matrices = win_rates(names, (Judgment(r["qid"], r["first"], r["second"], r["verdict"]) for r in records))
    jt = judge_usage.total
    payload: dict[str, Any] = {
        "dataset": {"subset": subset, "name": ds.name, "n_passages": len(ds.passages)},
        "config": {
            "methods": names,
            "llm": llm_name,
            "judge": judge_name,
            "questions": source,
            "personas": personas,
            "tasks": tasks,
            "per_task": per_task,
            "limit": limit,
            "index_dir": str(index_dir),
        },
        "questions": [asdict(q) for q in questions],
        "generation": {"usage": gen_usage.to_json(), **gen_counts},
        "answers": answers,
        "cost": method_costs(answers),
        "judgments": records,
        "win_rates": matrices,
        "judge_cost": {
            "calls": jt.calls,
            "prompt_tokens": jt.prompt_tokens,
            "completion_tokens": jt.completion_tokens,
            "seconds": round(jt.seconds, 3),
            "cached": jt.cached,
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "abstract.json").write_text(
        json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_abstract_report(payload, out, plots=plots)
    return payload


__all__ = [
    "AbstractQuestion",
    "answer_all",
    "corpus_summaries",
    "default_summaries",
    "generate_questions",
    "judge_all",
    "method_costs",
    "parse_personas",
    "parse_questions",
    "read_questions",
    "run_abstract",
]
