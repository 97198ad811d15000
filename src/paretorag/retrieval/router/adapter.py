"""The MLP adapter g_theta: standardized features -> complexity score s(q) (EA-GraphRAG §3.3, Eq. 1).

Architecture (§3.3 "Architecture"): feature-level attention on the input, hidden layers
of 256, 128 and 64 units, each followed by a residual block of its own width (the
"residual connections where dimensions match"), an output attention over the last
hidden layer, and one logit; ``s(q) = sigmoid(logit)``.

- feature attention: ``x' = x * d * softmax(W_a x + b_a)`` (weights that average 1);
- hidden layer ``i``: ``h = relu(W_i h + b_i)``, then ``h = h + relu(R_i h + c_i)``;
- output attention: ``o = h * m * softmax(W_o h + b_o)`` with ``m = 64``;
- logit ``l = w . o + b``.

Training (§3.3 "Training") is in torch, in :mod:`paretorag.training.router_fit`.
Inference is a numpy forward pass over the saved weights (:class:`Adapter`), so routing
needs no torch. Weights are saved with ``safetensors`` (numpy API); nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


__all__ = ["HIDDEN", "Adapter", "sigmoid"]
