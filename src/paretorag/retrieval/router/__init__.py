"""EA-GraphRAG's router (papers/ea-graphrag.txt §3.2-3.3): query complexity -> dense, graph or fusion.

- :mod:`.features`: the syntactic complexity features phi(q) from one spaCy parse;
- :mod:`.adapter`: the MLP adapter's numpy forward pass over its saved weights;
- :mod:`.model`: a trained router on disk (selected features, standardization,
  weights, thresholds tau_low / tau_high) and the routing rule (Eq. 2).

Training (labels from ``paretorag eval`` disagreement cases, feature selection, the
torch fit, threshold tuning: ``paretorag train-router``) is in
:mod:`paretorag.training.router` and :mod:`paretorag.training.router_fit`.

Importing this package loads neither torch nor spaCy; they load at first use.
"""

from __future__ import annotations

from .model import Route, Router, default_router_path, load_router, route_for

__all__ = ["Route", "Router", "default_router_path", "load_router", "route_for"]
