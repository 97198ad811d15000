"""Loaders: every benchmark format in ``shared/data`` (and a generic JSONL format) -> :class:`Dataset`.

Each loader reads one subset, resolves the gold paragraphs of every question to
corpus passage keys (:class:`~paretorag.eval.schema.KeyResolver`) and returns the
full corpus; :func:`load_dataset` optionally restricts the corpus to the questions'
own passages. Formats are described in each data folder's README.md and, for the
generic format, in ``docs/evaluation.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from .files import read_jsonl
from .schema import Dataset, KeyResolver, Passage, Question, unique_passages


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise InputError(
            f"{path} not found; --data must be the benchmark folder that holds musique/, hotpotqa/, "
            "2wikimultihopqa/, popqa/, quality/, nq_leval/ and graphrag_bench_medical/ (e.g. shared/data)"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON ({exc}); restore the original file") from exc


_read_jsonl = read_jsonl  # the name the loaders below use


def _get(rec: Any, key: str, where: str) -> Any:
    if not isinstance(rec, dict) or key not in rec:
        raise InputError(f"{where}: record has no {key!r} field; is this the right file for the subset?")
    return rec[key]


def _as_list(data: Any, path: Path) -> list[Any]:
    if not isinstance(data, list):
        raise InputError(f"{path} must hold a JSON list, got {type(data).__name__}")
    return data


def _corpus_list(path: Path) -> list[Passage]:
    rows = _as_list(_read_json(path), path)
    return unique_passages(
        Passage.make(
            str(_get(r, "title", f"{path}[{i}]")),
            str(_get(r, "text", f"{path}[{i}]")),
            source=f"{path.name}#{i}",
        )
        for i, r in enumerate(rows)
    )


def _finish(name: str, questions: list[Question], passages: list[Passage], **meta: Any) -> Dataset:
    missing = sum(1 for q in questions for k in q.gold_keys if not k)
    if missing:
        raise InputError(f"{name}: {missing} gold passages could not be matched to the corpus")
    return Dataset(name=name, questions=questions, passages=passages, meta=dict(meta))


# -- MuSiQue (dev records and HippoRAG train), PopQA: {paragraphs:[{title, text, is_supporting}]} ---------
def _musique(name: str, qfile: Path, cfile: Path) -> Dataset:
    passages = _corpus_list(cfile)
    resolver = KeyResolver(passages)
    questions: list[Question] = []
    unresolved = 0
    for i, rec in enumerate(_as_list(_read_json(qfile), qfile)):
        where = f"{qfile}[{i}]"
        gold: list[str] = []
        own: list[str] = []
        for p in _get(rec, "paragraphs", where):
            key = resolver.resolve(str(p["title"]), str(p["paragraph_text"]))
            if key is None:
                unresolved += 1
                continue
            own.append(key)
            if p.get("is_supporting"):
                gold.append(key)
        answers = [str(_get(rec, "answer", where)), *[str(a) for a in rec.get("answer_aliases", [])]]
        hops = [str(d.get("question", "")) for d in rec.get("question_decomposition", [])]
        questions.append(
            Question(
                qid=str(_get(rec, "id", where)),
                text=str(_get(rec, "question", where)),
                answers=answers,
                gold_keys=list(dict.fromkeys(gold)),
                context_keys=list(dict.fromkeys(own)),
                meta={"hops": len(hops), "type": str(rec.get("id", "")).split("__")[0]},
            )
        )
    return _finish(
        name, questions, passages, questions_file=str(qfile), corpus_file=str(cfile), unresolved=unresolved
    )


def _popqa(name: str, qfile: Path, cfile: Path) -> Dataset:
    passages = _corpus_list(cfile)
    resolver = KeyResolver(passages)
    questions: list[Question] = []
    for i, rec in enumerate(_as_list(_read_json(qfile), qfile)):
        where = f"{qfile}[{i}]"
        raw = _get(rec, "possible_answers", where)
        try:
            answers = json.loads(raw) if isinstance(raw, str) else list(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: possible_answers is not a JSON-encoded list ({exc})") from exc
        gold: list[str] = []
        own: list[str] = []
        for p in _get(rec, "paragraphs", where):
            key = resolver.resolve(str(p["title"]), str(p["text"]))
            if key is not None:
                own.append(key)
                if p.get("is_supporting"):
                    gold.append(key)
        questions.append(
            Question(
                qid=str(_get(rec, "id", where)),
                text=str(_get(rec, "question", where)),
                answers=[str(a) for a in answers],
                gold_keys=list(dict.fromkeys(gold)),
                context_keys=list(dict.fromkeys(own)),
                meta={"prop": rec.get("prop", ""), "s_pop": rec.get("s_pop")},
            )
        )
    return _finish(name, questions, passages, questions_file=str(qfile), corpus_file=str(cfile))


# -- HotpotQA / 2WikiMultihopQA records: {context:[[title,[sentences]]], supporting_facts:[[title, i]]} ---
def _hotpot_like(name: str, qfile: Path, cfile: Path, joiner: str) -> Dataset:
    corpus = _read_json(cfile)
    if isinstance(corpus, dict):  # HippoRAG v1 train corpus: {title: [sentences]}
        passages = unique_passages(
            Passage.make(str(t), joiner.join(map(str, s)), source=f"{cfile.name}#{t}")
            for t, s in corpus.items()
        )
    else:
        passages = _corpus_list(cfile)
    resolver = KeyResolver(passages)
    questions: list[Question] = []
    unresolved = 0
    for i, rec in enumerate(_as_list(_read_json(qfile), qfile)):
        where = f"{qfile}[{i}]"
        support = {str(t) for t, _ in _get(rec, "supporting_facts", where)}
        gold: list[str] = []
        own: list[str] = []
        for title, sentences in _get(rec, "context", where):
            key = resolver.resolve(str(title), joiner.join(map(str, sentences)))
            if key is None:
                unresolved += 1
                continue
            own.append(key)
            if title in support:
                gold.append(key)
        questions.append(
            Question(
                qid=str(_get(rec, "_id", where)),
                text=str(_get(rec, "question", where)),
                answers=[str(_get(rec, "answer", where))],
                gold_keys=list(dict.fromkeys(gold)),
                context_keys=list(dict.fromkeys(own)),
                meta={"type": rec.get("type", ""), "level": rec.get("level", "")},
            )
        )
    return _finish(
        name, questions, passages, questions_file=str(qfile), corpus_file=str(cfile), unresolved=unresolved
    )


def _twowiki_1000(name: str, qfile: Path, cfile: Path) -> Dataset:
    passages = _corpus_list(cfile)
    questions = [
        Question(
            qid=str(_get(rec, "id", f"{qfile}[{i}]")),
            text=str(_get(rec, "question", f"{qfile}[{i}]")),
            answers=[str(_get(rec, "answer", f"{qfile}[{i}]"))],
            meta={"type": rec.get("question_type", ""), "evidence": rec.get("evidence", [])},
        )
        for i, rec in enumerate(_as_list(_read_json(qfile), qfile))
    ]
    return _finish(name, questions, passages, questions_file=str(qfile), corpus_file=str(cfile))


# -- long documents: QuALITY, NQ (L-Eval JSONL, one document per line), GraphRAG-Bench medical ------------
_OPTION = re.compile(r"\n\s*\(([A-D])\)\s?")


def parse_options(instruction: str) -> tuple[str, list[str]]:
    """Split an L-Eval QuALITY instruction into its stem and option texts ``(A)``..``(D)``."""
    parts = _OPTION.split(instruction)
    stem = parts[0].strip()
    options = [parts[j + 1].strip() for j in range(1, len(parts) - 1, 2)]
    return stem, options


def _leval_title(text: str) -> str:
    h1 = re.search(r"<H1>(.*?)</H1>", text[:2000])
    if h1:
        return h1.group(1).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return " ".join(first.split())[:120]


def _leval(name: str, path: Path, multiple_choice: bool) -> Dataset:
    passages: list[Passage] = []
    questions: list[Question] = []
    for d, rec in enumerate(_read_jsonl(path)):
        where = f"{path} line {d + 1}"
        text = str(_get(rec, "input", where))
        doc = Passage.make(_leval_title(text), text, presplit=False, source=f"{path.name}#{d}")
        passages.append(doc)
        for j, (instr, out) in enumerate(
            zip(_get(rec, "instructions", where), _get(rec, "outputs", where), strict=True)
        ):
            qid = f"{name}-{d}-{j}"
            if not multiple_choice:
                questions.append(
                    Question(qid, str(instr).strip(), [str(out).strip()], context_keys=[doc.key])
                )
                continue
            stem, options = parse_options(str(instr))
            letter = re.match(r"\s*\(([A-D])\)", str(out))
            if letter is None or len(options) < 2:
                raise InputError(
                    f"{where}, question {j}: expected options (A)-(D) and an answer like '(B) ...'"
                )
            idx = ord(letter.group(1)) - ord("A")
            questions.append(
                Question(
                    qid,
                    stem,
                    [options[idx]],
                    options=options,
                    context_keys=[doc.key],
                    meta={"gold_option": idx, "gold_letter": letter.group(1)},
                )
            )
    return _finish(name, questions, unique_passages(passages), questions_file=str(path))


def _medical(name: str, cfile: Path, qfile: Path) -> Dataset:
    rows = _as_list(_read_json(cfile), cfile)
    passages = unique_passages(
        Passage.make(
            str(r.get("corpus_name", f"medical-{i}")),
            str(_get(r, "context", f"{cfile}[{i}]")),
            presplit=False,
            source=f"{cfile.name}#{i}",
        )
        for i, r in enumerate(rows)
    )
    keys = [p.key for p in passages]
    questions: list[Question] = []
    from_answer = 0
    for i, rec in enumerate(_as_list(_read_json(qfile), qfile)):
        where = f"{qfile}[{i}]"
        answer = str(_get(rec, "answer", where))
        evidence = _evidence_texts(rec.get("evidence"))
        if not evidence:  # this copy of the benchmark has no evidence field: the reference answer stands in
            evidence, from_answer = [answer], from_answer + 1
        questions.append(
            Question(
                qid=str(_get(rec, "id", where)),
                text=str(_get(rec, "question", where)),
                answers=[answer],
                context_keys=keys,
                meta={"type": rec.get("question_type", ""), "evidence_texts": evidence},
            )
        )
    return _finish(
        name,
        questions,
        passages,
        questions_file=str(qfile),
        corpus_file=str(cfile),
        evidence_from_answer=from_answer,
    )


def _evidence_texts(value: Any) -> list[str]:
    """GraphRAG-Bench's ``evidence``: a string or a list of strings (or of string lists)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, list):
                item = " ".join(str(x) for x in item)
            if isinstance(item, str) and item.strip():
                out.append(item)
        return out
    return []


