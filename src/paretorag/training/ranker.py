"""Train the retrieval ranker of ``fusion`` on the train splits only (``paretorag train-ranker``).

For each training question, the ``fusion`` method's first two steps (dense top 50, the
entity walk's top 30) and the BM25 top 30 give the candidates
(:func:`paretorag.retrieval.operators.fusion.gather`); a candidate is relevant when its document is
one of the question's gold passages. The training sets are the train splits in
``shared/data`` and nothing else (the reader's: :data:`paretorag.training.reader.TRAIN_SETS`):
``musique_train``, ``hotpotqa_train``, the 2Wiki question set (disjoint from its dev file)
and ``popqa[400:]``. The 2Wiki question set ships no gold passage keys; its gold passages
are those titled with a subject of the question's evidence triples (``Lothair II``,
``Ermengarde of Tours`` for "When did Lothair II's mother die?").

Two LightGBM lambdarank models (LambdaMART, Burges 2010), one query group per question:

1. the first stage on the first-hop features of every training question;
2. the second stage on the first-hop and second-hop features, where the second-hop
   features are computed from the first stage's *out-of-fold* scores (five folds by
   question), so that the second stage learns from first-stage orders as good as those it
   will see on new questions, not from the first stage's fit to its own training data.

LightGBM runs with ``deterministic=True`` and a fixed seed, so the same data gives the
same model text (the sha256s in ``ranker.json``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..eval.loaders import load_dataset
from ..eval.runner import index_dir_for
from ..lgbm import lightgbm, sha256_text
from ..progress import NullProgress, Progress
from ..rag import RAG
from ..retrieval.methods.fusion import Fusion
from ..retrieval.methods.pipeline import Pipeline
from ..retrieval.operators.fusion import FIRST_HOP, SECOND_HOP, Candidates, gather, second_hop
from ..retrieval.query import State
from ..retrieval.ranking import FIRST_FILE, META_FILE, SECOND_FILE
from .reader import TRAIN_SETS

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambdarank_truncation_level": 10,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "seed": 0,
    "verbose": -1,
}
ROUNDS = 300
FOLDS = 5


@dataclass
class RankingData:
    """Every training question's candidates and relevance labels."""

    candidates: list[Candidates] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    qid: list[str] = field(default_factory=list)
    n_gold: list[int] = field(default_factory=list)
    sets: dict[str, int] = field(default_factory=dict)


def collect(
    data_dir: Path | str,
    *,
    cache_dir: Path | str = "eval-out/.index-cache",
    sets: tuple[tuple[str, int, int | None], ...] = TRAIN_SETS,
    limit: int | None = None,
    progress: Progress | None = None,
) -> RankingData:
    """Index each training set (or reuse ``paretorag eval``'s cached index) and gather candidates."""
    progress = progress or NullProgress()
    data = RankingData()
    first_steps = Pipeline(steps=Fusion().default_steps()[:2])  # the method's dense and walk steps
    for subset, start, stop in sets:
        ds = load_dataset(data_dir, subset)
        questions = [q for q in ds.questions[start:stop] if q.gold_keys or q.meta.get("evidence")]
        if limit is not None:
            questions = questions[:limit]
        index_dir = index_dir_for(Path(cache_dir), ds, None, "extractive")
        index_dir.mkdir(parents=True, exist_ok=True)
        with RAG.open(index_dir, methods=["fusion"], llm="extractive") as rag:
            rag.index(ds.documents(), progress=progress)
            view = rag.view
            doc_ids = np.asarray(view.chunks.doc_ids)
            titles = np.asarray(view.chunks.titles)
            known_titles = set(view.chunks.titles)
            with progress.task(f"ranker features · {subset}", total=len(questions)) as bar:
                for q in questions:
                    bar.advance()
                    state = State(q.text)
                    first_steps.run(view, state)
                    dense, walk = state.get("dense"), state.get("walk")
                    if not len(dense):
                        continue
                    cands = gather(view, q.text, state.vector(view), dense, walk)
                    if q.gold_keys:
                        gold = set(q.gold_keys)
                        hits = [d in gold for d in doc_ids[cands.rows]]
                    else:  # 2Wiki's question set: the passages about the evidence triples' subjects
                        gold = evidence_titles(q.meta["evidence"]) & known_titles
                        hits = [t in gold for t in titles[cands.rows]]
                    if not gold:
                        continue
                    data.candidates.append(cands)
                    data.labels.append(np.array(hits, dtype=np.float64))
                    data.qid.append(f"{subset}:{q.qid}")
                    data.n_gold.append(len(gold))
        data.sets[subset] = len(questions)
    if not data.candidates:
        raise ConfigError(f"no training questions with gold passages found under {data_dir}")
    return data


