"""The evaluation runner: one index per data set and configuration, every method on every question.

:func:`run_eval` loads a subset, builds (or reuses) its index under a cache
directory keyed by the corpus fingerprint, the embedder and the LLM, runs each
method on each question (retrieval at depth ``max(ks)``; generation unless
``retrieval_only``), and writes ``results.json``, ``results.md`` and the Pareto
plots (:mod:`paretorag.eval.report`). Re-runs reuse the index, its embedding
cache and its LLM response cache.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..progress import NullProgress, Progress
from ..rag import RAG
from ..retrieval.methods import Retrieval, get_method
from ..types import ContextItem, Usage
from . import metrics as M
from .cost import base_ledger, method_index_cost, peak_rss_mb
from .loaders import load_dataset
from .schema import Dataset, Question

RESULTS_VERSION = 1


def set_seeds(seed: int) -> None:
    """Seed Python's, numpy's and (when loaded) torch's generators."""
    random.seed(seed)
    np.random.seed(seed)  # the legacy global generator is what third-party code reads
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def index_dir_for(
    cache_dir: Path, ds: Dataset, embedder: str | None, llm: str, chunking: str | None = None
) -> Path:
    """``<cache>/<dataset>-<corpus hash>-<config hash>``: one index per corpus and configuration."""
    settings: dict[str, str] = {"embedder": embedder or "default", "llm": llm}
    if chunking is not None:
        settings["chunking"] = chunking
    config = json.dumps(settings, sort_keys=True)
    tag = hashlib.sha256(config.encode()).hexdigest()[:8]
    name = ds.name.partition("@")[0]  # a set's dev and train parts share its index
    return cache_dir / f"{name}-{ds.corpus_fingerprint()[:10]}-{tag}"


@dataclass
class QuestionResult:
    """Everything measured for one (method, question) pair."""

    record: dict[str, Any]
    retrieval_s: float
    usage: Usage


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def guess(question: str) -> str:
    """The guessing baseline: the first option of a choice question, "yes" for yes/no, else nothing."""
    from ..answering.reader.question import analyze

    info = analyze(question)
    if info.expected == "choice":
        return info.options[0]
    return "yes" if info.expected == "yesno" else ""


