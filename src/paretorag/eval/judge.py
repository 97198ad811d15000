"""The LLM judge: head-to-head verdicts on abstract questions and answer accuracy against a reference.

Head to head (unified framework §7.1 Evaluation Metric, §7.3 Exp. 1, Figures 6-10; GraphRAG
(Edge et al.) §3.4; LightRAG §4.1): a judge reads a question and two answers and names the
better one on Comprehensiveness, Diversity, Empowerment and Overall. Every pair is judged in
both orders, so a judge that prefers the first position gives each method half of the wins.

:func:`parse_verdict` reads the judge's answer, JSON or free text, and never raises: a
criterion it cannot read is ``None`` and counts as *invalid*. :func:`win_rates` turns the
verdicts into one matrix per criterion, row method against column method, in percent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CRITERIA = ("Comprehensiveness", "Diversity", "Empowerment", "Overall")
PROMPTS = Path(__file__).resolve().parents[1] / "data" / "prompts"


@cache
def load_prompt(name: str) -> str:
    """A prompt template from ``paretorag/data/prompts/<name>.txt``, without its leading ``#`` lines."""
    lines = (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines).strip() + "\n"


def judge_prompt(question: str, answer1: str, answer2: str) -> str:
    """The head-to-head prompt (``abstract_judge.txt``) for one ordered pair of answers."""
    return load_prompt("abstract_judge").format(question=question, answer1=answer1, answer2=answer2)


# -- verdict parsing -------------------------------------------------------------------------------
_ANSWER = re.compile(r"\banswer\s*[#:]?\s*([12])\b", re.IGNORECASE)
_TIE = re.compile(r"\b(tie|draw|equal(?:ly)?|neither|both)\b", re.IGNORECASE)
_WINNER = re.compile(
    r"(?:winner|better|prefer(?:red)?|wins?|chooses?|choice)\W{0,12}(?:is\W{0,4})?answer\s*([12])\b"
    r"|\banswer\s*([12])\s*(?:is\s*(?:the\s*)?(?:winner|better|stronger|more)|wins)\b",
    re.IGNORECASE,
)
_KEYS = {c.lower(): c for c in CRITERIA} | {"overall winner": "Overall", "overall_winner": "Overall"}


def _side(value: Any) -> float | None:
    """``"Answer 2"`` -> 2.0, ``1`` -> 1.0, a tie -> 1.5; None when unreadable."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if str(key).strip().lower() in ("winner", "better", "choice", "verdict"):
                return _side(inner)
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value in (1, 2) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text in ("1", "2"):
        return float(text)
    sides = {m.group(1) for m in _ANSWER.finditer(text)}
    if len(sides) == 1:
        return float(sides.pop())
    if not sides and _TIE.search(text):
        return 1.5
    return None


def _from_json(text: str) -> dict[str, float | None] | None:
    from ..graphs.kg_prompts import parse_json

    data = parse_json(text)
    if not isinstance(data, dict):
        return None
    out: dict[str, float | None] = {}
    for key, value in data.items():
        name = _KEYS.get(str(key).strip().lower())
        if name is not None and out.get(name) is None:
            out[name] = _side(value)
    return out or None


def _from_text(text: str) -> dict[str, float | None]:
    """Free text: the segment after each criterion's name, up to the next one."""
    found = sorted(
        (m.start(), m.end(), name)
        for name in CRITERIA
        for m in re.finditer(rf"\b{name}\b", text, re.IGNORECASE)
    )
    out: dict[str, float | None] = {}
    for i, (_, end, name) in enumerate(found):
        if out.get(name) is not None:
            continue
        stop = next((s for s, _, n in found[i + 1 :] if n != name), len(text))
        segment = text[end:stop]
        explicit = {a or b for a, b in _WINNER.findall(segment)}
        mentioned = {m.group(1) for m in _ANSWER.finditer(segment)}
        if len(explicit) == 1:
            out[name] = float(explicit.pop())
        elif len(mentioned) == 1 and not explicit:
            out[name] = float(mentioned.pop())
        elif not mentioned and _TIE.search(segment):
            out[name] = 1.5
        else:
            out.setdefault(name, None)
    return out


