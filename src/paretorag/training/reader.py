"""Train the reader's candidate ranker on the train splits only (``paretorag train-reader``).

For each training question the recommended retrieval method fetches the top ``k``
passages from the set's own corpus (indexed in the same cache as ``paretorag eval``),
the reader's stages turn them into candidates and features, and a candidate is a
positive when it is the gold answer (SQuAD-normalized exact match, or token F1 of at
least ``positive_f1`` with the gold answer or an alias). Choice, yes/no, why and how
questions are answered by other stages and are left out.

The training sets are the train splits in ``shared/data`` and nothing else:
``musique_train``, ``hotpotqa_train``, the 2Wiki question set (``2wikimultihopqa``,
disjoint from its dev file) and ``popqa[400:]`` (``popqa[:400]`` is the dev split).
MuSiQue's single-hop sub-questions (its ``question_decomposition``, with ``#1`` replaced
by the first hop's answer) are training questions too: free-form questions whose answer
sits in one passage, which 2Wiki's templates do not teach.

LightGBM trains a binary classifier with one thread and ``deterministic=True``, so the
same data gives the same model text (the sha256 in ``reader.json``). A fifth of the
training questions is held out to stop the boosting and to choose the abstention
threshold (:func:`choose_threshold`) on out-of-sample probabilities.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..answering.reader.candidates import FEATURES, admitted, features, gather, read_passages
from ..answering.reader.core import passages_of
from ..answering.reader.question import analyze
from ..answering.reader.ranker import META_FILE, MODEL_FILE
from ..answering.reader.spans import question_entities
from ..errors import ConfigError
from ..eval import metrics as M
from ..eval.loaders import load_dataset
from ..eval.runner import index_dir_for
from ..eval.schema import Question
from ..progress import NullProgress, Progress
from ..rag import RAG

TRAIN_SETS: tuple[tuple[str, int, int | None], ...] = (
    ("musique_train", 0, None),
    ("hotpotqa_train", 0, None),
    ("2wikimultihopqa", 0, None),
    ("popqa", 400, None),
)
PARAMS: dict[str, Any] = {
    "objective": "binary",
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 50,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "lambda_l2": 10.0,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 0,
    "verbose": -1,
}
ROUNDS = 1000  # at most; early stopping on the held-out training questions picks the number
VALIDATION = (
    0.2  # share of training questions (by a hash of their id) held out to stop and to set the threshold
)
SPAN_EXCLUDED = ("choice", "yesno")


@dataclass
class TrainingData:
    """Feature rows, labels, the question of each row, and per-question facts for the threshold."""

    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    qid: list[str] = field(default_factory=list)
    answerable: list[bool] = field(default_factory=list)  # gold answer in the retrieved passages
    sets: dict[str, int] = field(default_factory=dict)


def labels(texts: list[str], golds: list[str], positive_f1: float) -> np.ndarray:
    """1 for a candidate that is the gold answer (EM, or F1 >= ``positive_f1``)."""
    return np.array(
        [float(M.exact_match(t, golds) or M.token_f1(t, golds) >= positive_f1) for t in texts],
        dtype=np.float32,
    )


def _fill_hops(question: str, earlier: list[str]) -> str:
    """``#k`` in a MuSiQue sub-question replaced by the answer of hop ``k`` (when it came before)."""

    def fill(m: re.Match[str]) -> str:
        k = int(m.group(1))
        return earlier[k - 1] if 0 < k <= len(earlier) else m.group(0)

    return re.sub(r"#(\d+)", fill, question)


def hop_questions(data_dir: Path | str, subset: str) -> list[Question]:
    """MuSiQue's single-hop sub-questions as questions of their own ("Who was the first president of
    #1?" with ``#1`` replaced by the first hop's answer): more training signal for the last hop."""
    if not subset.startswith("musique"):
        return []
    path = Path(data_dir) / "musique" / f"{subset}.json"
    out: list[Question] = []
    for rec in json.loads(path.read_text(encoding="utf-8")):
        hops = rec.get("question_decomposition") or []
        answers = [str(h.get("answer", "")) for h in hops]
        for i, hop in enumerate(hops):
            text = _fill_hops(str(hop.get("question", "")), answers[:i])
            if "#" in text or ">>" in text or not answers[i]:
                continue
            out.append(Question(qid=f"{rec.get('id', '')}#hop{i + 1}", text=text, answers=[answers[i]]))
    return out


def collect(
    data_dir: Path | str,
    *,
    method: str = "entity-walk",
    k: int = 5,
    cache_dir: Path | str = "eval-out/.index-cache",
    sets: tuple[tuple[str, int, int | None], ...] = TRAIN_SETS,
    limit: int | None = None,
    positive_f1: float = 0.8,
    hops: bool = True,
    progress: Progress | None = None,
) -> TrainingData:
    """Retrieve, read and label every training question (span questions only); with ``hops``,
    MuSiQue's sub-questions too (:func:`hop_questions`)."""
    progress = progress or NullProgress()
    data = TrainingData()
    for subset, start, stop in sets:
        ds = load_dataset(data_dir, subset)
        questions = ds.questions[start:stop]
        if limit is not None:
            questions = questions[:limit]
        if hops:
            questions = [*questions, *hop_questions(data_dir, subset)[: limit if limit is not None else None]]
        index_dir = index_dir_for(Path(cache_dir), ds, None, "extractive")
        index_dir.mkdir(parents=True, exist_ok=True)
        used = 0
        with RAG.open(index_dir, methods=[method], replace_methods=True, llm="extractive") as rag:
            rag.index(ds.documents(), progress=progress)
            with progress.task(f"reader features · {subset}", total=len(questions)) as bar:
                for q in questions:
                    bar.advance()
                    info = analyze(q.text, question_entities(q.text))
                    if info.expected in SPAN_EXCLUDED or info.wh in ("why", "how"):
                        continue
                    _, items = rag.retrieve(q.text, method, k=k)
                    reading = read_passages(info, passages_of(items[:k]), None)
                    cands = admitted(info.expected, gather(reading))
                    if not cands:
                        continue
                    data.x.append(features(info, reading, cands))
                    data.y.append(labels([c.text for c in cands], q.answers, positive_f1))
                    data.qid.append(f"{subset}:{q.qid}")
                    data.answerable.append(bool(M.context_recall([it.text for it in items[:k]], q.answers)))
                    used += 1
        data.sets[subset] = used
    return data