def _score_question(
    rag: RAG,
    method: str,
    q: Question,
    ks: Sequence[int],
    retrieval_only: bool,
    answer_k: int | None,
    reader: str | None = None,
    judge: Any = None,
) -> QuestionResult:
    """Retrieve (and answer) one question and compute its metrics (``judge``: an LLM that
    also scores the answer against the reference, ``judge_acc``)."""
    depth = max(ks)
    prompt = q.prompt()
    t0 = time.perf_counter()
    retrieval, items = rag.retrieve(prompt, method=method, k=depth)
    retrieval_s = time.perf_counter() - t0
    usage = Usage()
    usage.merge(retrieval.usage)  # LLM calls the method made to retrieve
    items = list(items)
    doc_ids = _retrieved_doc_ids(rag, retrieval, items)
    rec: dict[str, Any] = {
        "qid": q.qid,
        "question": q.text,
        "answers": q.answers,
        "gold": q.gold_keys,
        "mode": retrieval.mode,
        "branch": retrieval.branch,
        "doc_ids": M.first_distinct(doc_ids)[:depth],
        "retrieved": [
            {"chunk_id": it.chunk_id, "doc_id": it.doc_id, "score": round(float(it.score), 6)} for it in items
        ],
        "timings_ms": {"retrieval": _ms(retrieval_s)},
        "metrics": {},
    }
    scores: dict[str, float | None] = rec["metrics"]
    for k in ks:
        r = M.recall_at_k(doc_ids, q.gold_keys, k)
        if r is not None:
            scores[f"recall@{k}"] = r["fraction"]
            scores[f"recall_all@{k}"] = r["all"]
            scores[f"recall_any@{k}"] = r["any"]
        scores[f"context_recall@{k}"] = M.context_recall([it.text for it in items[:k]], q.answers)
        if q.meta.get("evidence_texts"):
            scores[f"evidence_recall@{k}"] = M.evidence_recall(
                [it.text for it in items[:k]], q.meta["evidence_texts"]
            )
    if q.options and q.gold_option is not None:
        own = set(q.context_keys)
        chunks = rag.view.chunks
        story = [chunks.texts[r] for r in range(len(chunks)) if chunks.doc_ids[r] in own]
        if any(M.option_passages(story, q.options, q.gold_option)):  # else the question has no label
            for k in ks:
                mine = [it.text for it in items[:k] if it.doc_id in own]
                scores[f"option_passage@{k}"] = float(any(M.option_passages(mine, q.options, q.gold_option)))
    if not retrieval_only:
        t1 = time.perf_counter()
        answer = rag.query(prompt, method=method, k=answer_k, reader=reader)
        answer_s = time.perf_counter() - t1  # what a user waits: retrieval + answer
        # only the answer's own LLM call: its retrieval's calls are counted above
        usage.merge(Usage({"query.answer": answer.usage.stage("query.answer")}))
        predicted = answer.short if answer.short is not None else answer.text
        rec["prediction"] = predicted
        rec["answered_by"] = answer.answered_by
        rec["timings_ms"].update({name: _ms(v) for name, v in answer.timings.items() if name != "retrieval"})
        scores["em"] = M.exact_match(predicted, q.answers)
        scores["f1"] = M.token_f1(predicted, q.answers)
        scores["contain"] = M.contain_match(predicted, q.answers)
        scores["rouge_l"] = M.rouge_l(predicted, q.answers)
        if judge is not None and q.answers:
            from .judge import judge_correct

            scores["judge_acc"] = judge_correct(judge, q.text, q.answers[0], predicted)
        guessed = guess(q.text)
        scores["guess_em"] = M.exact_match(guessed, q.answers)
        scores["guess_f1"] = M.token_f1(guessed, q.answers)
        # abstention: "answerable" when a gold answer is in the passages the answer read
        answerable = bool(M.context_recall([c.text for c in answer.contexts], q.answers))
        if answer.found is not None:
            rec["found"] = answer.found
            rec["confidence"] = answer.confidence
            scores["abstain_answerable"] = float(not answer.found) if answerable else None
            scores["abstain_unanswerable"] = None if answerable else float(not answer.found)
        if q.options and q.gold_option is not None:
            scores["choice_accuracy"] = M.choice_accuracy(answer.text, q.options, q.gold_option)
    rec["usage"] = usage.to_json()
    rec["seconds"] = round(retrieval_s if retrieval_only else answer_s, 4)  # per answer, metrics aside
    return QuestionResult(rec, retrieval_s, usage)


def _retrieved_doc_ids(rag: RAG, retrieval: Retrieval, items: list[ContextItem]) -> list[str]:
    """Document ids in retrieval order: from the chunk rows of ``Retrieval.scored`` (the
    architecture contract for evaluation recall), else from the context items."""
    scored = retrieval.scored
    if len(scored) and scored.kind == "chunk":
        doc_ids = rag.view.chunks.doc_ids
        return [doc_ids[int(r)] for r in scored.ids if 0 <= int(r) < len(doc_ids)]
    return [it.doc_id for it in items]


