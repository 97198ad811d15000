"""Training the router's MLP adapter in torch (EA-GraphRAG §3.3 "Training").

BCE-with-logits with label smoothing, AdamW, cosine annealing, early stopping on a
validation loss, seeded (:func:`fit`). The module mirrors the numpy forward pass of
:class:`paretorag.retrieval.router.adapter.Adapter` weight for weight (:func:`torch_logits` is the
reference the tests compare it with); query time loads the saved weights without torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from ..retrieval.router.adapter import HIDDEN, Adapter


@dataclass(frozen=True)
class FitSettings:
    """Training settings of :func:`fit` (§3.3 Training; values not given by the paper are ours).

    ``label_smoothing`` eps turns targets into ``y (1 - eps) + eps / 2``; ``patience``
    epochs without a better validation loss stop training (the best epoch's weights are
    kept).
    """

    hidden: tuple[int, ...] = HIDDEN
    lr: float = 1e-3
    weight_decay: float = 1e-2
    label_smoothing: float = 0.1
    dropout: float = 0.1
    epochs: int = 300
    patience: int = 30
    batch_size: int = 64
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def _module(d: int, hidden: Sequence[int], dropout: float) -> Any:
    import torch
    from torch import nn

    class AdapterNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.Linear(d, d)
            dims = [d, *hidden]
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(dims))
            self.blocks = nn.ModuleList(nn.Linear(b, b) for b in hidden)
            self.out_attn = nn.Linear(hidden[-1], hidden[-1])
            self.head = nn.Linear(hidden[-1], 1)
            self.drop = nn.Dropout(dropout)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = x * (x.shape[1] * torch.softmax(self.attn(x), dim=-1))
            for layer, block in zip(self.layers, self.blocks, strict=True):
                h = self.drop(torch.relu(layer(h)))
                h = h + torch.relu(block(h))
            h = h * (h.shape[1] * torch.softmax(self.out_attn(h), dim=-1))
            return self.head(h).squeeze(-1)

    return AdapterNet()


def fit(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    settings: FitSettings | None = None,
) -> tuple[Adapter, dict[str, Any]]:
    """Train the adapter on disagreement cases (§3.3): returns it and a training log.

    Classes are balanced with ``pos_weight = n_negative / n_positive``. The validation
    set drives early stopping; with no validation rows the training loss does.
    """
    import torch

    s = settings or FitSettings()
    torch.set_num_threads(1)  # a small MLP: one thread is as fast and spares the other cores
    torch.manual_seed(s.seed)
    gen = torch.Generator().manual_seed(s.seed)
    xt = torch.as_tensor(np.asarray(x_train, dtype=np.float32))
    yt = torch.as_tensor(np.asarray(y_train, dtype=np.float32))
    xv = torch.as_tensor(np.asarray(x_val, dtype=np.float32))
    yv = torch.as_tensor(np.asarray(y_val, dtype=np.float32))
    net = _module(xt.shape[1], s.hidden, s.dropout)
    n_pos = float(yt.sum())
    n_neg = float(len(yt) - n_pos)
    pos_weight = torch.tensor(n_neg / n_pos if n_pos > 0 and n_neg > 0 else 1.0)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    eps = s.label_smoothing

    def smooth(y: torch.Tensor) -> torch.Tensor:
        return y * (1.0 - eps) + 0.5 * eps

    opt = torch.optim.AdamW(net.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=s.epochs)
    best = (float("inf"), -1)
    best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    history: list[tuple[int, float, float]] = []
    for epoch in range(s.epochs):
        net.train()
        order = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for start in range(0, len(xt), s.batch_size):
            idx = order[start : start + s.batch_size]
            opt.zero_grad()
            loss = loss_fn(net(xt[idx]), smooth(yt[idx]))
            loss.backward()
            opt.step()
            total += float(loss.item()) * len(idx)
        sched.step()
        net.eval()
        with torch.no_grad():
            val = float(loss_fn(net(xv), smooth(yv))) if len(xv) else total / max(len(xt), 1)
        history.append((epoch, round(total / max(len(xt), 1), 5), round(val, 5)))
        if val < best[0] - 1e-6:
            best = (val, epoch)
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        elif epoch - best[1] >= s.patience:
            break
    weights = {k: v.numpy().astype(np.float32) for k, v in best_state.items()}
    log = {
        "epochs_run": len(history),
        "best_epoch": best[1],
        "best_val_loss": round(best[0], 5),
        "pos_weight": round(float(pos_weight), 4),
        "history_tail": history[-5:],
    }
    return Adapter(weights, tuple(s.hidden)), log


def torch_logits(
    weights: Mapping[str, np.ndarray], x: np.ndarray, hidden: Sequence[int] = HIDDEN
) -> np.ndarray:
    """Logits from the torch module with ``weights`` (eval mode): the reference for the numpy pass."""
    import torch

    net = _module(int(weights["attn.weight"].shape[1]), hidden, 0.0)
    net.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in weights.items()})
    net.eval()
    with torch.no_grad():
        return np.asarray(net(torch.as_tensor(np.asarray(x, dtype=np.float32))).numpy())


__all__ = ["FitSettings", "fit", "torch_logits"]