def evidence_titles(evidence: Any) -> set[str]:
    """The subjects of 2Wiki's evidence triples ``[subject, relation, object]``: the titles of the
    passages a question needs (its question set ships no gold passage keys)."""
    if not isinstance(evidence, list):
        return set()
    return {str(t[0]) for t in evidence if isinstance(t, list | tuple) and t}


def _fold(qid: str) -> int:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest()[:8], 16) % FOLDS


def _fit(x: list[np.ndarray], y: list[np.ndarray], rounds: int) -> Any:
    lgb = lightgbm("training the ranker")
    groups = [len(a) for a in y]
    dataset = lgb.Dataset(np.concatenate(x), np.concatenate(y), group=groups)
    return lgb.train(PARAMS, dataset, num_boost_round=rounds)


def recall_at(scores: list[np.ndarray], labels: list[np.ndarray], n_gold: list[int], k: int) -> float:
    """Mean fraction of gold passages among the ``k`` best-scored candidates (R@k)."""
    out = [
        float(y[np.argsort(-s, kind="stable")[:k]].sum()) / g
        for s, y, g in zip(scores, labels, n_gold, strict=True)
        if g
    ]
    return 100.0 * float(np.mean(out)) if out else 0.0


def train(data: RankingData, out: Path | str, *, rounds: int = ROUNDS) -> dict[str, Any]:
    """Fit both stages, write ``first.txt``, ``second.txt`` and ``ranker.json`` to ``out``."""
    first_x = [c.first for c in data.candidates]
    first = _fit(first_x, data.labels, rounds)
    folds = np.array([_fold(q) for q in data.qid])
    oof: list[np.ndarray] = [np.zeros(0)] * len(data.candidates)
    for f in range(FOLDS):
        train_i = np.flatnonzero(folds != f)
        model = _fit([first_x[i] for i in train_i], [data.labels[i] for i in train_i], rounds)
        for i in np.flatnonzero(folds == f):
            oof[i] = np.asarray(model.predict(first_x[i], num_threads=1), dtype=np.float64)
    second_x = [second_hop(c, s) for c, s in zip(data.candidates, oof, strict=True)]
    second = _fit(second_x, data.labels, rounds)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    texts = {FIRST_FILE: first.model_to_string(), SECOND_FILE: second.model_to_string()}
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    meta: dict[str, Any] = {
        "first_features": list(FIRST_HOP),
        "second_features": [*FIRST_HOP, *SECOND_HOP],
        "first_sha256": sha256_text(texts[FIRST_FILE]),
        "second_sha256": sha256_text(texts[SECOND_FILE]),
        "sets": data.sets,
        "questions": len(data.candidates),
        "candidates": int(sum(len(y) for y in data.labels)),
        "params": PARAMS,
        "rounds": rounds,
        "folds": FOLDS,
        "oof_first_stage_r5": round(recall_at(oof, data.labels, data.n_gold, 5), 2),
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


__all__ = ["FOLDS", "PARAMS", "ROUNDS", "RankingData", "collect", "recall_at", "train"]
