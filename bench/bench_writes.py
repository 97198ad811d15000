"""Insert and delete wall time on a built index, per structure, old code against new (issue 38).

Builds (or reuses) an index of the given files with the given methods, then, for each code
checkout given (``--code NAME=SRC_DIR``, e.g. ``base=/tmp/w-base/src new=src``), copies the
index, inserts one small Markdown file and deletes it again with ``python -m paretorag.cli``
from that checkout, interleaved over ``--repeats``; prints JSON: the wall seconds of each
command and the seconds of each structure's build from the manifest.

    python bench/bench_writes.py --docs DIR --methods fusion,e2graphrag,hipporag2,raptor \\
        --code base=/tmp/w-base/src --code new=src --work /tmp/bench-writes
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SMALL = "# Small note\n\nThe lighthouse keeper counted ships.\nHe wrote their names in a ledger.\nNone came back.\n"


def _run(src: str, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "paretorag.cli", *args], env=env, check=True, capture_output=True)
    return round(time.perf_counter() - t0, 3)


def _structures(index: Path) -> dict[str, Any]:
    m = json.loads((index / "manifest.json").read_text())
    return {
        k: {"seconds": v.get("seconds"), "mode": v.get("mode"), "llm_calls": v.get("llm_calls")}
        for k, v in m["structures"].items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", required=True, help="folder of files to index")
    ap.add_argument("--methods", default="fusion,e2graphrag,hipporag2,raptor")
    ap.add_argument("--code", action="append", required=True, help="NAME=SRC_DIR (repeatable)")
    ap.add_argument("--work", default="/tmp/bench-writes")
    ap.add_argument("--base-code", default="src", help="the checkout that builds the base index")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    base = work / "base-index"
    out: dict[str, Any] = {"docs": args.docs, "methods": args.methods, "runs": []}
    if not (base / "manifest.json").is_file():
        out["build_seconds"] = _run(
            args.base_code, "index", args.docs, "--index", str(base), "--methods", args.methods
        )
    small = work / "small.md"
    small.write_text(SMALL)
    for rep in range(args.repeats):
        for spec in args.code:  # interleaved: each checkout in turn, on a fresh copy of the index
            name, src = spec.split("=", 1)
            ix = work / f"ix-{name}"
            shutil.rmtree(ix, ignore_errors=True)
            shutil.copytree(base, ix)
            ins = _run(src, "insert", str(small), "--index", str(ix))
            after_insert = _structures(ix)
            dele = _run(src, "delete", str(small), "--index", str(ix))
            out["runs"].append(
                {
                    "code": name,
                    "repeat": rep,
                    "insert_s": ins,
                    "delete_s": dele,
                    "insert_structures": after_insert,
                    "delete_structures": _structures(ix),
                }
            )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
