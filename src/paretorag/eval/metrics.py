"""Evaluation metrics, each as a small pure function over one question.

Retrieval
    :func:`recall_at_k` returns the three Recall@k definitions in use:
    ``fraction`` (mean fraction of gold passages retrieved; HippoRAG / HippoRAG 2,
    the headline), ``all`` (every gold passage retrieved; strict multi-hop
    completeness) and ``any`` (at least one; EA-GraphRAG). They count *distinct
    gold documents among the first k distinct retrieved documents*: several chunks
    of one document count once, so a method cannot fill its top-k with one page.
    :func:`context_recall` is G2ConS's CR: a normalized gold answer occurs in the
    retrieved context. :func:`evidence_recall` (GraphRAG-Bench's evidence recall, by
    words): the share of each evidence text's content words found in the retrieved
    context, averaged over the evidence texts.

Answers
    SQuAD normalization (lower case, punctuation and the articles a/an/the removed,
    whitespace collapsed) for :func:`exact_match` and :func:`token_f1`;
    :func:`contain_match` (EA-GraphRAG's contain-match accuracy, on whole tokens);
    :func:`choice_accuracy` for multiple choice; :func:`rouge_l` (rouge-score).
    Every answer metric takes the best over the gold answer and its aliases.

Cost
    :func:`latency_summary` (p50 / p95 / mean).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import MissingDependencyError
from ..textutil import EVIDENCE_STOPWORDS

KS = (1, 2, 5, 10)
RECALL_KINDS = ("fraction", "all", "any")

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lower case, drop punctuation and articles, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 when the normalized prediction equals a normalized gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(golds)))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: str | Iterable[str]) -> float:
    """SQuAD token F1, the maximum over gold answers (0.0 with no gold answers)."""
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in _golds(golds)), default=0.0)


def _contains(haystack: str, golds: Iterable[str]) -> bool:
    hay = f" {normalize_answer(haystack)} "
    for g in golds:
        norm = normalize_answer(g)
        if norm and f" {norm} " in hay:
            return True
    return False


def contain_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 when a normalized gold answer occurs in the normalized prediction as whole tokens.

    Whole tokens ("10" does not match "2010"); a gold answer that normalizes to the
    empty string never matches.
    """
    return float(_contains(prediction, _golds(golds)))


def context_recall(contexts: Sequence[str], golds: str | Iterable[str]) -> float:
    """G2ConS context recall: 1.0 when a normalized gold answer occurs in the retrieved texts.

    Each passage is checked on its own (an answer is not allowed to straddle two
    passages); matching is :func:`contain_match`'s.
    """
    gold_list = _golds(golds)
    return float(any(_contains(text, gold_list) for text in contexts))


def content_words(text: str) -> set[str]:
    """The normalized words of ``text`` without stop words (the unit of :func:`evidence_recall`)."""
    return {w for w in normalize_answer(text).split() if w not in EVIDENCE_STOPWORDS}


def evidence_recall(contexts: Sequence[str], evidence: Iterable[str]) -> float | None:
    """Mean over the evidence texts of the share of their content words found in the contexts.

    GraphRAG-Bench scores retrieval by how much of a question's evidence the retrieved
    context holds; this is its lexical form (no LLM): 1.0 when every content word of every
    evidence text occurs somewhere in the retrieved texts. None when there is no evidence.
    """
    found: set[str] = set()
    for text in contexts:
        found |= content_words(text)
    shares = [len(words & found) / len(words) for e in evidence if (words := content_words(e))]
    return float(np.mean(shares)) if shares else None