def _summarize(
    results: list[QuestionResult], ds: Dataset, retrieval_only: bool, method: Any
) -> dict[str, Any]:
    """Per-method metrics, latency and per-query LLM cost."""
    names: list[str] = []
    for r in results:
        names.extend(n for n in r.record["metrics"] if n not in names)
    metrics = {n: M.mean(r.record["metrics"].get(n) for r in results) for n in names}
    query_usage = Usage()
    for r in results:
        query_usage.merge(r.usage)
    n = max(len(results), 1)
    total = query_usage.total
    latency = {"retrieval": M.latency_summary([r.retrieval_s for r in results])}
    for stage in ("generation", "total"):
        vals = [r.record["timings_ms"].get(stage) for r in results]
        if vals and not retrieval_only and all(v is not None for v in vals):
            latency[stage] = M.latency_summary([float(v) / 1000.0 for v in vals])
    modes: dict[str, int] = {}
    for r in results:
        key = r.record["mode"] + (f"/{r.record['branch']}" if r.record["branch"] else "")
        modes[key] = modes.get(key, 0) + 1
    by_type: dict[str, dict[str, Any]] = {}
    cost = _per_query_cost(results)
    types = {q.qid: str(q.meta.get("type") or "") for q in ds.questions}
    for kind in sorted({types.get(r.record["qid"], "") for r in results} - {""}):
        group = [r for r in results if types.get(r.record["qid"]) == kind]
        by_type[kind] = {
            "n": len(group),
            **{
                n: (
                    round(v, 4)
                    if (v := M.mean(r.record["metrics"].get(n) for r in group)) is not None
                    else None
                )
                for n in names
            },
            "cost": _per_query_cost(group),
        }
    return {
        "n_questions": len(results),
        "n_with_gold": sum(1 for q in ds.questions[: len(results)] if q.gold_keys),
        "metrics": {k: (round(v, 4) if v is not None else None) for k, v in metrics.items()},
        "latency": latency,
        "modes": modes,
        "by_type": by_type,
        "query_cost": {
            "llm_calls_per_query": round(total.calls / n, 3),
            "prompt_tokens_per_query": round(total.prompt_tokens / n, 1),
            "completion_tokens_per_query": round(total.completion_tokens / n, 1),
            "seconds_per_query": cost["seconds_per_query"],
            "stages": query_usage.to_json(),
        },
        "uses_llm": bool(getattr(method, "uses_llm", False)),
        "paper": str(getattr(method, "paper", "")),
        "peak_rss_mb": peak_rss_mb(),
    }