# -- registry ----------------------------------------------------------------------------------------------
Loader = Callable[[Path], Dataset]

SUBSETS: dict[str, tuple[str, Loader]] = {
    "musique_dev200": (
        "MuSiQue-Ans dev records, 2-4 hops (gold: is_supporting)",
        lambda d: _musique(
            "musique_dev200", d / "musique/musique_dev200.json", d / "musique/musique_dev200_corpus.json"
        ),
    ),
    "musique_train": (
        "MuSiQue train, HippoRAG v1 subset (for tuning)",
        lambda d: _musique(
            "musique_train", d / "musique/musique_train.json", d / "musique/musique_train_corpus.json"
        ),
    ),
    "hotpotqa_dev200": (
        "HotpotQA dev distractor (gold: supporting_facts titles)",
        lambda d: _hotpot_like(
            "hotpotqa_dev200",
            d / "hotpotqa/hotpotqa_dev200.json",
            d / "hotpotqa/hotpotqa_dev200_corpus.json",
            "",
        ),
    ),
    "hotpotqa_train": (
        "HotpotQA train, HippoRAG v1 subset; corpus {title: sentences}",
        lambda d: _hotpot_like(
            "hotpotqa_train",
            d / "hotpotqa/hotpotqa_train.json",
            d / "hotpotqa/hotpotqa_train_corpus.json",
            "",
        ),
    ),
    "2wikimultihopqa_dev164": (
        "2WikiMultihopQA dev records (gold: supporting_facts titles)",
        lambda d: _hotpot_like(
            "2wikimultihopqa_dev164",
            d / "2wikimultihopqa/2wikimultihopqa_dev164.json",
            d / "2wikimultihopqa/2wikimultihopqa_dev164_corpus.json",
            " ",
        ),
    ),
    "2wikimultihopqa": (
        "2WikiMultihopQA HippoRAG 1000-question set + corpus (no gold passages)",
        lambda d: _twowiki_1000(
            "2wikimultihopqa",
            d / "2wikimultihopqa/2wikimultihopqa_questions.json",
            d / "2wikimultihopqa/2wikimultihopqa_corpus.json",
        ),
    ),
    "popqa": (
        "PopQA, HippoRAG 2 file; corpus rebuilt from its paragraphs",
        lambda d: _popqa("popqa", d / "popqa/popqa.json", d / "popqa/popqa_corpus.json"),
    ),
    "quality": (
        "QuALITY long-story multiple choice (L-Eval), whole documents",
        lambda d: _leval("quality", d / "quality/quality.jsonl", multiple_choice=True),
    ),
    "nq_leval": (
        "Natural Questions over long Wikipedia pages (L-Eval), whole documents",
        lambda d: _leval("nq_leval", d / "nq_leval/natural_question.jsonl", multiple_choice=False),
    ),
    "medical": (
        "GraphRAG-Bench medical: one long text, 4 question types (evidence: `evidence`, else the answer)",
        lambda d: _medical(
            "medical",
            d / "graphrag_bench_medical/medical.json",
            d / "graphrag_bench_medical/medical_questions.json",
        ),
    ),
}


