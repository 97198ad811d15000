"""The BM25 index of the chunks (sparse lexical retrieval), built with ``bm25s``.

BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
2009) scores a chunk ``d`` for a question ``q`` as

    score(q, d) = sum over terms t of q:  idf(t) * tf(t, d) * (k1 + 1)
                                          / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

with Lucene's ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (``method="lucene"``, the
``bm25s`` default) and ``k1 = 1.5``, ``b = 0.75``. ``bm25s`` (Lù, 2024) computes every
term's score in every chunk at index time, so the index is one sparse chunk x term
matrix and a query is the sum of its terms' columns.

Tokenization is fixed and offline, and stored in ``meta["tokenizer"]`` so that a
question is tokenized exactly as the chunks were:

- lower case, tokens ``(?u)\\b\\w\\w+\\b`` (scikit-learn's ``CountVectorizer`` pattern,
  the ``bm25s`` default);
- ``stopwords="english"``: the 33-word English stopword list shipped with ``bm25s``
  (articles, conjunctions, prepositions, forms of "be"; in the package, nothing is
  downloaded);
- ``stemmer="snowball"``: the Snowball English stemmer (Porter2), PyStemmer's
  ``"english"`` (the Snowball project's C code, no data files; builder version 2; version 1
  ran NLTK's older Porter2, which stems 0.2% of the benchmark corpora's words differently,
  "university" -> "univers" for "universiti"). ``"none"`` keeps the words as they are.

The chunk's title is indexed with its text (``titles=True``), as the chunk vectors embed
``"title\\ntext"``; a chunk of a longer document is indexed with its heading path instead
(``ChunkTable.embedded_texts``).

Stored arrays (``allow_pickle=False``, no pickle anywhere): ``scores_data`` /
``scores_indices`` / ``scores_indptr`` (the chunk x term score matrix in CSC form: column
``j`` holds term ``j``'s score in every chunk that contains it) and the vocabulary
``vocab_utf8`` / ``vocab_offsets`` (term of column ``j``, sorted). The structure is keyed
by the chunk set like every structure, so an insert or a delete rebuilds it: IDF and the
average length change with every chunk. Each chunk's terms are cached in the index by
text and tokenizer settings, so a rebuild tokenizes (and stems, most of the cost) only
new chunks and recomputes the scores, a fraction of a second for 6,000 passages. No LLM
call.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..storage.store import text_hash
from ..storage.structures import StructureData, pack_texts, unpack_texts
from ..textutil import stem_words
from .base import BuildContext, Builder, register_builder

STRUCTURE = "bm25"
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
STEMMERS = ("snowball", "none")
STOPWORDS = ("english", "none")
METHODS = ("lucene", "robertson", "atire")
TOKENIZE_BATCH = 1024  # chunks per progress step


def _bm25s() -> Any:
    """``bm25s``, its logger at WARNING: it sets its own to DEBUG, so that "Building index from
    IDs" reached the console at every index and query."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def tokenize(texts: Sequence[str], settings: dict[str, Any]) -> list[list[str]]:
    """The BM25 terms of each text under the stored tokenizer ``settings`` (see the module)."""
    bm25s = _bm25s()

    stemmer = settings.get("stemmer", "snowball")
    stopwords = settings.get("stopwords", "english")
    if stemmer not in STEMMERS:
        raise ConfigError(f"bm25 stemmer must be one of {STEMMERS}, got {stemmer!r}")
    if stopwords not in STOPWORDS:
        raise ConfigError(f"bm25 stopwords must be one of {STOPWORDS}, got {stopwords!r}")
    if not texts:
        return []
    out = bm25s.tokenize(
        list(texts),
        lower=True,
        token_pattern=settings.get("token_pattern", TOKEN_PATTERN),
        stopwords=[] if stopwords == "none" else stopwords,
        stemmer=stem_words if stemmer == "snowball" else None,
        return_ids=False,
        show_progress=False,
    )
    return [list(tokens) for tokens in out]


