"""Cost accounting for evaluation: indexing seconds and LLM usage per method, query usage, memory.

Indexing cost is read from the index (``RAG.stats()``): the shared stages
(``ingest``, ``embed``, ``vectors``) plus, per method, the structures it requires
(``paretorag.indexing.plan.required_structures``) with their build seconds and the
``index.*`` LLM stages they ran. The shared stages are recorded in a ledger
(``<index>.cost.json`` beside the index) the first time the index is built, because
a later commit that only adds a structure re-times them from caches.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

from ..types import Usage

BASE_STAGES = ("ingest", "embed", "vectors")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (``resource.getrusage``), in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def base_ledger(index_dir: Path, stats: dict[str, Any], built_now: bool) -> dict[str, float]:
    """Seconds of the shared indexing stages, as first measured for this index."""
    path = index_dir.with_name(index_dir.name + ".cost.json")
    timings = stats.get("timings", {})
    if path.exists() and not built_now:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            data = None
        if isinstance(data, dict) and all(isinstance(v, int | float) for v in data.values()):
            return {k: float(v) for k, v in data.items()}
    ledger = {k: round(float(timings.get(k, 0.0)), 4) for k in BASE_STAGES}
    path.write_text(json.dumps(ledger, indent=1) + "\n", encoding="utf-8")
    return ledger


def _owner(stage: str, structures: list[str]) -> str | None:
    tail = stage.split(".", 1)[1] if "." in stage else stage
    matches = [s for s in structures if tail == s or tail.startswith(s + ".") or tail.startswith(s + "_")]
    return max(matches, key=len) if matches else None


def method_index_cost(method: str, stats: dict[str, Any], base: dict[str, float]) -> dict[str, Any]:
    """Indexing cost attributable to ``method``: shared stages + its structures (seconds, LLM usage).

    An ``index.*`` LLM stage belongs to the structure whose name prefixes it; a stage
    no built structure claims is charged to every method that needs an LLM-built
    structure.
    """
    from ..graphs.base import builder_class
    from ..indexing.plan import required_structures

    built = dict(stats.get("structures", {}))
    mine = required_structures([method])
    seconds = dict(base)
    for s in mine:
        seconds[f"build.{s}"] = round(float(built.get(s, {}).get("seconds", 0.0)), 4)
    uses_llm = any(builder_class(s).uses_llm for s in mine)
    index_usage = Usage.from_json({k: v for k, v in stats.get("usage", {}).items() if k.startswith("index")})
    usage = Usage()
    for stage, stage_usage in index_usage.stages.items():
        owner = _owner(stage, list(built))
        if (owner is not None and owner in mine) or (owner is None and uses_llm):
            usage.stage(stage).add(stage_usage)
    total = usage.total
    return {
        "structures": mine,
        "seconds_per_stage": seconds,
        "seconds_total": round(sum(seconds.values()), 3),
        "llm_calls": total.calls,
        "llm_tokens": total.prompt_tokens + total.completion_tokens,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "stages": usage.to_json(),
    }


__all__ = ["base_ledger", "method_index_cost", "peak_rss_mb"]
