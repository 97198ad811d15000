"""Counters and histograms, printed in the Prometheus text format (version 0.0.4).

Kept small on purpose (no client library): requests by route and status, query latency
per method as a histogram, LLM calls and tokens per method, writes by kind and outcome.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..types import Answer

# seconds; queries on a warm index take milliseconds, answers with a remote LLM seconds
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _labels(**labels: str) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: defaultdict[tuple[str, str, str], int] = defaultdict(int)  # route, verb, status
        self.hist: dict[str, list[int]] = {}  # method -> counts per bucket (+Inf last)
        self.hist_sum: defaultdict[str, float] = defaultdict(float)
        self.llm: defaultdict[tuple[str, str], int] = defaultdict(int)  # (method, calls|prompt|completion)
        self.jobs: defaultdict[tuple[str, str], int] = defaultdict(int)  # (kind, state)
        self.in_flight = 0

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def request(self, route: str, verb: str, status: int) -> None:
        with self._lock:
            self.requests[(route, verb, str(status))] += 1

    def query(self, method: str, seconds: float, calls: int, prompt: int, completion: int) -> None:
        with self._lock:
            counts = self.hist.setdefault(method, [0] * (len(BUCKETS) + 1))
            counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            self.hist_sum[method] += seconds
            self.llm[(method, "calls")] += calls
            self.llm[(method, "prompt")] += prompt
            self.llm[(method, "completion")] += completion

    def answered(self, ans: Answer) -> None:
        """Count an answer: its method's latency, LLM calls and tokens."""
        total = ans.usage.total
        self.query(
            ans.method, ans.timings["total"], total.calls, total.prompt_tokens, total.completion_tokens
        )

    def job(self, kind: str, state: str) -> None:
        with self._lock:
            self.jobs[(kind, state)] += 1

    def render(self, gauges: dict[str, float] | None = None) -> str:
        out: list[str] = []
        with self._lock:
            out += [
                "# HELP paretorag_requests_total HTTP requests by route, verb and status.",
                "# TYPE paretorag_requests_total counter",
            ]
            for (route, verb, status), n in sorted(self.requests.items()):
                out.append(f"paretorag_requests_total{_labels(route=route, verb=verb, status=status)} {n}")
            out += [
                "# HELP paretorag_query_seconds Query latency (retrieval and answer) by method.",
                "# TYPE paretorag_query_seconds histogram",
            ]
            for method, counts in sorted(self.hist.items()):
                running = 0
                for le, c in zip((*(f"{b:g}" for b in BUCKETS), "+Inf"), counts, strict=True):
                    running += c
                    out.append(f"paretorag_query_seconds_bucket{_labels(method=method, le=le)} {running}")
                out.append(f"paretorag_query_seconds_sum{_labels(method=method)} {self.hist_sum[method]:.6f}")
                out.append(f"paretorag_query_seconds_count{_labels(method=method)} {running}")
            out += [
                "# HELP paretorag_llm_calls_total LLM calls made by queries, by method.",
                "# TYPE paretorag_llm_calls_total counter",
            ]
            for (method, what), n in sorted(self.llm.items()):
                if what == "calls":
                    out.append(f"paretorag_llm_calls_total{_labels(method=method)} {n}")
            out += [
                "# HELP paretorag_llm_tokens_total LLM tokens used by queries, by method and kind.",
                "# TYPE paretorag_llm_tokens_total counter",
            ]
            for (method, what), n in sorted(self.llm.items()):
                if what != "calls":
                    out.append(f"paretorag_llm_tokens_total{_labels(method=method, kind=what)} {n}")
            out += [
                "# HELP paretorag_jobs_total Finished writes (insert, delete) by outcome.",
                "# TYPE paretorag_jobs_total counter",
            ]
            for (kind, state), n in sorted(self.jobs.items()):
                out.append(f"paretorag_jobs_total{_labels(kind=kind, state=state)} {n}")
            out += [
                "# HELP paretorag_requests_in_flight Requests being served now.",
                "# TYPE paretorag_requests_in_flight gauge",
                f"paretorag_requests_in_flight {self.in_flight}",
            ]
        for name, value in (gauges or {}).items():
            out += [f"# TYPE {name} gauge", f"{name} {value:g}"]
        return "\n".join(out) + "\n"
