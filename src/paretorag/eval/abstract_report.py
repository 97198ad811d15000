"""Tables and heatmaps of an abstract-question run (``abstract.json``): Figures 6-10 and Table 11.

One win-rate matrix per criterion (row method against column method, percent of valid
verdicts, both orders counted), the verdicts that could not be read, the answer cost per
query per method, and the judge's own token cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .report import cost_table

HEATMAP = "abstract_winrates.png"


def winrate_table(matrices: dict[str, Any], criterion: str) -> str:
    """One criterion's matrix as Markdown: rows beat columns this often (percent)."""
    names = matrices["methods"]
    rates = matrices["rates"][criterion]
    lines = [
        "| row vs column | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for a in names:
        cells = ["–" if rates[a][b] is None else f"{rates[a][b]:.0f}" for b in names]
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def abstract_markdown(payload: dict[str, Any]) -> str:
    """The whole ``abstract.md``."""
    cfg, m, jc = payload["config"], payload["win_rates"], payload["judge_cost"]
    n_q = len(payload["questions"])
    parts = [
        f"# Abstract questions on {payload['dataset']['name']}: {', '.join(cfg['methods'])}",
        "",
        f"{n_q} questions ({cfg['questions']}); answers by `{cfg['llm']}`, verdicts by `{cfg['judge']}`, "
        "every pair judged in both orders. Each cell: how often the row method's answer beat the "
        "column method's (percent of readable verdicts; unified framework §7.3, Figures 6-10).",
        "",
    ]
    for c in m["criteria"]:
        parts += [f"**{c}** ({m['invalid'][c]} unreadable verdicts)", "", winrate_table(m, c), ""]
    parts += ["Answer cost per query (Table 11):", "", cost_table(payload["cost"]), ""]
    parts += [
        f"Judge: {jc['calls']:,} calls, {jc['prompt_tokens']:,} prompt and {jc['completion_tokens']:,} "
        f"completion tokens, {jc['seconds']:.1f} s ({jc['cached']:,} from the response cache).",
        "",
        f"![win rates]({HEATMAP})",
        "",
    ]
    return "\n".join(parts)


def heatmaps(matrices: dict[str, Any], path: Path, title: str = "") -> Path:
    """The four matrices side by side as annotated heatmaps (like Figures 6-10), PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = matrices["methods"]
    crits = matrices["criteria"]
    n = len(names)
    fig, axes = plt.subplots(1, len(crits), figsize=(3.0 * len(crits) + 0.5, 3.0 + 0.12 * n), dpi=120)
    try:
        for ax, c in zip(np.atleast_1d(axes), crits, strict=True):
            grid = np.array(
                [
                    [
                        np.nan if matrices["rates"][c][a][b] is None else matrices["rates"][c][a][b]
                        for b in names
                    ]
                    for a in names
                ],
                dtype=float,
            )
            ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100)
            for i in range(n):
                for j in range(n):
                    label = "–" if np.isnan(grid[i, j]) else f"{grid[i, j]:.0f}"
                    ax.text(j, i, label, ha="center", va="center", fontsize=8)
            ax.set_xticks(range(n), names, rotation=45, ha="right", fontsize=7)
            ax.set_yticks(range(n), names, fontsize=7)
            ax.set_title(c, fontsize=9)
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def write_abstract_report(payload: dict[str, Any], out: Path, *, plots: bool = True) -> None:
    """``abstract.md`` and (with ``plots``) ``abstract_winrates.png`` next to ``abstract.json``."""
    if plots:
        heatmaps(payload["win_rates"], out / HEATMAP, title=payload["dataset"]["name"])
    (out / "abstract.md").write_text(abstract_markdown(payload), encoding="utf-8")


__all__ = ["HEATMAP", "abstract_markdown", "heatmaps", "winrate_table", "write_abstract_report"]
