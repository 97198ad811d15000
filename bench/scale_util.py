"""Shared by bench_ray.py and bench_scaling.py: corpora from ../shared/data, and index
stages run in a child process whose wall time and peak RSS per process are measured.

Peak RSS is each process's ``VmHWM`` (the kernel's high-water mark of resident memory),
read every 0.2 s for the child and all its descendants (spaCy workers; with Ray, the
local cluster's raylet, GCS and worker processes), so the last reading before a process
exits is its peak.

Run as a script, this module is the child: ``python bench/scale_util.py child SPEC_JSON``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PASSAGE_CORPORA = [  # every passage corpus of ../shared/data (the long-document sets are not passages)
    "2wikimultihopqa/2wikimultihopqa_dev164_corpus.json",
    "2wikimultihopqa/2wikimultihopqa_corpus.json",
    "hotpotqa/hotpotqa_dev200_corpus.json",
    "hotpotqa/hotpotqa_train_corpus.json",
    "musique/musique_dev200_corpus.json",
    "musique/musique_train_corpus.json",
    "popqa/popqa_corpus.json",
]


def passages(name: str) -> list[dict[str, str]]:
    """``{title, text}`` records of a corpus file (HippoRAG's ``{title: [sentences]}`` too)."""
    data = json.loads((DATA / name).read_text(encoding="utf-8"))
    if isinstance(data, dict):
        return [{"title": t, "text": "".join(s)} for t, s in data.items()]
    return [{"title": str(r.get("title") or ""), "text": r["text"]} for r in data]


def distinct(records: list[dict[str, str]], seen: set[str]) -> list[dict[str, str]]:
    """Records whose text was not seen yet (``seen`` is updated)."""
    out = []
    for r in records:
        key = " ".join(r["text"].split())
        if key and key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _status(pid: int) -> tuple[int, int]:
    """(parent pid, VmHWM in kB) of a live process; (-1, 0) when gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return -1, 0
    ppid, hwm = -1, 0
    for line in text.splitlines():
        if line.startswith("PPid:"):
            ppid = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return ppid, hwm


def _label(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
    if cmd.startswith("ray::") or "default_worker.py" in cmd:
        return "ray worker"
    if "worker_main" in cmd:
        return "spacy worker"
    for name in ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "runtime_env", "agent"):
        if name in cmd:
            return f"ray system ({name})"
    return cmd.split(" ")[0].rsplit("/", 1)[-1][:40]


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd``; wall time, its last stdout line as JSON, and peak RSS (MiB) per process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    peaks: dict[int, tuple[str, int]] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            tree = {proc.pid}
            parents: dict[int, int] = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    parents[int(entry)] = _status(int(entry))[0]
            changed = True
            while changed:  # descendants of the child
                changed = False
                for pid, ppid in parents.items():
                    if ppid in tree and pid not in tree:
                        tree.add(pid)
                        changed = True
            for pid in tree:
                hwm = _status(pid)[1]
                if hwm:
                    label = peaks[pid][0] if pid in peaks else _label(pid, proc.pid)
                    peaks[pid] = (label, max(hwm, peaks.get(pid, ("", 0))[1]))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    # CPU seconds of the child and of the descendants it waited for (spaCy workers; not the
    # processes of a Ray cluster): unlike wall time, hardly moved by other jobs on the machine
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with code {proc.returncode}")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    by_label: dict[str, list[float]] = {}
    for label, kb in peaks.values():
        by_label.setdefault(label, []).append(round(kb / 1024, 1))
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "result": json.loads(lines[-1]) if lines else {},
        "peak_rss_mib": {k: sorted(v, reverse=True) for k, v in sorted(by_label.items())},
        "peak_rss_mib_sum": round(sum(kb for _, kb in peaks.values()) / 1024, 1),
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """``measured`` run of one child stage (see :func:`child`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return measured([sys.executable, __file__, "child", json.dumps(spec)], env)


def child(spec: dict[str, Any]) -> None:
    """One stage in this process: ``{"index": DIR, "paths": [...]}`` indexes for vanilla;
    ``{"index": DIR, "structure": NAME, "settings": {...}}`` builds one structure over
    the stored chunks (not saved) with those builder settings; ``"ray": N`` runs either on a local Ray cluster of N CPUs.
    Prints the stage's timings as one JSON line."""
    from paretorag import RAG
    from paretorag.graphs.base import get_builder
    from paretorag.indexing.distributed import RayCluster

    cluster = RayCluster(num_cpus=int(spec["ray"])) if spec.get("ray") else None
    t0 = time.perf_counter()
    if cluster is not None:
        cluster.start()
    started = time.perf_counter() - t0
    result: dict[str, Any] = {"ray_start_s": round(started, 2)} if cluster else {}
    if "paths" in spec:
        rag = RAG.open(spec["index"], methods=["vanilla"], workers=2)
        t1 = time.perf_counter()
        report = rag.index(spec["paths"], cluster=cluster)
        result.update(
            index_s=round(time.perf_counter() - t1, 2),
            documents=report.added,
            chunks=report.chunks,
            tokens=int(rag.manifest.counts.get("tokens", 0)),
            timings=rag.manifest.timings,
        )
    else:
        rag = RAG.open(spec["index"], create=False, workers=2)
        with rag._locked():
            writer = rag._writer(None, cluster)
            chunks = rag.store.chunk_table()
            builder = get_builder(spec["structure"], **spec.get("settings", {}))
            t1 = time.perf_counter()
            data = builder.build(writer.build_context(chunks, {}))
            result.update(
                build_s=round(time.perf_counter() - t1, 2),
                chunks=len(chunks),
                stats=data.meta.get("stats", {}),
                embedded=writer.embedder.computed,
            )
    rag.close()
    if cluster is not None:
        result["ray_tasks"] = dict(cluster.tasks_run)
        cluster.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        child(json.loads(sys.argv[2]))
    else:
        raise SystemExit("usage: python bench/scale_util.py child SPEC_JSON")
