"""One-time export of the packaged MiniLM to ONNX (fp32 and int8), checked against torch.

Needs torch, transformers, onnx and onnxruntime; the export's check (its cosines to the
torch vectors) is passed in by :func:`paretorag.providers.onnx_embedder.ensure_export`,
which embeds with the new files. Nothing at query time runs this module's code. The folder is written under a
temporary name and renamed into place, so a reader sees a whole export or none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError

EXPORT_VERSION = 1  # bump when the exported graph or the files in the folder change
VARIANTS = {"fp32": "model.onnx", "int8": "model-int8.onnx"}
META = "meta.json"

OPSET = 17
# the check of a fresh export: (model folder, export folder, meta) -> each variant's smallest
# cosine to the torch vectors (:func:`paretorag.providers.onnx_embedder.reference_cosines`)
Check = Callable[[Path, Path, dict[str, Any]], dict[str, float]]

# Checked at every export: short and long texts, one past the model's window (three
# windows), mixed lengths in one batch (padding), accents, digits and punctuation.
REFERENCE_TEXTS = [
    "Who founded the city where the author of Dune was born?",
    "Port Blair is the capital of the Andaman and Nicobar Islands, a union territory of India.",
    "x",
    "Ärzte ohne Grenzen (Médecins Sans Frontières) won the Nobel Peace Prize in 1999.",
    "The index survives a crash: every commit writes new files, then swaps one manifest.",
    "What is 3.14 * 2? It is 6.28 -- roughly, anyway!",
    " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(60)),
    "A B C D E F G H I J K L M N O P",
]


def _encoder(model: Any) -> Any:
    """The transformer called with keyword inputs, returning the last hidden states."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    return Encoder().eval()


def _export_fp32(model_path: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel

    # eager attention traces the padding mask into the graph (SDPA may skip an all-ones mask)
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]
    dynamic = {name: {0: "batch", 1: "tokens"} for name in names}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes it keeps symbolic
        torch.onnx.export(
            _encoder(model),
            (ids, mask, torch.zeros_like(ids)),
            str(target),
            input_names=names[:3],
            output_names=names[3:],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )


def quantize(source: Path, target: Path) -> None:
    """int8 weights (per channel), activations quantized on the fly (the embedder's and the span reader's)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # its pre-processing hint
    # per-channel weights: about 0.994 mean cosine to fp32, against 0.95 per tensor
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def export(model_path: Path, folder: Path, check: Check) -> dict[str, Any]:
    """Export ``model_path`` into ``folder`` (replacing it) and return its ``meta.json``."""
    for key, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ):
        os.environ.setdefault(key, value)
    try:
        import onnx  # noqa: F401  (the quantizer's)
        import onnxruntime
        import torch
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise MissingDependencyError(
            f"exporting {model_path} to ONNX needs torch, transformers, onnx and onnxruntime ({exc}); "
            f"install them, or copy an export made on another machine into {folder}"
        ) from exc

    hf_logging.disable_progress_bar()

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        _export_fp32(model_path, tmp / VARIANTS["fp32"])
        quantize(tmp / VARIANTS["fp32"], tmp / VARIANTS["int8"])
        files = {}
        for variant, name in VARIANTS.items():
            st = (tmp / name).stat()
            files[variant] = {
                "file": name,
                "sha256": file_sha256(tmp / name),
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
            }
        meta: dict[str, Any] = {
            "export_version": EXPORT_VERSION,
            "model": model_path.name,
            "source": str(model_path),
            "source_weights_sha256": file_sha256(model_path / "model.safetensors")
            if (model_path / "model.safetensors").exists()
            else None,
            "opset": OPSET,
            "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__,
            "files": files,
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        meta["cosine_min"] = check(model_path, tmp, meta)
        meta["reference_texts"] = len(REFERENCE_TEXTS)
        (tmp / META).write_text(json.dumps(meta, indent=2) + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return meta


__all__ = ["EXPORT_VERSION", "META", "REFERENCE_TEXTS", "VARIANTS", "export", "file_sha256", "quantize"]
