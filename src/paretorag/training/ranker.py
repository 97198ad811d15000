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

The long-document ranker (``paretorag train-ranker --long``, :func:`collect_long`,
:func:`train_long`) is one lambdarank model over the same candidates on indexes of long
documents, with :data:`~paretorag.retrieval.ranking.LONG_FEATURES`. It trains on the
``train`` part (:meth:`paretorag.eval.schema.Dataset.split`) of :data:`LONG_TRAIN_SETS`
(GraphRAG-Bench medical), where a chunk's label is how much of the reference answer's
content words it holds (this copy has no evidence field; 0-3: under a quarter, a quarter,
half, three quarters), and on SQuAD v1.1 train articles (:func:`squad_articles`, given with
``--squad FILE``: whole Wikipedia articles, one document each, and their factoid
questions), where the chunks holding the answer are relevant. ``nq_leval`` and QuALITY are
never trained on, so their figures are out of sample; for a multiple-choice question
:func:`long_labels` uses QuALITY's answer-passage rule
(:func:`paretorag.eval.metrics.option_passages`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..eval.loaders import load_dataset
from ..eval.metrics import content_words, context_recall, option_passages
from ..eval.runner import index_dir_for
from ..eval.schema import Dataset
from ..lgbm import lightgbm, sha256_text
from ..progress import NullProgress, Progress
from ..rag import RAG
from ..retrieval.methods.fusion import Fusion
from ..retrieval.methods.pipeline import Pipeline
from ..retrieval.operators.fusion import (
    FIRST_HOP,
    SECOND_HOP,
    Candidates,
    gather,
    second_hop,
)
from ..retrieval.operators.fusion_long import long_features
from ..retrieval.query import IndexView, State
from ..retrieval.ranking import (
    FIRST_FILE,
    LONG_FEATURES,
    LONG_FILE,
    LONG_GROUPS,
    LONG_ONLY,
    META_FILE,
    SECOND_FILE,
)
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


@contextmanager
def _training_index(cache_dir: Path | str, ds: Dataset, progress: Progress) -> Iterator[IndexView]:
    """``ds`` indexed for ``fusion`` in ``paretorag eval``'s cache (reused when it is there)."""
    index_dir = index_dir_for(Path(cache_dir), ds, None, "extractive")
    index_dir.mkdir(parents=True, exist_ok=True)
    with RAG.open(index_dir, methods=["fusion"], llm="extractive") as rag:
        rag.index(ds.documents(), progress=progress)
        yield rag.view


def _candidates(
    view: IndexView, first_steps: Pipeline, question: str
) -> tuple[Candidates, np.ndarray] | None:
    """The method's candidates for ``question`` (its dense and walk steps, then the BM25 top)
    and the question's vector; None when dense retrieval finds nothing."""
    state = State(question)
    first_steps.run(view, state)
    dense, walk = state.get("dense"), state.get("walk")
    if not len(dense):
        return None
    vector = state.vector(view)
    return gather(view, question, vector, dense, walk), vector


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
        with _training_index(cache_dir, ds, progress) as view:
            doc_ids = np.asarray(view.chunks.doc_ids)
            titles = np.asarray(view.chunks.titles)
            known_titles = set(view.chunks.titles)
            with progress.task(f"ranker features · {subset}", total=len(questions)) as bar:
                for q in questions:
                    bar.advance()
                    found = _candidates(view, first_steps, q.text)
                    if found is None:
                        continue
                    cands = found[0]
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


# long-document sets trained on: only their train parts (Dataset.split); nq_leval is held out
LONG_TRAIN_SETS: tuple[str, ...] = ("medical@train",)
LONG_ROUNDS = 200


@dataclass
class LongData:
    """Every long-document training question's candidate features and graded labels."""

    features: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    qid: list[str] = field(default_factory=list)
    sets: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # files read beside shared/data -> sha256


def long_labels(question: Any, texts: list[str], doc_keys: list[str]) -> np.ndarray:
    """Graded relevance (0-3) of candidate chunk texts for a long-document question (module docstring)."""
    if question.options:
        own = set(question.context_keys)
        hits = option_passages(texts, question.options, int(question.meta["gold_option"]))
        return np.array([float(h and key in own) for h, key in zip(hits, doc_keys, strict=True)])
    evidence = [w for e in question.meta.get("evidence_texts") or [] if (w := content_words(e))]
    if evidence:
        words = [content_words(t) for t in texts]
        cover = np.array([np.mean([len(e & w) / len(e) for e in evidence]) for w in words])
        return np.floor(np.clip(cover * 4, 0, 3))
    return np.array([context_recall([t], question.answers) for t in texts])


SQUAD_ARTICLES = 40  # SQuAD train articles indexed for the long-document ranker (every 11th)
SQUAD_PER_ARTICLE = 30  # questions kept per article (evenly spread over its paragraphs)


def squad_articles(
    path: Path | str, *, articles: int = SQUAD_ARTICLES, per_article: int = SQUAD_PER_ARTICLE
) -> Dataset:
    """SQuAD v1.1 train (SQuAD JSON) as long documents: ``articles`` articles spread over the
    file, each one document (its paragraphs joined by blank lines), and ``per_article``
    of its questions spread over its paragraphs."""
    from ..eval.schema import Passage, Question

    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--squad {path}: not a readable SQuAD JSON file ({exc})") from exc
    step = max(len(records) // max(articles, 1), 1)
    passages: list[Passage] = []
    questions: list[Question] = []
    for rec in records[::step][:articles]:
        title = str(rec["title"]).replace("_", " ")
        paragraphs = [p for p in rec["paragraphs"] if p.get("context")]
        text = "\n\n".join(str(p["context"]).strip() for p in paragraphs)
        doc = Passage.make(title, text, presplit=False, source=f"{Path(path).name}#{title}")
        passages.append(doc)
        qas = [qa for p in paragraphs for qa in p.get("qas", []) if qa.get("answers")]
        for qa in qas[:: max(len(qas) // max(per_article, 1), 1)][:per_article]:
            answers = list(dict.fromkeys(str(a["text"]) for a in qa["answers"]))
            questions.append(Question(str(qa["id"]), str(qa["question"]), answers, context_keys=[doc.key]))
    return Dataset(name="squad_articles", questions=questions, passages=passages, meta={"file": str(path)})


def collect_long(
    data_dir: Path | str,
    *,
    cache_dir: Path | str = "eval-out/.index-cache",
    sets: tuple[str, ...] = LONG_TRAIN_SETS,
    squad: Path | str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> LongData:
    """Index each long-document set (or reuse ``paretorag eval``'s index) and gather features and labels."""
    progress = progress or NullProgress()
    data = LongData()
    first_steps = Pipeline(steps=Fusion().default_steps()[:2])
    datasets: list[tuple[str, Dataset | None]] = [(subset, None) for subset in sets]
    if squad is not None:
        datasets.append(("squad_articles", squad_articles(squad)))
        data.files[Path(squad).name] = hashlib.sha256(Path(squad).read_bytes()).hexdigest()
    for subset, given in datasets:
        ds = given if given is not None else load_dataset(data_dir, subset)
        questions = ds.questions[:limit] if limit is not None else ds.questions
        kept = 0
        with _training_index(cache_dir, ds, progress) as view:
            texts = view.chunks.texts
            doc_ids = view.chunks.doc_ids
            with progress.task(f"long ranker features · {subset}", total=len(questions)) as bar:
                for q in questions:
                    bar.advance()
                    found = _candidates(view, first_steps, q.text)
                    if found is None:
                        continue
                    cands, vector = found
                    rows = [int(r) for r in cands.rows]
                    labels = long_labels(q, [texts[r] for r in rows], [doc_ids[r] for r in rows])
                    if not labels.any():
                        continue
                    data.features.append(long_features(view, cands, q.text, vector))
                    data.labels.append(labels)
                    data.qid.append(f"{subset}:{q.qid}")
                    kept += 1
        data.sets[subset] = kept
    if not data.features:
        raise ConfigError(f"no long-document training questions with a relevant chunk under {data_dir}")
    return data


def _hit_at_1(scores: list[np.ndarray], data: LongData) -> float:
    """Share of the questions whose best-scored chunk is relevant (label > 0: any relevant chunk counts)."""
    hits = [(y > 0).astype(np.float64) for y in data.labels]
    return round(recall_at(scores, hits, [1] * len(hits), 1), 2)


def _dense_hit_at_1(data: LongData) -> float:
    """:func:`_hit_at_1` of the dense order."""
    return _hit_at_1([-x[:, FIRST_HOP.index("dense_rank")] for x in data.features], data)


def _oof_hit_at_1(features: list[np.ndarray], data: LongData, rounds: int) -> float:
    """:func:`_hit_at_1` of the model's out-of-fold scores."""
    folds = np.array([_fold(q) for q in data.qid])
    oof: list[np.ndarray] = [np.zeros(0)] * len(features)
    for f in range(FOLDS):
        train_i = np.flatnonzero(folds != f)
        m = _fit([features[i] for i in train_i], [data.labels[i] for i in train_i], rounds)
        for i in np.flatnonzero(folds == f):
            oof[i] = np.asarray(m.predict(features[i], num_threads=1), dtype=np.float64)
    return _hit_at_1(oof, data)


def long_ablation(
    data: LongData, *, groups: dict[str, tuple[str, ...]] | None = None, rounds: int = LONG_ROUNDS
) -> dict[str, float]:
    """Out-of-fold hit@1 of the long-document ranker with all its features, without each group
    of :data:`LONG_GROUPS` (its columns held constant, so no tree splits on them) and with the
    first-hop features alone; ``dense`` is the dense order's."""
    groups = LONG_GROUPS if groups is None else groups
    out = {"all features": _oof_hit_at_1(data.features, data, rounds)}
    for name, cols in {**groups, "every long-document feature": LONG_ONLY}.items():
        idx = [LONG_FEATURES.index(c) for c in cols]
        held = [x.copy() for x in data.features]
        for x in held:
            x[:, idx] = 0.0
        out[f"without {name}"] = _oof_hit_at_1(held, data, rounds)
    out["dense"] = _dense_hit_at_1(data)
    return out


def train_long(data: LongData, out: Path | str, *, rounds: int = LONG_ROUNDS) -> dict[str, Any]:
    """Fit the long-document ranker; write ``long.txt`` and ``ranker.json`` to ``out``."""
    model = _fit(data.features, data.labels, rounds)
    oof_hit = _oof_hit_at_1(data.features, data, rounds)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    text = model.model_to_string()
    (folder / LONG_FILE).write_text(text, encoding="utf-8")
    meta: dict[str, Any] = {
        "features": list(LONG_FEATURES),
        "sha256": sha256_text(text),
        "sets": data.sets,
        "files": data.files,
        "questions": len(data.features),
        "candidates": int(sum(len(y) for y in data.labels)),
        "params": PARAMS,
        "rounds": rounds,
        "folds": FOLDS,
        # a relevant chunk (label > 0) first: out-of-fold model order against the dense order
        "oof_hit_at_1": oof_hit,
        "dense_hit_at_1": _dense_hit_at_1(data),
    }
    (folder / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


__all__ = [
    "FOLDS",
    "LONG_GROUPS",
    "LONG_TRAIN_SETS",
    "PARAMS",
    "ROUNDS",
    "LongData",
    "RankingData",
    "collect",
    "collect_long",
    "long_ablation",
    "long_labels",
    "recall_at",
    "squad_articles",
    "train",
    "train_long",
]
