"""The MLP adapter g_theta: standardized features -> complexity score s(q) (EA-GraphRAG §3.3, Eq. 1).

Architecture (§3.3 "Architecture"): feature-level attention on the input, hidden layers
of 256, 128 and 64 units, each followed by a residual block of its own width (the
"residual connections where dimensions match"), an output attention over the last
hidden layer, and one logit; ``s(q) = sigmoid(logit)``.

- feature attention: ``x' = x * d * softmax(W_a x + b_a)`` (weights that average 1);
- hidden layer ``i``: ``h = relu(W_i h + b_i)``, then ``h = h + relu(R_i h + c_i)``;
- output attention: ``o = h * m * softmax(W_o h + b_o)`` with ``m = 64``;
- logit ``l = w . o + b``.

Training (§3.3 "Training") is in torch: BCE-with-logits with label smoothing, AdamW,
cosine annealing, early stopping on a validation loss, seeded (:func:`fit`). Inference
is a numpy forward pass over the saved weights (:class:`Adapter`), so routing needs no
torch. Weights are saved with ``safetensors`` (numpy API); nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN: tuple[int, ...] = (256, 128, 64)
WEIGHTS_FILE = "weights.safetensors"


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass
class Adapter:
    """The adapter's weights (float32 arrays keyed as in the torch module) and a numpy forward pass.

    ``hidden`` lists the hidden widths (default 256, 128, 64).
    """

    weights: dict[str, np.ndarray]
    hidden: tuple[int, ...] = HIDDEN
    _cache: list[tuple[np.ndarray, ...]] = field(default_factory=list, repr=False)

    def _layers(self) -> list[tuple[np.ndarray, ...]]:
        if not self._cache:
            w = self.weights
            self._cache.append((w["attn.weight"].T.copy(), w["attn.bias"]))
            for i in range(len(self.hidden)):
                self._cache.append(
                    (
                        w[f"layers.{i}.weight"].T.copy(),
                        w[f"layers.{i}.bias"],
                        w[f"blocks.{i}.weight"].T.copy(),
                        w[f"blocks.{i}.bias"],
                    )
                )
            self._cache.append((w["out_attn.weight"].T.copy(), w["out_attn.bias"]))
            self._cache.append((w["head.weight"].reshape(-1).copy(), w["head.bias"].reshape(-1)))
        return self._cache

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Logits of standardized feature rows ``x`` (n x d, or one row)."""
        layers = self._layers()
        h = np.atleast_2d(np.asarray(x, dtype=np.float32))
        wa, ba = layers[0]
        h = h * (h.shape[1] * _softmax(h @ wa + ba))
        for wl, bl, wr, br in layers[1:-2]:
            h = _relu(h @ wl + bl)
            h = h + _relu(h @ wr + br)
        wo, bo = layers[-2]
        h = h * (h.shape[1] * _softmax(h @ wo + bo))
        wh, bh = layers[-1]
        return np.asarray(h @ wh + bh, dtype=np.float32)

    def scores(self, x: np.ndarray) -> np.ndarray:
        """``s(q) = sigmoid(logit)`` (Eq. 1), in (0, 1)."""
        return np.asarray(sigmoid(self.logits(x).astype(np.float64)), dtype=np.float64)

    def save(self, folder: Path) -> Path:
        from safetensors.numpy import save_file

        path = folder / WEIGHTS_FILE
        save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in self.weights.items()}, str(path))
        return path

    @classmethod
    def load(cls, folder: Path, hidden: Sequence[int] = HIDDEN) -> Adapter:
        from safetensors.numpy import load_file

        return cls(
            {k: np.asarray(v) for k, v in load_file(str(folder / WEIGHTS_FILE)).items()}, tuple(hidden)
        )


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


__all__ = ["HIDDEN", "Adapter", "FitSettings", "fit", "sigmoid", "torch_logits"]
