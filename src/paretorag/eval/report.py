"""Markdown tables and Pareto plots from a ``results.json`` payload.

The plots follow Figure 3 of the E2GraphRAG paper: one point per method, quality
on the y axis, cost on the x axis (retrieval latency; indexing LLM tokens), and the
Pareto front of the non-dominated methods as a dashed black line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

LATENCY_PLOT = "pareto_latency.png"
TOKENS_PLOT = "pareto_index_tokens.png"

_LABELS = {
    "em": "EM",
    "f1": "F1",
    "contain": "Contain",
    "rouge_l": "ROUGE-L",
    "choice_accuracy": "MC acc",
    "judge_acc": "Judge acc",
}


def metric_label(name: str) -> str:
    """Short column label of a metric key (``recall@5`` -> ``R@5``)."""
    if name in _LABELS:
        return _LABELS[name]
    base, _, k = name.partition("@")
    prefix = {
        "recall": "R",
        "recall_all": "R-all",
        "recall_any": "R-any",
        "context_recall": "CR",
        "evidence_recall": "ER",
        "option_passage": "OP",
    }.get(base, base)
    return f"{prefix}@{k}" if k else prefix


def quality_metric(payload: dict[str, Any]) -> str:
    """The y axis of the plots: MC accuracy, else Recall@5 (fraction), else context recall@5, else F1.

    Uses the cut-off closest to 5 among the evaluated ``ks``.
    """
    names: set[str] = set()
    for m in payload["methods"].values():
        names.update(k for k, v in m["metrics"].items() if v is not None)
    ks = payload["config"]["ks"]
    k = min(ks, key=lambda x: (abs(x - 5), x))
    for cand in ("choice_accuracy", f"recall@{k}", f"context_recall@{k}", "f1"):
        if cand in names:
            return cand
    return sorted(names)[0] if names else f"recall@{k}"


def _fmt(value: Any, pct: bool = True) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and pct:
        return f"{100 * value:.1f}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _metric_columns(payload: dict[str, Any]) -> list[str]:
    ks = payload["config"]["ks"]
    present: set[str] = set()
    for m in payload["methods"].values():
        present.update(k for k, v in m["metrics"].items() if v is not None)
    order = (
        [f"recall@{k}" for k in ks]
        + [f"context_recall@{k}" for k in ks]
        + [f"evidence_recall@{k}" for k in ks]
        + [f"option_passage@{k}" for k in ks]
        + list(_LABELS)
    )
    return [c for c in order if c in present]


def _num(value: Any, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def results_table(payload: dict[str, Any]) -> str:
    """Main table: quality (percent), retrieval latency, indexing and per-query cost, one row per method.

    Per query: LLM calls, prompt and completion tokens, and seconds (retrieval plus answer).
    """
    cols = _metric_columns(payload)
    head = [
        "method",
        *map(metric_label, cols),
        "p50 ms",
        "p95 ms",
        "index s",
        "index LLM tok",
        "LLM calls/q",
        "prompt tok/q",
        "compl tok/q",
        "s/q",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in payload["methods"].items():
        lat, cost = m["latency"]["retrieval"], m["index_cost"]
        row = [
            f"`{name}`",
            *(_fmt(m["metrics"].get(c)) for c in cols),
            f"{lat['p50_ms']:.1f}",
            f"{lat['p95_ms']:.1f}",
            f"{cost['seconds_total']:.1f}",
            _fmt(int(cost["llm_tokens"])),
            f"{m['query_cost']['llm_calls_per_query']:.2f}",
            _num(m["query_cost"].get("prompt_tokens_per_query"), ",.0f"),
            _num(m["query_cost"].get("completion_tokens_per_query"), ",.0f"),
            _num(m["query_cost"].get("seconds_per_query"), ".3f"),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def cost_table(costs: dict[str, dict[str, Any]]) -> str:
    """The paper's Table 11: seconds, LLM calls and tokens per query, one row per method.

    ``costs`` maps a method to ``seconds_per_query``, ``llm_calls_per_query``,
    ``prompt_tokens_per_query`` and ``completion_tokens_per_query`` (a ``query_cost``).
    """
    lines = [
        "| method | s/query | LLM calls/q | prompt tok/q | completion tok/q | tokens/q |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in costs.items():
        p, q = c.get("prompt_tokens_per_query"), c.get("completion_tokens_per_query")
        tokens = None if p is None or q is None else p + q
        lines.append(
            f"| `{name}` | {_num(c.get('seconds_per_query'), '.3f')} | {_num(c.get('llm_calls_per_query'), '.2f')} "
            f"| {_num(p, ',.0f')} | {_num(q, ',.0f')} | {_num(tokens, ',.0f')} |"
        )
    return "\n".join(lines)


def benchmark_type_table(payload: dict[str, Any]) -> str:
    """Per question type (GraphRAG-Bench's four kinds, 2Wiki's, HotpotQA's): evidence recall, context
    recall, answer accuracy (containment and judge), ROUGE-L, retrieval p50 and cost per query."""
    k = _answer_k(payload)
    head = [
        "method",
        "type",
        "n",
        f"ER@{k}",
        f"CR@{k}",
        "Acc",
        "Judge acc",
        "ROUGE-L",
        "retrieval p50 ms",
        "s/q",
        "LLM calls/q",
        "tok/q",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in payload["methods"].items():
        for kind, t in m.get("by_type", {}).items():
            c = t.get("cost") or {}
            p, q = c.get("prompt_tokens_per_query"), c.get("completion_tokens_per_query")
            row = [
                f"`{name}`",
                kind,
                str(t["n"]),
                _fmt(t.get(f"evidence_recall@{k}")),
                _fmt(t.get(f"context_recall@{k}")),
                _fmt(t.get("contain")),
                _fmt(t.get("judge_acc")),
                _fmt(t.get("rouge_l")),
                _num(c.get("retrieval_p50_ms"), ".1f"),
                _num(c.get("seconds_per_query"), ".3f"),
                _num(c.get("llm_calls_per_query"), ".2f"),
                _num(None if p is None or q is None else p + q, ",.0f"),
            ]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def recall_table(payload: dict[str, Any]) -> str:
    """Recall@k in its three definitions (fraction / all / any), one row per method and k."""
    ks = payload["config"]["ks"]
    lines = [
        "| method | k | mean fraction (HippoRAG) | all gold (strict) | any gold (EA-GraphRAG) |",
        "|---|---|---|---|---|",
    ]
    for name, m in payload["methods"].items():
        for k in ks:
            vals = [m["metrics"].get(f"{p}@{k}") for p in ("recall", "recall_all", "recall_any")]
            if all(v is None for v in vals):
                continue
            lines.append(f"| `{name}` | {k} | " + " | ".join(_fmt(v) for v in vals) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def _answer_k(payload: dict[str, Any]) -> int:
    ks = payload["config"]["ks"]
    return min(ks, key=lambda x: (abs(x - 5), x))


def answer_table(payload: dict[str, Any]) -> str:
    """Retrieved vs answered, one row per method and reader: CR@5 beside EM / F1 / accuracy
    (gold in the answer), the guessing baseline, and the abstention figures. Empty without answers."""
    k = _answer_k(payload)
    head = [
        "method",
        "answered by",
        f"CR@{k}",
        "EM",
        "F1",
        "Acc",
        "guess EM",
        "EM - guess",
        "abstain (answerable)",
        "abstain (unanswerable)",
        "answer p50 ms",
        "s/q",
        "tok/q",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in payload["methods"].items():
        mm = m["metrics"]
        if mm.get("em") is None:
            continue
        gain = None if mm.get("guess_em") is None else mm["em"] - mm["guess_em"]
        gen = m["latency"].get("generation", {}).get("p50_ms")
        row = [
            f"`{m.get('method', name)}`",
            str(m.get("reader", "")),
            _fmt(mm.get(f"context_recall@{k}")),
            _fmt(mm.get("em")),
            _fmt(mm.get("f1")),
            _fmt(mm.get("contain")),
            _fmt(mm.get("guess_em")),
            _fmt(gain),
            _fmt(mm.get("abstain_answerable")),
            _fmt(mm.get("abstain_unanswerable")),
            "–" if gen is None else f"{gen:.1f}",
            _num(m["query_cost"].get("seconds_per_query"), ".3f"),
            _num(
                m["query_cost"].get("prompt_tokens_per_query", 0.0)
                + m["query_cost"].get("completion_tokens_per_query", 0.0),
                ",.0f",
            ),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def type_table(payload: dict[str, Any]) -> str:
    """EM / F1 per question type (2Wiki and HotpotQA label them) beside the guessing baseline."""
    k = _answer_k(payload)
    lines = [
        f"| method | answered by | type | n | CR@{k} | EM | F1 | guess EM |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, m in payload["methods"].items():
        for kind, t in m.get("by_type", {}).items():
            if t.get("em") is None:
                continue
            lines.append(
                f"| `{m.get('method', name)}` | {m.get('reader', '')} | {kind} | {t['n']} | "
                f"{_fmt(t.get(f'context_recall@{k}'))} | {_fmt(t.get('em'))} | {_fmt(t.get('f1'))} | "
                f"{_fmt(t.get('guess_em'))} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def index_cost_table(payload: dict[str, Any]) -> str:
    """Seconds and LLM usage per indexing stage, for each method (shared stages repeat)."""
    lines = ["| method | stage | seconds | LLM calls | LLM tokens |", "|---|---|---|---|---|"]
    for name, m in payload["methods"].items():
        cost = m["index_cost"]
        for stage, secs in cost["seconds_per_stage"].items():
            tail = stage.removeprefix("build.")
            calls = tokens = 0
            for ustage, u in cost["stages"].items():
                if ustage.split(".", 1)[-1].startswith(tail) and stage.startswith("build."):
                    calls += u.get("calls", 0)
                    tokens += u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
            lines.append(f"| `{name}` | {stage} | {float(secs):.2f} | {calls:,} | {tokens:,} |")
        lines.append(
            f"| `{name}` | **total** | **{cost['seconds_total']:.2f}** | **{cost['llm_calls']:,}** "
            f"| **{cost['llm_tokens']:,}** |"
        )
    return "\n".join(lines)


def markdown_report(payload: dict[str, Any], *, image_prefix: str = "") -> str:
    """The full ``results.md``: data set, main table, recall definitions, index cost, plots."""
    ds, cfg, index = payload["dataset"], payload["config"], payload["index"]
    parts = [
        f"# {ds['name']}: {', '.join(cfg['methods'])}",
        "",
        f"{ds['n_questions']} questions, {ds['n_passages']:,} passages/documents (corpus: {ds['corpus']}); "
        f"LLM `{cfg['llm']}`, embedder `{cfg['embedder']}`, retrieval depth {max(cfg['ks'])}"
        + (", retrieval only" if cfg["retrieval_only"] else "")
        + f"; index {'built or updated' if index['built_now'] else 'reused from the cache'} in this run. "
        "Quality in percent; latency is retrieval only; index cost is what each method's structures took.",
        "",
        results_table(payload),
        "",
    ]
    answers = answer_table(payload)
    if answers:
        parts += [
            "Retrieved vs answered: CR is a gold answer in the top passages; EM / F1 / Acc (gold in the "
            "answer) judge the short answer; abstention is the share withheld among questions whose gold "
            "answer is (answerable) or is not (unanswerable) in the passages read.",
            "",
            answers,
            "",
        ]
        types = type_table(payload)
        if types:
            parts += ["By question type:", "", types, ""]
    by_type = benchmark_type_table(payload)
    if by_type:
        parts += [
            "By question type, retrieval and answers with their cost (ER: share of the evidence's content "
            "words in the top passages; Acc: the reference answer contained in the answer):",
            "",
            by_type,
            "",
        ]
    parts += [
        "Cost per answer (the unified framework's Table 11: seconds are retrieval plus answer):",
        "",
        cost_table({name: m["query_cost"] for name, m in payload["methods"].items()}),
        "",
    ]
    if payload.get("judge_cost"):
        jc = payload["judge_cost"]
        parts += [
            f"Judge `{payload['config'].get('judge')}`: {jc['calls']:,} calls, {jc['prompt_tokens']:,} prompt "
            f"and {jc['completion_tokens']:,} completion tokens, {jc['seconds']:.1f} s.",
            "",
        ]
    recall = recall_table(payload)
    if recall:
        parts += ["Recall@k, three definitions (distinct documents among the first k):", "", recall, ""]
    parts += ["Indexing cost per stage:", "", index_cost_table(payload), ""]
    peak = max((m["peak_rss_mb"] for m in payload["methods"].values()), default=0.0)
    parts += [f"Peak resident memory of the run: {peak:,.0f} MiB.", ""]
    metric = quality_metric(payload)
    parts += [
        f"![{metric_label(metric)} vs retrieval latency]({image_prefix}{LATENCY_PLOT})",
        f"![{metric_label(metric)} vs indexing LLM tokens]({image_prefix}{TOKENS_PLOT})",
        "",
    ]
    return "\n".join(parts)


def pareto_front(xs: Sequence[float], ys: Sequence[float]) -> list[int]:
    """Indices of the non-dominated points (lower x and higher y are better), by increasing x."""
    order = sorted(range(len(xs)), key=lambda i: (xs[i], -ys[i]))
    front: list[int] = []
    best = float("-inf")
    for i in order:
        if ys[i] > best:
            front.append(i)
            best = ys[i]
    return front


def pareto_plot(
    names: Sequence[str],
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    path: Path,
    xscale: str = "log",
) -> None:
    """One Figure-3-style scatter: methods as points, the Pareto front dashed (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.8), dpi=120)
    try:
        ax.scatter(xs, ys, s=60, c=[f"C{i % 10}" for i in range(len(xs))], zorder=3)
        labels: dict[tuple[float, float], list[str]] = {}
        for name, x, y in zip(names, xs, ys, strict=True):  # coinciding points share one label
            labels.setdefault((x, y), []).append(name)
        for (x, y), group in labels.items():
            ax.annotate(", ".join(group), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
        front = pareto_front(xs, ys)
        if len(front) > 1:
            ax.plot(
                [xs[i] for i in front], [ys[i] for i in front], "k--", lw=1, zorder=2, label="Pareto front"
            )
            ax.legend(fontsize=8, loc="lower right")
        if xscale == "symlog":  # LLM-free methods sit at 0
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlim(-0.5, max(10.0, 3.0 * max(xs, default=0.0)))
        elif xscale == "log" and min(xs, default=0) > 0:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        lo, hi = min(ys, default=0.0), max(ys, default=1.0)
        pad = max(0.1 * (hi - lo), 5.0)
        ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad))
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def write_plots(payload: dict[str, Any], out: Path) -> list[Path]:
    """Quality vs retrieval latency (p50) and quality vs indexing LLM tokens, as PNG."""
    metric = quality_metric(payload)
    names = list(payload["methods"])
    ys = [100.0 * float(payload["methods"][n]["metrics"].get(metric) or 0.0) for n in names]
    lat = [max(float(payload["methods"][n]["latency"]["retrieval"]["p50_ms"]), 1e-3) for n in names]
    tokens = [float(payload["methods"][n]["index_cost"]["llm_tokens"]) for n in names]
    title = payload["dataset"]["name"]
    ylabel = f"{metric_label(metric)} (%)"
    p1, p2 = out / LATENCY_PLOT, out / TOKENS_PLOT
    pareto_plot(names, lat, ys, xlabel="retrieval latency p50 (ms)", ylabel=ylabel, title=title, path=p1)
    pareto_plot(
        names, tokens, ys, xlabel="indexing LLM tokens", ylabel=ylabel, title=title, path=p2, xscale="symlog"
    )
    return [p1, p2]


def write_report(payload: dict[str, Any], out: Path, *, plots: bool = True) -> None:
    """Write ``results.md`` (and the plots) next to ``results.json``."""
    if plots:
        write_plots(payload, out)
    (out / "results.md").write_text(markdown_report(payload), encoding="utf-8")


__all__ = [
    "answer_table",
    "benchmark_type_table",
    "cost_table",
    "markdown_report",
    "metric_label",
    "pareto_front",
    "pareto_plot",
    "quality_metric",
    "recall_table",
    "results_table",
    "type_table",
    "write_plots",
    "write_report",
]