def tokenizer_settings(stemmer: str = "snowball", stopwords: str = "english") -> dict[str, Any]:
    """The stored tokenizer settings (``meta["tokenizer"]``) for a stemmer and stopword choice."""
    return {"token_pattern": TOKEN_PATTERN, "stemmer": stemmer, "stopwords": stopwords}


def build_bm25(
    texts: Sequence[str],
    *,
    k1: float = 1.5,
    b: float = 0.75,
    method: str = "lucene",
    stemmer: str = "snowball",
    stopwords: str = "english",
) -> StructureData:
    """The BM25 structure of ``texts`` (one per chunk row), see the module docstring."""
    settings = tokenizer_settings(stemmer, stopwords)
    t0 = time.perf_counter()
    docs = tokenize(texts, settings)
    seconds_tokenize = time.perf_counter() - t0
    data = bm25_from_tokens(docs, settings, k1=k1, b=b, method=method)
    data.meta["stats"]["tokenize_seconds"] = round(seconds_tokenize, 4)
    return data


def bm25_from_tokens(
    docs: Sequence[Sequence[str]],
    settings: dict[str, Any],
    *,
    k1: float = 1.5,
    b: float = 0.75,
    method: str = "lucene",
) -> StructureData:
    """The BM25 structure of chunks already tokenized with ``settings`` (:func:`tokenize`)."""
    bm25s = _bm25s()

    if method not in METHODS:
        raise ConfigError(f"bm25 method must be one of {METHODS}, got {method!r}")
    if isinstance(k1, bool) or not (isinstance(k1, int | float) and k1 >= 0):
        raise ConfigError(f"bm25 k1 must be a number >= 0, got {k1!r}")
    if isinstance(b, bool) or not (isinstance(b, int | float) and 0 <= b <= 1):
        raise ConfigError(f"bm25 b must be in [0, 1], got {b!r}")
    t0 = time.perf_counter()
    vocab = sorted({t for doc in docs for t in doc})  # sorted: the same build gives the same arrays
    column = {t: j for j, t in enumerate(vocab)}
    n_docs = len(docs)
    if vocab:
        retriever = bm25s.BM25(k1=float(k1), b=float(b), method=method, backend="numpy", csc_backend="scipy")
        ids = [[column[t] for t in doc] for doc in docs]
        retriever.index((ids, column), create_empty_token=False, show_progress=False)
        scores = retriever.scores
        data = np.asarray(scores["data"], dtype=np.float32)
        indices = np.asarray(scores["indices"], dtype=np.int32)
        indptr = np.asarray(scores["indptr"], dtype=np.int64)
    else:  # no terms at all (empty or stopword-only chunks): nothing ever matches
        data, indices, indptr = np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(1, np.int64)
    arrays: dict[str, np.ndarray] = {"scores_data": data, "scores_indices": indices, "scores_indptr": indptr}
    arrays["vocab_utf8"], arrays["vocab_offsets"] = pack_texts(vocab)
    lengths = [len(doc) for doc in docs]
    meta: dict[str, Any] = {
        "n_chunks": n_docs,
        "tokenizer": settings,
        "scoring": {"method": method, "k1": float(k1), "b": float(b)},
        "bm25s_version": bm25s.__version__,
        "summary": {
            "terms": len(vocab),
            "postings": int(data.size),
            "avg_chunk_terms": round(float(np.mean(lengths)), 2) if lengths else 0.0,
        },
        "stats": {"score_seconds": round(time.perf_counter() - t0, 4)},
    }
    return StructureData(arrays, meta)


