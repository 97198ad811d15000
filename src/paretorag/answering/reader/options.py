"""Multiple-choice questions: the lettered option the passages support.

A question that lists its options, one per line or inline ("Why did Leo hire the cook?
(A) ... (B) ... (C) ... (D) ..."), is answered with one of them, as QuALITY asks (Pang et al.
2022, "QuALITY: Question Answering with Long Input Texts, Yes!", §2: four options, one
correct). The reader cannot entail an option from a story; it reads which option's own words
the passages say near the question:

1. the :data:`NEAR_SENTENCES` sentences of the passages most similar to the question's stem
   (cosine of the embedder's vectors; term overlap without an embedder);
2. each option's content words (stemmed, stopwords out; those of the stem left out: every
   option repeats them), weighted by their IDF over the passages' sentences (BM25's, as
   :func:`~paretorag.providers.extractive.term_overlap` weighs the question's terms);
3. the option's score is the weighted share of its words found in those sentences; the best
   option answers, cited by the near sentence holding most of it. Options that score alike
   (none of whose words are there, too) are told apart by meaning: the stem followed by each
   option, against the near sentences (cosine, the closest one); the answer's confidence is
   then 0. Without an embedder they are not told apart, and the answer is withheld.

Chosen on QuALITY's train part (``quality@train``, 137 questions; docs/reader.md): the share
of words over every sentence of the passages reads 25% (chance), over the 10 nearest 35%,
over 3, 5 or 20 nearest 30-32%.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...providers.base import Embedder
from ...providers.extractive import Candidates, content_terms

NEAR_SENTENCES = 10  # sentences read for the options' words (chosen on quality@train)
# "(A) text" at the start of a line or after a space; the letters must run A, B, C, ...
_LETTER = re.compile(r"(?:^|(?<=\s))\(([A-H])\)[ \t]*", re.MULTILINE)


def lettered_options(question: str) -> tuple[str, tuple[str, ...]]:
    """The stem and the option texts of a question listing lettered options ``(A)``, ``(B)``, ...

    At least two options, lettered in order from ``(A)``; otherwise ``(question, ())``.

    >>> lettered_options("Who cooks? (A) Leo (B) the captain")
    ('Who cooks?', ('Leo', 'the captain'))
    """
    marks = list(_LETTER.finditer(question))
    start = next((i for i, m in enumerate(marks) if m.group(1) == "A"), None)
    if start is None:
        return question, ()
    run = [marks[start]]
    for m in marks[start + 1 :]:
        if ord(m.group(1)) == ord(run[-1].group(1)) + 1:
            run.append(m)
    if len(run) < 2:
        return question, ()
    ends = [m.start() for m in run[1:]] + [len(question)]
    options = tuple(" ".join(question[m.end() : e].split()) for m, e in zip(run, ends, strict=True))
    stem = question[: run[0].start()].strip()
    if not stem or not all(options):
        return question, ()
    return stem, options


@dataclass(frozen=True)
class OptionReading:
    """Each option's score, the chosen one (or None) and the sentence that supports it."""

    scores: npt.NDArray[np.float64]
    chosen: int | None
    sentence: int | None  # index into the candidates' sentences
    margin: float  # the chosen option's score minus the runner-up's
    near: tuple[int, ...] = ()  # the sentences nearest the stem, nearest first


def read_options(
    stem: str, options: tuple[str, ...], cands: Candidates, embedder: Embedder | None = None
) -> OptionReading:
    """Score ``options`` against the candidate sentences of the passages (module docstring);
    options that tie are told apart by the ``embedder``'s closest near sentence to the stem
    followed by the option, when one is given."""
    n = len(cands.sentences)
    scores = np.zeros(len(options))
    if not n:
        return OptionReading(scores, None, None, 0.0)
    closeness = cands.dense if np.any(cands.dense) else cands.terms
    near = [int(i) for i in np.argsort(-closeness, kind="stable")[:NEAR_SENTENCES]]
    terms = [content_terms(s) for s in cands.sentences]
    near_terms = set().union(*(terms[i] for i in near))
    asked = content_terms(stem)
    words = [(content_terms(o) - asked) or content_terms(o) for o in options]
    vocab = sorted(set().union(*words))
    df = {t: sum(t in s for s in terms) for t in vocab}
    idf = {t: float(np.log1p((n - df[t] + 0.5) / (df[t] + 0.5))) for t in vocab}
    for j, ws in enumerate(words):
        total = sum(idf[t] for t in ws)
        scores[j] = sum(idf[t] for t in ws if t in near_terms) / total if total else 0.0
    order = np.argsort(-scores, kind="stable")
    best = int(order[0])
    margin = float(scores[best] - (scores[order[1]] if len(options) > 1 else 0.0))
    if margin <= 0:
        tied = [j for j in range(len(options)) if scores[j] == scores[best]]
        if embedder is None:
            return OptionReading(scores, None, None, margin, tuple(near))
        sents = np.asarray(embedder.embed([cands.sentences[i] for i in near]), dtype=np.float64)
        asked_as = np.asarray(embedder.embed([f"{stem} {options[j]}" for j in tied]), dtype=np.float64)
        best = tied[int(np.argmax((asked_as @ sents.T).max(axis=1)))]
    mine = words[best]
    support = max(near, key=lambda i: (sum(idf[t] for t in mine & terms[i]), closeness[i]))
    return OptionReading(scores, best, support, margin, tuple(near))


__all__ = ["NEAR_SENTENCES", "OptionReading", "lettered_options", "read_options"]
