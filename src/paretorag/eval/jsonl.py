"""The generic JSONL benchmark format, for evaluating on your own data.

A folder with two files (documented in ``docs/evaluation.md``)::

    corpus.jsonl     {"id": "p1", "title": "Paris", "text": "...", "presplit": true}
    questions.jsonl  {"id": "q1", "question": "...", "answers": ["..."], "gold": ["p1"]}

Corpus fields: ``text`` (required), ``title`` (default ""), ``id`` (default: the
title; referenced by ``gold`` and ``context``), ``presplit`` (default false: the
index chunks the text; true keeps the record as one chunk).

Question fields: ``question`` (required), ``answers`` (list) or ``answer``
(string), ``id`` (default: the line number), ``options`` (multiple choice) with
``answer_index`` (0-based) or an ``answer`` equal to one option, ``gold`` (corpus
ids or titles of the supporting passages), ``context`` (corpus ids shipped with
the question, for ``--corpus own``), ``meta`` (any object).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from .files import read_jsonl
from .schema import Dataset, Passage, Question, unique_passages


def _str_list(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise InputError(f"{where}: {key!r} must be a string or a list of strings")
    return [str(v) for v in value]


def load_jsonl(folder: Path) -> Dataset:
    """Read ``questions.jsonl`` and ``corpus.jsonl`` from ``folder`` (see module docstring)."""
    qpath, cpath = folder / "questions.jsonl", folder / "corpus.jsonl"
    by_ref: dict[str, str] = {}
    passages: list[Passage] = []
    for i, rec in enumerate(read_jsonl(cpath)):
        where = f"{cpath} line {i + 1}"
        if not isinstance(rec.get("text"), str) or not rec["text"].strip():
            raise InputError(f"{where}: 'text' must be a non-empty string")
        title = str(rec.get("title", ""))
        p = Passage.make(
            title, rec["text"], presplit=bool(rec.get("presplit", False)), source=f"{cpath.name}#{i}"
        )
        passages.append(p)
        for ref in (str(rec["id"]) if "id" in rec else None, title or None):
            if ref is not None:
                by_ref.setdefault(ref, p.key)
    questions: list[Question] = []
    for i, rec in enumerate(read_jsonl(qpath)):
        where = f"{qpath} line {i + 1}"
        text = rec.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: 'question' must be a non-empty string")
        answers = _str_list(rec.get("answers", rec.get("answer")), where, "answers")
        refs = {k: _str_list(rec.get(k), where, k) for k in ("gold", "context")}
        unknown = [r for rs in refs.values() for r in rs if r not in by_ref]
        if unknown:
            raise InputError(f"{where}: {unknown[:3]} are not ids or titles of records in {cpath}")
        options = _str_list(rec.get("options"), where, "options") or None
        meta = dict(rec.get("meta") or {})
        if options:
            idx = rec.get("answer_index")
            if idx is None and answers and answers[0] in options:
                idx = options.index(answers[0])
            if not isinstance(idx, int) or not 0 <= idx < len(options):
                raise InputError(
                    f"{where}: multiple choice needs 'answer_index' (0-based) or an answer among options"
                )
            meta["gold_option"] = idx
            answers = [options[idx]]
        if not answers:
            raise InputError(f"{where}: give 'answers' (a list) or 'answer' (a string)")
        questions.append(
            Question(
                qid=str(rec.get("id", i + 1)),
                text=text.strip(),
                answers=answers,
                options=options,
                gold_keys=list(dict.fromkeys(by_ref[r] for r in refs["gold"])),
                context_keys=list(dict.fromkeys(by_ref[r] for r in refs["context"] + refs["gold"])),
                meta=meta,
            )
        )
    return Dataset(
        folder.name or "jsonl", questions, unique_passages(passages), {"questions_file": str(qpath)}
    )


__all__ = ["load_jsonl"]
