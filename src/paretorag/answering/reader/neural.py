"""The neural span reader at query time: ONNX Runtime and a tokenizer, no torch.

A small BERT encoder (all-MiniLM-L6-v2 fine-tuned by
:mod:`paretorag.training.neural_reader`) reads ``[CLS] question [SEP] passage [SEP]`` and
gives a start and an end logit per token and four class logits on ``[CLS]``: span, yes,
no, no-answer. A passage longer than the model's window is read in windows that overlap by
``doc_stride`` tokens (the overlap, as in Hugging Face's ``run_qa``; not the step between
window starts as in the original BERT SQuAD script), so every passage token is in at
least one window (:func:`windows`). Each window is its own ``session.run``
(:meth:`SpanModel.logits`).

Packed reading (``"pack": true`` in ``neural.json``'s settings, or ``$PARETORAG_SPAN_PACK=1``):
consecutive passages, in the given order, share one window, joined by a blank line,
``[CLS] question [SEP] passage [SEP]`` with passage ``p1 \n\n p2 \n\n ...``, while their
tokens fit the window's room (``max_length`` less the question and three special tokens); a
passage longer than the room is read alone in windows as above. The model can then join a
bridge passage ("the director of X is Y") to the one with the answer ("Y was born in Z").
A span is mapped back to its passage; one across two passages is no answer.

A span's score is a probability over every candidate of the question (the top spans of
each window, and each window's yes and no): ``log P(class | window) + log P(start) + log
P(end)`` for a span (start and end softmaxed over the window's passage tokens),
``log P(yes | window)`` for yes, then a softmax across all of them.

The folder holds ``reader.onnx`` (or ``reader-int8.onnx``), ``tokenizer.json`` and
``neural.json`` with the sha256 of each ONNX file; :class:`SpanModel` checks the sha256
before it opens a file.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, InputError, MissingDependencyError
from ...providers.onnx_embedder import cache_root
from ...providers.onnx_export import file_sha256
from ...providers.ort_session import cpu_session
from ..span_files import (
    META_FILE,
    SPAN_MODE_ENV,
    SPAN_MODEL_ENV,
    SPAN_MODES,
    SPAN_PACK_ENV,
    SPAN_THREADS,
    TOKENIZER_FILE,
    VARIANTS,
    configured_span_model,
    loaded_variant,
    shipped_span_model,
)

CLASSES = ("span", "yes", "no", "none")  # the order of the [CLS] head's logits
MAX_LENGTH = 384
DOC_STRIDE = 128
MAX_QUESTION = 64
MAX_ANSWER = 30  # tokens
LOGIT_MEMO = 256  # windows whose logits a model remembers (about 3 KB each at 384 tokens)


@dataclass(frozen=True)
class Window:
    """One model input: the question and a stretch of one passage's tokens.

    ``first`` is the position of the passage's first token in ``ids``; ``offsets`` maps
    the window's passage tokens to character ``(start, end)`` in the passage text. A packed
    window holds several passages: ``owners`` gives the passage of each token (``offsets``
    are then in that token's own passage) and ``passage`` is the first of them.
    """

    passage: int
    ids: list[int]
    type_ids: list[int]
    first: int
    offsets: list[tuple[int, int]]
    owners: tuple[int, ...] | None = None

    def passage_of(self, token: int) -> int:
        """The passage of the window's ``token``-th passage token."""
        return self.passage if self.owners is None else self.owners[token]


@dataclass(frozen=True)
class Span:
    """An answer the model reads: a span of one passage, or ``yes`` / ``no``.

    ``start``/``end`` are character offsets in ``passages[passage]`` (``-1`` for yes/no);
    ``score`` is the softmax over every candidate of the question; ``yes``, ``no`` and
    ``no_answer`` are the class probabilities of the window the answer came from.
    """

    text: str
    passage: int
    start: int
    end: int
    score: float
    kind: str
    yes: float
    no: float
    no_answer: float


def windows(n_tokens: int, room: int, overlap: int = DOC_STRIDE) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``room`` tokens covering ``0..n_tokens``.

    Consecutive windows overlap by ``overlap`` tokens (less when ``room`` is small), and
    the last one ends at ``n_tokens``; an empty passage gives one empty window.
    """
    if room < 1:
        raise ConfigError(f"a window must hold at least one passage token, got room {room}")
    overlap = min(overlap, room // 2)
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + room, n_tokens)
        out.append((start, end))
        if end >= n_tokens:
            return out
        start = end - overlap


def load_tokenizer(path: Path | str) -> Any:
    """The fast tokenizer of ``tokenizer.json`` with its truncation and padding turned off."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def pack_groups(lengths: list[int], room: int) -> list[list[int]]:
    """Passage indices in packed windows: consecutive passages, in order, while their tokens
    sum to at most ``room``; a passage longer than ``room`` is a group of its own."""
    groups: list[list[int]] = []
    size = room + 1  # no open group
    for i, n in enumerate(lengths):
        if size + n <= room:
            groups[-1].append(i)
            size += n
        else:
            groups.append([i])
            size = n if n <= room else room + 1  # a long passage is read alone
    return groups


def encode(
    tokenizer: Any,
    question: str,
    passages: list[str],
    *,
    max_length: int = MAX_LENGTH,
    doc_stride: int = DOC_STRIDE,
    pack: bool = False,
) -> list[Window]:
    """Every window of every passage, ``[CLS] question [SEP] passage tokens [SEP]``; with
    ``pack``, passages that fit together share a window (:func:`pack_groups`; the tokens of
    passages joined by a blank line are the passages' tokens one after the other)."""
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    q_ids = tokenizer.encode(question, add_special_tokens=False).ids[:MAX_QUESTION]
    room = max_length - len(q_ids) - 3
    head = [cls_id, *q_ids, sep_id]
    out: list[Window] = []
    encoded = tokenizer.encode_batch(list(passages), add_special_tokens=False)
    if pack:
        for group in pack_groups([len(e.ids) for e in encoded], room):
            if len(group) == 1:
                out.extend(_passage_windows(head, sep_id, group[0], encoded[group[0]], room, doc_stride))
                continue
            ids = [t for i in group for t in encoded[i].ids]
            out.append(
                Window(
                    passage=group[0],
                    ids=[*head, *ids, sep_id],
                    type_ids=[0] * len(head) + [1] * (len(ids) + 1),
                    first=len(head),
                    offsets=[tuple(o) for i in group for o in encoded[i].offsets],
                    owners=tuple(i for i in group for _ in encoded[i].ids),
                )
            )
        return out
    for i, enc in enumerate(encoded):
        out.extend(_passage_windows(head, sep_id, i, enc, room, doc_stride))
    return out


def _passage_windows(
    head: list[int], sep_id: int, i: int, enc: Any, room: int, doc_stride: int
) -> list[Window]:
    """The windows of one passage read alone."""
    out: list[Window] = []
    for a, b in windows(len(enc.ids), room, doc_stride):
        ids = [*head, *enc.ids[a:b], sep_id]
        out.append(
            Window(
                passage=i,
                ids=ids,
                type_ids=[0] * len(head) + [1] * (b - a + 1),
                first=len(head),
                offsets=[tuple(o) for o in enc.offsets[a:b]],
            )
        )
    return out


def batch_arrays(wins: list[Window]) -> dict[str, np.ndarray]:
    """The windows padded into ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64)."""
    width = max(len(w.ids) for w in wins)
    ids = np.zeros((len(wins), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for r, w in enumerate(wins):
        ids[r, : len(w.ids)] = w.ids
        mask[r, : len(w.ids)] = 1
        types[r, : len(w.type_ids)] = w.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def best_spans(
    start: np.ndarray, end: np.ndarray, *, max_answer: int = MAX_ANSWER, top: int = 5
) -> list[tuple[int, int, float]]:
    """The ``top`` ``(i, j, start[i] + end[j])`` with ``i <= j < i + max_answer``, best first."""
    n = len(start)
    if n == 0:
        return []
    total = start[:, None] + end[None, :]
    i, j = np.indices((n, n))
    total = np.where((j >= i) & (j - i < max_answer), total, -np.inf)
    flat = total.ravel()
    k = min(top, int(np.isfinite(flat).sum()))
    order = np.argpartition(-flat, k - 1)[:k]
    order = order[np.argsort(-flat[order], kind="stable")]
    return [(int(o // n), int(o % n), float(flat[o])) for o in order]


class SpanModel:
    """The span reader of one model folder, on ONNX Runtime (CPU).

    Parameters
    ----------
    folder : Path or str
        Holds ``neural.json``, ``tokenizer.json`` and the ONNX file of ``variant``.
    variant : {"fp32", "int8"}
    threads : int
        ``intra_op_num_threads`` of the session.
    pack : bool, optional
        Read passages packed (:func:`encode`); None: ``$PARETORAG_SPAN_PACK`` (``1`` / ``0``)
        when it is set, else ``neural.json``'s ``settings.pack`` (false when absent).
    """

    def __init__(
        self,
        folder: Path | str,
        *,
        variant: str = "fp32",
        threads: int = SPAN_THREADS,
        pack: bool | None = None,
    ) -> None:
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError(
                "the neural reader needs onnxruntime: pip install 'paretorag[onnx]'"
            ) from exc
        if variant not in VARIANTS:
            raise ConfigError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
        self.folder = Path(folder)
        meta_path = self.folder / META_FILE
        if not meta_path.is_file():
            raise InputError(f"{meta_path} not found; train a model with `paretorag train-reader --neural`")
        self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        onnx_path = self.folder / VARIANTS[variant]
        want = self.meta.get("files", {}).get(VARIANTS[variant], {}).get("sha256")
        if not onnx_path.is_file() or want is None:
            raise InputError(f"{onnx_path} is missing or not listed in {meta_path}; export the model again")
        got = file_sha256(onnx_path)
        if got != want:
            raise InputError(
                f"{onnx_path} has sha256 {got[:12]}… but {META_FILE} records {want[:12]}…; "
                "the file was changed or damaged: export the model again"
            )
        self.variant = variant
        self.max_length = int(self.meta.get("settings", {}).get("max_length", MAX_LENGTH))
        self.doc_stride = int(self.meta.get("settings", {}).get("doc_stride", DOC_STRIDE))
        self.pack_setting = pack
        self.tokenizer = load_tokenizer(self.folder / TOKENIZER_FILE)
        self.session = cpu_session(onnx_path, threads=threads, cache=cache_root())
        self._memo: OrderedDict[tuple[tuple[int, ...], ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._memo_lock = threading.Lock()

    @property
    def pack(self) -> bool:
        """Whether :meth:`read` packs passages: the ``pack`` argument, else ``$PARETORAG_SPAN_PACK``,
        else ``neural.json``'s ``settings.pack``."""
        if self.pack_setting is not None:
            return self.pack_setting
        env = os.environ.get(SPAN_PACK_ENV, "").strip()
        if env:
            if env not in ("0", "1"):
                raise ConfigError(f"${SPAN_PACK_ENV} must be 0 or 1, got {env!r}")
            return env == "1"
        return bool(self.meta.get("settings", {}).get("pack", False))

    def logits(self, wins: list[Window]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, end and class logits of the windows (rows in their order; a row's columns
        past its window's length are 0), one ``session.run`` per window.

        Per window, not one padded batch: the int8 model quantizes its activations with
        one scale per batch, so in a batch a window's logits moved with its neighbours'
        (by up to 2.0 over the windows of a QuALITY story), and a passage's answer with the
        other passages retrieved; and a passage's short last window was padded to the
        others' 384 tokens. On a CPU one window fills the matrix units as a batch does:
        five 1,200-token chunks (8 windows) read in 0.22-0.25 s, 0.42-0.47 s as one batch.
        """
        width = max(len(w.ids) for w in wins)
        start = np.zeros((len(wins), width), dtype=np.float32)
        end = np.zeros_like(start)
        cls = np.zeros((len(wins), len(CLASSES)), dtype=np.float32)
        for r, w in enumerate(wins):
            s, e, c = self._window_logits(w)
            start[r, : len(s)] = s
            end[r, : len(e)] = e
            cls[r] = c
        return start, end, cls

    def _window_logits(self, w: Window) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One window's logits, remembered for the last :data:`LOGIT_MEMO` windows read: the
        reader's second hop reads the first hop's passages again with the same question."""
        key = (tuple(w.ids), tuple(w.type_ids))
        with self._memo_lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                return hit
        s, e, c = self.session.run(None, batch_arrays([w]))
        out = (s[0], e[0], c[0])
        with self._memo_lock:
            self._memo[key] = out
            while len(self._memo) > LOGIT_MEMO:
                self._memo.popitem(last=False)
        return out

    def read(self, question: str, passages: list[str], top: int = 5) -> list[Span]:
        """The ``top`` answers to ``question`` over ``passages``, best first (empty with no passages)."""
        if not passages:
            return []
        wins = encode(
            self.tokenizer,
            question,
            passages,
            max_length=self.max_length,
            doc_stride=self.doc_stride,
            pack=self.pack,
        )
        start, end, cls = self.logits(wins)
        cands: list[tuple[float, str, int, int, int]] = []  # (log score, kind, window, i, j)
        class_prob = np.exp(_log_softmax(cls))
        for r, w in enumerate(wins):
            n = len(w.offsets)
            log_cls = _log_softmax(cls[r])
            cands.append((float(log_cls[1]), "yes", r, -1, -1))
            cands.append((float(log_cls[2]), "no", r, -1, -1))
            if n == 0:
                continue
            s = _log_softmax(start[r, w.first : w.first + n])
            e = _log_softmax(end[r, w.first : w.first + n])
            for i, j, lp in best_spans(s, e, top=top):
                cands.append((float(log_cls[0]) + lp, "span", r, i, j))
        scores = np.array([c[0] for c in cands])
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        out: list[Span] = []
        seen: set[tuple[int, int, int] | str] = set()
        for o in order:
            _, kind, r, i, j = cands[o]
            w = wins[r]
            where = w.passage
            if kind == "span":
                where = w.passage_of(i)
                if w.passage_of(j) != where:  # across two packed passages
                    continue
                a, b = w.offsets[i][0], w.offsets[j][1]
                key: tuple[int, int, int] | str = (where, a, b)
                text = passages[where][a:b]
                if "\n" in text:  # across a line break: two lines of a list or of a condensed passage
                    continue
            else:
                a = b = -1
                key = kind
                text = kind
            if key in seen:  # the same span read in two overlapping windows
                continue
            seen.add(key)
            p = class_prob[r]
            out.append(
                Span(
                    text=text,
                    passage=where,
                    start=a,
                    end=b,
                    score=float(probs[o]),
                    kind=kind,
                    yes=float(p[1]),
                    no=float(p[2]),
                    no_answer=float(p[3]),
                )
            )
            if len(out) >= top:
                break
        return out


_LOADED: dict[str, SpanModel] = {}
_LOAD_LOCK = threading.Lock()


def load_span_model(folder: Path | str) -> SpanModel:
    """The span model of ``folder`` (its int8 export when there is one), loaded once per process
    (a call while another thread loads it waits for that load)."""
    path = Path(folder)
    key = str(path.resolve())
    with _LOAD_LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = SpanModel(path, variant=loaded_variant(path))
    return model


__all__ = [
    "CLASSES",
    "META_FILE",
    "SPAN_MODEL_ENV",
    "SPAN_MODES",
    "SPAN_MODE_ENV",
    "SPAN_PACK_ENV",
    "TOKENIZER_FILE",
    "VARIANTS",
    "Span",
    "SpanModel",
    "Window",
    "best_spans",
    "configured_span_model",
    "encode",
    "load_span_model",
    "pack_groups",
    "shipped_span_model",
    "windows",
]
