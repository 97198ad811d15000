"""TF-IDF over chunks (KGP's node index, unified framework §5 and §6.1 node TF-IDF).

The weighting is scikit-learn's ``TfidfVectorizer`` with its defaults (tested
against it): tokens are lower-cased runs of two or more word characters, term
frequency is the raw count, ``idf = ln((1 + n) / (1 + df)) + 1``, rows are
L2-normalized. The passage-graph builder stores what :func:`fit_tfidf` returns and
the node TF-IDF operator vectorizes the question with :func:`transform`, so both
sides tokenize the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tokenize(text: str) -> list[str]:
    """Lower-cased tokens of two or more word characters (scikit-learn's default pattern)."""
    return TOKEN.findall(text.lower())


def _counts(texts: Sequence[str], vocab: Mapping[str, int]) -> sp.csr_matrix:
    indptr = [0]
    indices: list[int] = []
    for text in texts:
        ids = [vocab[t] for t in tokenize(text) if t in vocab]
        indices.extend(ids)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    m = sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr)), shape=(len(texts), len(vocab))
    )
    m.sum_duplicates()
    m.sort_indices()
    return m


def _l2(m: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ m)


def fit_tfidf(texts: Sequence[str]) -> tuple[sp.csr_matrix, list[str], npt.NDArray[np.float64]]:
    """The L2-normalized TF-IDF matrix of ``texts``, its vocabulary (sorted) and idf.

    Returns ``(matrix, vocab, idf)``: ``matrix`` is (texts x terms), column ``j`` is
    ``vocab[j]`` with weight ``idf[j]``.
    """
    vocab_set: set[str] = set()
    for text in texts:
        vocab_set.update(tokenize(text))
    vocab = sorted(vocab_set)
    index = {t: j for j, t in enumerate(vocab)}
    counts = _counts(texts, index)
    df = np.bincount(counts.indices, minlength=len(vocab)).astype(np.float64)
    idf = np.log((1.0 + len(texts)) / (1.0 + df)) + 1.0
    return _l2(sp.csr_matrix(counts @ sp.diags(idf))), vocab, idf


def transform(texts: Sequence[str], vocab: Mapping[str, int], idf: npt.ArrayLike) -> sp.csr_matrix:
    """TF-IDF rows of new texts (a question) in a fitted vocabulary (unknown terms dropped)."""
    w = np.asarray(idf, dtype=np.float64)
    return _l2(sp.csr_matrix(_counts(texts, vocab) @ sp.diags(w)))


__all__ = ["TOKEN", "fit_tfidf", "tokenize", "transform"]