def _per_query_cost(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Mean seconds (retrieval + answer), LLM calls and tokens per question, and retrieval p50."""
    n = max(len(results), 1)
    total = Usage()
    for r in results:
        total.merge(r.usage)
    t = total.total
    return {
        "seconds_per_query": round(
            sum(float(r.record.get("seconds", r.retrieval_s)) for r in results) / n, 4
        ),
        "retrieval_p50_ms": M.latency_summary([r.retrieval_s for r in results])["p50_ms"],
        "llm_calls_per_query": round(t.calls / n, 3),
        "prompt_tokens_per_query": round(t.prompt_tokens / n, 1),
        "completion_tokens_per_query": round(t.completion_tokens / n, 1),
    }


def run_eval(
    data_dir: Path | str,
    subset: str,
    methods: Sequence[str],
    *,
    limit: int | None = None,
    ks: Sequence[int] = M.KS,
    llm: str = "extractive",
    retrieval_only: bool = False,
    out_dir: Path | str = "eval-out",
    cache_dir: Path | str | None = None,
    embedder: str | None = None,
    embed_titles: bool = True,
    corpus: str = "full",
    shuffle_corpus: int | None = None,
    answer_k: int | None = None,
    builders: dict[str, dict[str, Any]] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    plots: bool = True,
    readers: Sequence[str | None] = (None,),
    judge: str | Any | None = None,
    limit_per_type: int | None = None,
    chunkings: Sequence[str] = (),
) -> dict[str, Any]:
    """Evaluate ``methods`` on one subset and write the results.

    Parameters
    ----------
    data_dir : Path or str
        Benchmark folder (``shared/data``), or the folder of a generic JSONL set.
    subset : str
        Subset name (:func:`paretorag.eval.loaders.available_subsets`).
    methods : sequence of str
        Registered method names.
    limit : int, optional
        Evaluate the first ``limit`` questions (the corpus stays whole).
    ks : sequence of int
        Recall / context-recall cut-offs; retrieval runs at depth ``max(ks)``.
    llm : str
        LLM spec (``extractive``, ``openai:MODEL@URL``, ...), for indexing and answers.
    retrieval_only : bool
        Skip answer generation (no EM/F1/ROUGE, no query LLM calls).
    out_dir : Path or str
        Where ``results.json``, ``results.md`` and the plots go.
    cache_dir : Path or str, optional
        Index cache (default ``<out_dir>/.index-cache``); re-runs reuse it.
    embedder : str, optional
        Embedder spec; None is the default MiniLM, ``hash`` the test embedder.
    embed_titles : bool
        Embed passages as ``"title\ntext"`` (the default) or as text only.
    corpus : {"full", "own"}
        ``own`` restricts the corpus to the evaluated questions' own passages.
    shuffle_corpus : int, optional
        Index the corpus in a random order drawn from this seed (its own cached index),
        so that no method can score from the benchmark's passage order.
    answer_k : int, optional
        ``k`` passed to ``RAG.query`` for answers (default: the method's own).
    builders : dict, optional
        Builder settings, ``{"tree": {"scope": "auto"}}``; the others at their defaults, whatever
        an earlier run on the cached index set (structures of each setting stay cached).
    seed : int
        Seed for every random generator.
    progress : Progress, optional
        Progress reporter (the CLI passes rich bars).
    plots : bool
        Write the Pareto plots.
    readers : sequence of str or None
        Who answers (``reader``, ``extractive``, ``llm``; None: the default for ``llm``).
        With more than one, each method has a row per reader, ``"METHOD (READER)"``, on
        the same index and retrieval.
    judge : str or LLM, optional
        An LLM spec (or object) that also judges each answer against the reference answer
        (``judge_acc``, GraphRAG-Bench's answer accuracy); its cost is ``judge_cost``, apart
        from the methods' own.
    limit_per_type : int, optional
        Evaluate the first ``limit_per_type`` questions of each question type.
    chunkings : sequence of str
        Chunkings to compare, ``"sections:1200"``, ``"sentences:600"`` (:func:`parse_chunking`):
        one index each; with more than one, each method has a row per chunking,
        ``"METHOD [sections 600]"``. Empty: the index's defaults.

    Returns
    -------
    dict
        The content of ``results.json``.
    """
    from .report import write_report

    if not methods:
        raise ConfigError("give at least one method, e.g. --methods vanilla")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] <= 0:
        raise ConfigError(f"k values must be positive integers, got {ks}")
    set_seeds(seed)
    progress = progress or NullProgress()
    out = Path(out_dir)
    cache = Path(cache_dir) if cache_dir is not None else out / ".index-cache"
    ds = load_dataset(
        data_dir,
        subset,
        limit=limit,
        corpus=corpus,
        shuffle_corpus=shuffle_corpus,
        limit_per_type=limit_per_type,
    )
    per_method: dict[str, Any] = {}
    questions: dict[str, list[dict[str, Any]]] = {}
    judge_usage = Usage()
    variants: list[str | None] = list(chunkings) or [None]
    first: dict[str, Any] = {}
    for variant in variants:
        size, by = parse_chunking(variant) if variant is not None else (None, None)
        index_dir = index_dir_for(cache, ds, embedder, llm, variant)
        fresh = not (index_dir / "manifest.json").exists()
        index_dir.mkdir(parents=True, exist_ok=True)
        with RAG.open(
            index_dir,
            methods=list(methods),
            replace_methods=True,  # build only what these methods need; earlier runs' structures stay cached
            llm=llm,
            embedder=embedder,
            embed_titles=embed_titles,
            builders=builders,
            replace_builders=True,  # exactly these settings: not those an earlier run on this cache left
            chunk_size=size,
            chunking=by,
        ) as rag:
            t0 = time.perf_counter()
            report = rag.index(ds.documents(), progress=progress)
            index_wall = time.perf_counter() - t0
            stats = _jsonable(rag.stats())
            base = base_ledger(index_dir, stats, built_now=fresh)
            judge_llm = None
            if judge is not None and not retrieval_only:
                from ..answering.llms import make_llm

                judge_llm = rag._llm_for(
                    judge_usage, "judge", make_llm(judge) if isinstance(judge, str) else judge
                )
            load = getattr(rag.embedder, "load", None)
            if callable(load):
                load()  # models load lazily: not inside the first question's latency
            runs = [(m, r) for m in methods for r in (readers if not retrieval_only else (None,))]
            for method, reader in runs:
                row = method if len(readers) < 2 or retrieval_only else f"{method} ({reader or 'default'})"
                if len(variants) > 1 and variant is not None:
                    row += f" [{by} {size}]"
                set_seeds(seed)
                rag.view.forget_queries()  # every method pays for its own query embedding
                results: list[QuestionResult] = []
                with progress.task(f"{ds.name} · {row}", total=len(ds.questions)) as bar:
                    for q in ds.questions:
                        results.append(
                            _score_question(rag, method, q, ks, retrieval_only, answer_k, reader, judge_llm)
                        )
                        bar.advance()
                summary = _summarize(results, ds, retrieval_only, get_method(method))
                summary["index_cost"] = method_index_cost(method, stats, base)
                summary["method"] = method
                summary["reader"] = reader or (rag.answerer() if not retrieval_only else "")
                if variant is not None:
                    summary["chunking"] = {"by": by, "size": size}
                per_method[row] = summary
                questions[row] = [r.record for r in results]
        if not first:
            first = {"index_dir": index_dir, "report": report, "wall": index_wall, "stats": stats}
    index_dir, report, index_wall, stats = first["index_dir"], first["report"], first["wall"], first["stats"]
    payload: dict[str, Any] = {
        "version": RESULTS_VERSION,
        "dataset": {
            "subset": subset,
            "name": ds.name,
            "corpus": corpus,
            "shuffle_corpus": shuffle_corpus,
            "n_questions": len(ds.questions),
            "n_passages": len(ds.passages),
            "has_gold": ds.has_gold,
            "multiple_choice": ds.is_multiple_choice,
            "data_dir": str(data_dir),
        },
        "config": {
            "methods": list(methods),
            "ks": ks,
            "llm": llm,
            "embedder": embedder or "default",
            "embed_titles": embed_titles,
            "builders": builders or {},
            "retrieval_only": retrieval_only,
            "readers": [r or "default" for r in readers],
            "answer_k": answer_k,
            "judge": None
            if judge is None
            else (judge if isinstance(judge, str) else getattr(judge, "name", "llm")),
            "limit": limit,
            "limit_per_type": limit_per_type,
            "chunkings": list(chunkings),
            "seed": seed,
            "index_dir": str(index_dir),
        },
        "index": {
            "built_now": bool(report.committed),
            "wall_seconds_this_run": round(index_wall, 3),
            "documents_added": report.added,
            "stats": stats,
        },
        "methods": per_method,
        "questions": questions,
    }
    if judge is not None and not retrieval_only:
        jt = judge_usage.total
        payload["judge_cost"] = {
            "calls": jt.calls,
            "prompt_tokens": jt.prompt_tokens,
            "completion_tokens": jt.completion_tokens,
            "seconds": round(jt.seconds, 3),
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_report(payload, out, plots=plots)
    return payload


def parse_chunking(value: str) -> tuple[int, str]:
    """``"sections:600"`` -> ``(600, "sections")``; the size defaults to 1200, the kind to sections."""
    from ..ingest.chunking import CHUNKING

    by, _, size = value.strip().partition(":")
    if by.isdigit() and not size:
        by, size = "sections", by
    by = by or "sections"
    if by not in CHUNKING or (size and not size.isdigit()) or (size and int(size) <= 0):
        raise ConfigError(
            f"--chunking: {value!r} is not KIND[:SIZE] with KIND one of {', '.join(CHUNKING)} and SIZE "
            "a positive number of tokens, e.g. sections:600"
        )
    return (int(size) if size else 1200), by


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy (numpy scalars and paths become plain values)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


__all__ = ["guess", "index_dir_for", "run_eval", "set_seeds"]