class BM25Index:
    """A loaded BM25 structure: the chunk x term CSC score matrix and the term -> column map."""

    def __init__(self, data: StructureData) -> None:
        a, meta = data.arrays, data.meta
        if "scores_indptr" not in a or "tokenizer" not in meta:
            raise ConfigError("this structure is not a BM25 index; rebuild it with `paretorag index`")
        vocab = unpack_texts(a["vocab_utf8"], a["vocab_offsets"])
        self.settings: dict[str, Any] = dict(meta["tokenizer"])
        self.column = {t: j for j, t in enumerate(vocab)}
        self.matrix = sp.csc_matrix(
            (a["scores_data"], a["scores_indices"], a["scores_indptr"]),
            shape=(int(meta["n_chunks"]), len(vocab)),
        )

    def query_columns(self, question: str) -> np.ndarray:
        """Columns of the question's terms, repeats kept (a repeated term counts again, as in bm25s)."""
        terms = tokenize([question], self.settings)[0]
        return np.asarray([self.column[t] for t in terms if t in self.column], dtype=np.int64)

    def scores(self, question: str) -> np.ndarray:
        """BM25 score of every chunk row for ``question`` (0 where no term matches)."""
        from ..kernels.rank import column_sums

        return column_sums(self.matrix, self.query_columns(question))


@register_builder
class BM25Builder(Builder):
    """BM25 over the chunks' titles and texts (``bm25s``; see the module docstring).

    Parameters
    ----------
    k1 : float
        Term-frequency saturation (1.5).
    b : float
        Length normalization, in [0, 1] (0.75).
    method : {"lucene", "robertson", "atire"}
        The BM25 variant of ``bm25s`` (``"lucene"``, its default).
    stemmer : {"snowball", "none"}
        Snowball English (Porter2) stemming, or none.
    stopwords : {"english", "none"}
        Drop the English stopwords shipped with ``bm25s``, or keep every word.
    titles : bool
        Index ``"title\\ntext"`` (or ``"heading path\\ntext"`` for a chunk of a longer
        document; True) or the text alone.
    """

    name = STRUCTURE
    version = 2  # 2: PyStemmer's Snowball English (1: NLTK's); an older index rebuilds its BM25

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: Literal["lucene", "robertson", "atire"] = "lucene",
        stemmer: Literal["snowball", "none"] = "snowball",
        stopwords: Literal["english", "none"] = "english",
        titles: bool = True,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.method = method
        self.stemmer = stemmer
        self.stopwords = stopwords
        self.titles = titles

    def build(self, ctx: BuildContext) -> StructureData:
        texts = ctx.chunks.embedded_texts(bool(self.titles), headings=bool(self.titles))
        settings = tokenizer_settings(self.stemmer, self.stopwords)
        # each chunk's terms are cached by text and tokenizer, so an insert tokenizes only
        # its new chunks (stemming is most of a build); the scores are recomputed in full
        salt = json.dumps({"v": self.version, **settings}, sort_keys=True)
        keys = [f"bm25:{text_hash(salt + chr(0) + t)}" for t in texts]
        t0 = time.perf_counter()
        cached = ctx.cache_get(sorted(set(keys)))
        todo = sorted({k: i for i, k in reversed(list(enumerate(keys))) if k not in cached}.values())
        with ctx.progress.task("bm25 index", total=len(todo) + 1) as bar:
            fresh: list[tuple[str, Any]] = []
            for start in range(0, len(todo), TOKENIZE_BATCH):
                batch = todo[start : start + TOKENIZE_BATCH]
                terms = tokenize([texts[i] for i in batch], settings)
                fresh.extend((keys[i], t) for i, t in zip(batch, terms, strict=True))
                bar.advance(len(batch))
            if fresh:
                ctx.cache_put(fresh)
                cached.update(fresh)
            seconds_tokenize = time.perf_counter() - t0
            data = bm25_from_tokens(
                [cached[k] for k in keys], settings, k1=self.k1, b=self.b, method=self.method
            )
            bar.advance()
        data.meta["stats"].update(
            {
                "tokenize_seconds": round(seconds_tokenize, 4),
                "chunks_tokenized": len(todo),
                "chunks_from_cache": len(texts) - len(todo),
            }
        )
        data.meta["chunks_fingerprint"] = ctx.chunks.fingerprint()
        data.meta["titles"] = bool(self.titles)
        return data


__all__ = [
    "STRUCTURE",
    "BM25Builder",
    "BM25Index",
    "bm25_from_tokens",
    "build_bm25",
    "tokenize",
    "tokenizer_settings",
]