def option_passages(texts: Sequence[str], options: Sequence[str], gold: int) -> list[bool]:
    """Which of ``texts`` hold a multiple-choice question's answer, by its options' words.

    A text holds the answer when it has at least half of the gold option's content words
    (:func:`content_words`; an option of fewer than two content words labels nothing) and a
    larger share of them than of any other option's: the passage a reader would need to
    pick the gold option over the others. QuALITY's answer passage (``option_passage@k``).
    """
    opts = [content_words(o) for o in options]
    if not 0 <= gold < len(opts) or len(opts[gold]) < 2:
        return [False] * len(texts)
    out: list[bool] = []
    for text in texts:
        words = content_words(text)
        shares = [len(o & words) / max(len(o), 1) for o in opts]
        best_other = max((x for j, x in enumerate(shares) if j != gold), default=0.0)
        out.append(shares[gold] >= 0.5 and shares[gold] > best_other)
    return out


_LETTER_PATTERNS = (
    re.compile(r"^\s*\(([A-Z])\)"),  # "(B) ..."
    re.compile(r"^\s*([A-Z])\s*(?:[.):]|$)"),  # "B", "B.", "B)", "B:"
    re.compile(r"\b(?i:answer)\s*(?i:is)?\s*:?\s*\(?([A-Z])\)?(?:[\s.)]|$)"),  # "the answer is B"
)


def parse_choice(prediction: str, options: Sequence[str]) -> int | None:
    """The option a free-text prediction picks (0-based), or None.

    A leading letter ``(B)``, ``B``, ``B.``, ``B)`` or "the answer is B" wins;
    otherwise the option with the highest token F1 against the prediction (None
    when every option scores 0). A leading "A " starting a sentence is not a letter.
    """
    for pattern in _LETTER_PATTERNS:
        m = pattern.search(prediction)
        if m:
            idx = ord(m.group(1).upper()) - ord("A")
            if 0 <= idx < len(options):
                return idx
    scores = [token_f1(prediction, opt) for opt in options]
    best = int(np.argmax(scores)) if scores else 0
    return best if scores and scores[best] > 0 else None


def choice_accuracy(prediction: str, options: Sequence[str], gold_index: int) -> float:
    """Multiple-choice accuracy of one prediction (see :func:`parse_choice`)."""
    return float(parse_choice(prediction, options) == gold_index)


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:
        raise MissingDependencyError(
            "ROUGE-L needs the rouge-score package: pip install rouge-score"
        ) from exc
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, golds: str | Iterable[str]) -> float:
    """ROUGE-L F-measure (rouge-score, Porter stemming), the maximum over gold answers."""
    scorer = _rouge_scorer()
    return max((float(scorer.score(g, prediction)["rougeL"].fmeasure) for g in _golds(golds)), default=0.0)


def first_distinct(doc_ids: Iterable[str]) -> list[str]:
    """Document ids in retrieval order, each kept at its first occurrence (empty ids dropped)."""
    return [d for d in dict.fromkeys(doc_ids) if d]


def recall_at_k(doc_ids: Sequence[str], gold: Iterable[str], k: int) -> dict[str, float] | None:
    """The three Recall@k values for one question, or None when it has no gold passages.

    Parameters
    ----------
    doc_ids : sequence of str
        Retrieved document ids, best first (repeats allowed: chunks of one document).
    gold : iterable of str
        Gold document ids.
    k : int
        Cut-off, in distinct documents.

    Returns
    -------
    dict or None
        ``{"fraction": hits / n_gold, "all": hits == n_gold, "any": hits > 0}``.
    """
    gold_set = set(gold)
    if not gold_set:
        return None
    hits = len(gold_set.intersection(first_distinct(doc_ids)[:k]))
    return {"fraction": hits / len(gold_set), "all": float(hits == len(gold_set)), "any": float(hits > 0)}


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None (None when there are none)."""
    vals = [float(v) for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean in milliseconds (numpy's linear-interpolation percentiles)."""
    if not seconds:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
    }


__all__ = [
    "KS",
    "RECALL_KINDS",
    "choice_accuracy",
    "contain_match",
    "content_words",
    "context_recall",
    "evidence_recall",
    "exact_match",
    "first_distinct",
    "latency_summary",
    "mean",
    "normalize_answer",
    "option_passages",
    "parse_choice",
    "recall_at_k",
    "rouge_l",
    "token_f1",
]