def available_subsets() -> list[str]:
    """Registered subset names (plus ``jsonl`` / ``jsonl:DIR`` for the generic format)."""
    return [*SUBSETS, "jsonl"]


def load_dataset(
    data_dir: Path | str,
    subset: str,
    *,
    limit: int | None = None,
    corpus: str = "full",
    shuffle_corpus: int | None = None,
    limit_per_type: int | None = None,
) -> Dataset:
    """Load one subset into the common schema.

    Parameters
    ----------
    data_dir : Path or str
        The benchmark folder (``shared/data``), or for ``jsonl`` the folder holding
        ``questions.jsonl`` and ``corpus.jsonl``.
    subset : str
        A name from :data:`SUBSETS`, ``jsonl`` or ``jsonl:DIR``; ``NAME@dev`` or
        ``NAME@train`` keeps that part of its questions (:meth:`Dataset.split`).
    limit : int, optional
        Keep the first ``limit`` questions.
    corpus : {"full", "own"}
        ``full`` (default): the whole corpus of the subset. ``own``: only the
        passages shipped with the kept questions (fast smoke tests).
    shuffle_corpus : int, optional
        Shuffle the corpus with this seed before indexing (:meth:`Dataset.shuffled`).
    limit_per_type : int, optional
        Keep the first ``limit_per_type`` questions of each question type (before ``limit``).

    Returns
    -------
    Dataset
    """
    from .jsonl import load_jsonl

    if limit is not None and limit <= 0:
        raise ConfigError(f"limit must be a positive number of questions, got {limit}")
    if corpus not in ("full", "own"):
        raise ConfigError(f"corpus must be 'full' or 'own', got {corpus!r}")
    data = Path(data_dir)
    subset, _, part = subset.partition("@")
    if subset == "jsonl" or subset.startswith("jsonl:"):
        folder = Path(subset[6:]) if subset.startswith("jsonl:") else data
        ds = load_jsonl(folder if folder.is_absolute() or folder.exists() else data / folder)
    elif subset in SUBSETS:
        ds = SUBSETS[subset][1](data)
    else:
        raise ConfigError(f"unknown subset {subset!r}; available: {', '.join(available_subsets())}")
    if part:
        ds = ds.split(part)
    ds = ds.head_per_type(limit_per_type).head(limit)
    return (ds.restricted() if corpus == "own" else ds).shuffled(shuffle_corpus)


__all__ = ["SUBSETS", "available_subsets", "load_dataset", "parse_options"]