def parse_verdict(text: str) -> dict[str, float | None]:
    """The judge's choice per criterion: 1.0 (Answer 1), 2.0 (Answer 2), 1.5 (a tie) or None (invalid).

    JSON first (``{"Comprehensiveness": {"Winner": "Answer 1", ...}, ...}``, fenced or with
    trailing commas, ``"Overall Winner"`` accepted for Overall), then free text ("Diversity:
    Answer 2 is better"). A criterion that names both answers without saying which wins, or
    neither, is None. Never raises and never evaluates the text.

    Examples
    --------
    >>> parse_verdict('{"Comprehensiveness": {"Winner": "Answer 2"}, "Overall": "Answer 1"}')["Overall"]
    1.0
    >>> parse_verdict("I cannot decide.")["Diversity"] is None
    True
    """
    text = text if isinstance(text, str) else ""
    parsed = _from_json(text) or {}
    if any(parsed.get(c) is None for c in CRITERIA):
        loose = _from_text(text) if not parsed else {}
        for c in CRITERIA:
            if parsed.get(c) is None:
                parsed[c] = loose.get(c)
    return {c: parsed.get(c) for c in CRITERIA}


# -- win rates ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgment:
    """One verdict: ``first`` was shown as Answer 1, ``second`` as Answer 2."""

    qid: str
    first: str
    second: str
    verdict: Mapping[str, float | None]


def win_rates(methods: Sequence[str], judgments: Iterable[Judgment]) -> dict[str, Any]:
    """Win-rate matrices: ``rates[criterion][row][col]`` = percent of valid verdicts row won over col.

    A verdict for Answer 1 scores 1 for ``first`` and 0 for ``second``; a tie 0.5 each;
    the diagonal is 50. Rows and columns of one pair come from the same verdicts, so
    ``rates[c][a][b] + rates[c][b][a] == 100``. ``invalid[criterion]`` counts unreadable
    verdicts and ``valid[criterion][row][col]`` the verdicts each cell averages; a pair with
    no valid verdict is None.
    """
    names = list(methods)
    score: dict[str, dict[tuple[str, str], list[float]]] = {c: {} for c in CRITERIA}
    invalid = dict.fromkeys(CRITERIA, 0)
    for j in judgments:
        for c in CRITERIA:
            side = j.verdict.get(c)
            if side is None:
                invalid[c] += 1
                continue
            first_score = 2.0 - float(side)  # 1 -> 1.0, 2 -> 0.0, 1.5 -> 0.5
            score[c].setdefault((j.first, j.second), []).append(first_score)
            score[c].setdefault((j.second, j.first), []).append(1.0 - first_score)
    rates: dict[str, dict[str, dict[str, float | None]]] = {}
    valid: dict[str, dict[str, dict[str, int]]] = {}
    for c in CRITERIA:
        rates[c], valid[c] = {}, {}
        for a in names:
            rates[c][a], valid[c][a] = {}, {}
            for b in names:
                got = score[c].get((a, b), [])
                valid[c][a][b] = len(got)
                if a == b:
                    rates[c][a][b] = 50.0
                else:
                    rates[c][a][b] = round(100.0 * sum(got) / len(got), 1) if got else None
    return {"criteria": list(CRITERIA), "methods": names, "rates": rates, "valid": valid, "invalid": invalid}


# -- answer accuracy against a reference (GraphRAG-Bench) ------------------------------------------------
def correct_prompt(question: str, reference: str, prediction: str) -> str:
    """The accuracy prompt (``answer_correct.txt``)."""
    return load_prompt("answer_correct").format(question=question, reference=reference, prediction=prediction)


_YES = re.compile(r"\b(correct|true|yes)\b", re.IGNORECASE)
_NO = re.compile(r"\b(incorrect|not correct|false|no|wrong)\b", re.IGNORECASE)


def parse_correct(text: str) -> float | None:
    """The accuracy judge's answer: 1.0, 0.0, or None when it says neither (or both)."""
    from ..graphs.kg_prompts import parse_json

    data = parse_json(text) if isinstance(text, str) else None
    if isinstance(data, dict):
        value = next((v for k, v in data.items() if str(k).strip().lower() == "correct"), None)
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
            return float(value.strip().lower() in ("true", "yes"))
    text = text if isinstance(text, str) else ""
    no = bool(_NO.search(text))
    yes = bool(_YES.search(_NO.sub(" ", text)))  # "correct" outside "incorrect" / "not correct"
    if no and not yes:
        return 0.0
    if yes and not no:
        return 1.0
    return None


def judge_correct(llm: Any, question: str, reference: str, prediction: str) -> float | None:
    """Ask ``llm`` whether ``prediction`` answers ``question`` as ``reference`` does (None: unreadable)."""
    from ..providers.base import user_prompt

    if not prediction.strip():
        return 0.0
    out = llm.complete(user_prompt(correct_prompt(question, reference, prediction), max_tokens=32))
    return parse_correct(out.text)


__all__ = [
    "CRITERIA",
    "Judgment",
    "correct_prompt",
    "judge_correct",
    "judge_prompt",
    "load_prompt",
    "parse_correct",
    "parse_verdict",
    "win_rates",
]