def choose_threshold(
    top: np.ndarray, correct: np.ndarray, answerable: np.ndarray, max_abstain: float
) -> float:
    """The threshold that best tells unanswerable questions from answerable ones (the largest gap
    between the shares withheld, Youden's J) while withholding at most ``max_abstain`` of the
    answerable questions."""
    ans, unans = top[answerable], top[~answerable]
    if not len(ans):
        return 0.0
    best, best_gap = 0.0, -1.0
    for t in np.round(np.arange(0.0, 1.0, 0.005), 3):
        withheld = float(np.mean(ans < t))
        if withheld > max_abstain:
            break
        gap = (float(np.mean(unans < t)) if len(unans) else 0.0) - withheld
        if gap > best_gap:
            best, best_gap = float(t), gap
    return best


FOLDS = 5


def _held_out(qid: str) -> bool:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF < VALIDATION


def _fold(qid: str) -> int:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest()[8:16], 16) % FOLDS


def train(
    data: TrainingData, out_dir: Path | str, *, max_abstain: float = 0.15, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Fit the ranker, choose the threshold, write ``ranker.txt`` and ``reader.json``.

    A fifth of the training questions (chosen by a hash of their id) is held out: the
    number of boosting rounds stops where their log-loss stops improving. The abstention
    threshold is chosen on out-of-fold probabilities of every training question (five
    folds, that number of rounds). The final model is then fitted on every training
    question with that number of rounds.
    """
    import lightgbm

    if not data.x:
        raise ConfigError("no training questions with candidates; check --data and the retrieval method")
    held = np.array([_held_out(q) for q in data.qid])
    if held.all() or not held.any():
        raise ConfigError("too few training questions to hold some out; train on more questions")

    def stack(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = np.flatnonzero(mask)
        return np.vstack([data.x[i] for i in idx]), np.concatenate([data.y[i] for i in idx])

    x_fit, y_fit = stack(~held)
    x_val, y_val = stack(held)
    names = list(FEATURES)
    fit_set = lightgbm.Dataset(x_fit, y_fit, feature_name=names)
    val_set = lightgbm.Dataset(x_val, y_val, feature_name=names, reference=fit_set)
    probe = lightgbm.train(
        PARAMS,
        fit_set,
        num_boost_round=rounds,
        valid_sets=[val_set],
        callbacks=[lightgbm.early_stopping(50, verbose=False)],
    )
    best = int(probe.best_iteration or rounds)
    # out-of-fold probabilities of every training question (5 folds by the same hash) set the
    # threshold: the single held-out fifth is too few questions to place it stably
    fold = np.array([_fold(q) for q in data.qid])
    tops = np.zeros(len(data.x))
    correct = np.zeros(len(data.x), dtype=bool)
    for f in range(FOLDS):
        x_f, y_f = stack(fold != f)
        fitted = lightgbm.train(PARAMS, lightgbm.Dataset(x_f, y_f, feature_name=names), num_boost_round=best)
        for i in np.flatnonzero(fold == f):
            p = fitted.predict(data.x[i], num_threads=1)
            j = int(np.argmax(p))
            tops[i], correct[i] = float(p[j]), bool(data.y[i][j])
    answerable = np.array(data.answerable)
    threshold = choose_threshold(tops, correct, answerable, max_abstain)
    ok = correct[held]
    x, y = stack(np.ones(len(data.x), dtype=bool))
    model = lightgbm.train(PARAMS, lightgbm.Dataset(x, y, feature_name=names), num_boost_round=best)
    text = model.model_to_string()
    meta = {
        "features": names,
        "threshold": threshold,
        "params": PARAMS,
        "rounds": best,
        "train_sets": data.sets,
        "rows": len(y),
        "positives": int(y.sum()),
        "questions": len(data.x),
        "held_out_questions": int(held.sum()),
        "held_out_top1_accuracy": round(float(ok.mean()), 4),
        "held_out_top1_accuracy_answerable": round(float(ok[answerable[held]].mean()), 4)
        if answerable[held].any()
        else None,
        "held_out_answerable": round(float(answerable[held].mean()), 4),
        "out_of_fold_top1_accuracy_answerable": round(float(correct[answerable].mean()), 4),
        "out_of_fold_abstain_answerable": round(float(np.mean(tops[answerable] < threshold)), 4),
        "out_of_fold_abstain_unanswerable": round(float(np.mean(tops[~answerable] < threshold)), 4)
        if (~answerable).any()
        else None,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "lightgbm": lightgbm.__version__,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_FILE).write_text(text, encoding="utf-8")
    (out / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


__all__ = ["PARAMS", "TRAIN_SETS", "TrainingData", "choose_threshold", "collect", "labels", "train"]
