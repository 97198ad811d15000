"""SQuAD v1.1 train in SQuAD JSON, rebuilt from the official site's per-article train pages.

The span reader's public train set (:func:`paretorag.training.neural_data.squad_examples`).
No complete copy of ``train-v1.1.json`` could be brought here (copies in public repositories
are Git LFS pointers, cut short, or over the size our mirror carries), but the SQuAD site's
own repository, ``rajpurkar/SQuAD-explorer`` at commit
``13f82e35b9a1fb9173f863b35f5675030646571e``, holds ``explore/1.1/train/``: one HTML page per
train article (442) and ``index.html`` with their order. Each page gives the title, the
paragraphs, the questions and their answer texts word for word; it gives no question ids
and no ``answer_start``. This module reads those pages back into SQuAD JSON:

- ids are made up (``explorer-v1.1-train-<title>-pNNN-qNN``);
- ``answer_start`` is the answer's occurrence in its paragraph, and where the text occurs
  more than once, the occurrence whose 150 characters either side share the most words with
  the question (ties: the first). Checked against 149 questions of a genuine
  ``train-v1.1.json``: 147 identical; the two others are the same string elsewhere.

The result (87,599 questions, 18,896 paragraphs, 442 articles: the official counts) has
sha256 ``7d037b5925d61dd217d79418f8146f504c3cc79441a33d2e44350162f09344bd``. SQuAD is
CC BY-SA 4.0 (Rajpurkar et al. 2016). Only the train pages are read; the dev pages beside
them are never opened::

    git -C MIRROR show 13f82e35…:explore/1.1/train/<page>.html > PAGES/<page>.html   # each page
    python -m paretorag.training.squad_pages PAGES squad-v1.1-train.from-explorer.json
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import InputError

_ORDER = re.compile(r'href="/SQuAD-explorer/explore/1\.1/train/([^"]+)\.html"')
_TITLE = re.compile(r'<h1 id="title">(.*?)</h1>', re.S)
_PARA = re.compile(
    r'<div class="row"><div class="col-md-6"><pre>(.*?)</pre></div><div class="col-md-6 rightCol">(.*)', re.S
)
_QA = re.compile(
    r'<div class="qa-wrap"><p> <strong class="question">(.*?)</strong></p><ol class="list-unstyled">(.*?)</ol></div>',
    re.S,
)
_ANSWER = re.compile(r'<li><p><i>Answer \d+: </i><span class="answer">(.*?)</span></p></li>', re.S)
# pinned, not one of textutil's lists: which of a repeated answer's occurrences is chosen, and so
# the rebuilt file's sha256, depends on it
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "is",
        "was",
        "were",
        "are",
        "be",
        "been",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
        "that",
        "this",
        "as",
        "it",
        "its",
    ]
)
WINDOW = 150  # characters either side of an occurrence compared with the question


def _words(text: str) -> set[str]:
    return {t for t in re.findall(r"\w+", text.lower()) if t not in _STOP}


def locate(context: str, answer: str, question: str) -> tuple[int, int]:
    """``(answer_start, occurrences)``: the occurrence nearest the question's words (-1, 0 when absent)."""
    starts = [m.start() for m in re.finditer(re.escape(answer), context)]
    if len(starts) <= 1:
        return (starts[0], 1) if starts else (-1, 0)
    q = _words(question)
    scores = [len(_words(context[max(0, s - WINDOW) : s + len(answer) + WINDOW]) & q) for s in starts]
    return starts[scores.index(max(scores))], len(starts)


def read_page(page: str) -> tuple[dict[str, Any], Counter[str]]:
    """One article page as a SQuAD article (``title``, ``paragraphs``) and counts of what was found."""
    found = _TITLE.search(page)
    if found is None:
        raise InputError('not a SQuAD-explorer article page (no <h1 id="title">)')
    title = html.unescape(found.group(1))
    stats: Counter[str] = Counter()
    paragraphs = []
    for pi, part in enumerate(page.split('<div class="para-wrap">')[1:]):
        m = _PARA.match(part)
        if m is None:
            stats["paragraph_unread"] += 1
            continue
        context = html.unescape(m.group(1))
        qas = []
        for qi, (q_html, answers_html) in enumerate(_QA.findall(m.group(2))):
            question = html.unescape(q_html)
            answers = []
            for a_html in _ANSWER.findall(answers_html):
                text = html.unescape(a_html)
                start, n = locate(context, text, question)
                if start < 0 and text.strip() != text:
                    text = text.strip()
                    start, n = locate(context, text, question)
                stats["answer_absent" if n == 0 else "answer_unique" if n == 1 else "answer_repeated"] += 1
                answers.append({"answer_start": start, "text": text})
            qas.append(
                {  # the key order of the file whose sha256 the docstring gives
                    "answers": answers,
                    "question": question,
                    "id": f"explorer-v1.1-train-{title}-p{pi:03d}-q{qi:02d}",
                }
            )
        paragraphs.append({"context": context, "qas": qas})
    return {"title": title, "paragraphs": paragraphs}, stats


def rebuild(pages: Path | str, out: Path | str) -> dict[str, int]:
    """Every article of ``pages/index.html`` in its order, written to ``out``; the counts."""
    folder = Path(pages)
    index = folder / "index.html"
    if not index.is_file():
        raise InputError(f"{index} not found; give the folder of the explore/1.1/train/ pages")
    stats: Counter[str] = Counter()
    data = []
    for name in _ORDER.findall(index.read_text(encoding="utf-8")):
        path = folder / f"{html.unescape(name).replace('&', '%26')}.html"
        if not path.is_file():
            path = folder / f"{name}.html"
        try:
            article, counts = read_page(path.read_text(encoding="utf-8"))
        except (OSError, InputError) as exc:
            raise InputError(f"{path}: {exc}") from exc
        data.append(article)
        stats.update(counts)
    Path(out).write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    stats["articles"] = len(data)
    stats["questions"] = sum(len(p["qas"]) for a in data for p in a["paragraphs"])
    return dict(stats)


def main(argv: list[str] | None = None) -> None:
    """``python -m paretorag.training.squad_pages PAGES OUT``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: python -m paretorag.training.squad_pages PAGES_DIR OUT.json")
    print(json.dumps(rebuild(args[0], args[1])))


if __name__ == "__main__":
    main()
