"""The query-time router package holds no training: importing it and loading the shipped
router loads neither torch, scikit-learn nor :mod:`paretorag.training`."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
import paretorag.retrieval.router
from paretorag.retrieval.router import load_router
router = load_router()
print(json.dumps({
    "adapter": type(router.adapter).__name__,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sklearn")
                     or m.startswith("paretorag.training")),
}))
"""


def test_router_package_imports_no_training_and_no_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["adapter"] == "Adapter"
    assert got["loaded"] == []


def test_training_names_live_in_training() -> None:
    import paretorag.retrieval.router.adapter as adapter
    from paretorag.training import router_fit

    assert not hasattr(adapter, "fit") and not hasattr(adapter, "FitSettings")
    assert router_fit.FitSettings().hidden == adapter.HIDDEN
