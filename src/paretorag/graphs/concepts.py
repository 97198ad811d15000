"""The G2ConS concept graph: LLM-free, built from TF-IDF keywords (papers/g2cons.txt §3.2).

Build steps (each a function, so methods can rebuild Table 4's ablation variants from
the stored ingredients without re-indexing):

1. :func:`extract_concepts`: "Concept Extraction" - the top-n TF-IDF keywords of every
   chunk (Ramos 2003; stopwords and numbers filtered), linked to the chunks it was
   extracted from (§3.2) or, optionally, to every chunk containing it (§1).
2. :func:`sentence_incidence` and :func:`mean_vectors`: "Vectorization" - Eq. 1, a
   concept's vector is the mean embedding of the sentences of its chunks containing it.
   A sentence's embedding is either its own forward pass (``sentence_vectors="separate"``)
   or the mean of the token embeddings of its chunk's pass over the sentence's tokens
   (``"pooled"``: no second pass; :func:`sentence_char_spans` maps sentences to the
   chunk's embedded text, and the chunk-vector stage pools them in the same pass).
3. :func:`concept_edges`: "Connect Concepts by Relevance" - an edge iff cosine >=
   theta_sem and chunk-level co-occurrence >= theta_co, weighted by the Dice coefficient
   2 Co / (|T_wi| + |T_wj|); co-occurrence by sparse products, similarities only for
   co-occurring pairs.
4. PageRank over the graph, chunks ranked by their concepts, the top kappa kept as core
   chunks ("Core Chunk Selection", :mod:`paretorag.retrieval.operators.concepts`).

Stored as a :class:`~paretorag.graphs.graph.Graph` (kinds ``"concept"``; ``adjacency``: Dice
weights; ``node_chunks``: concept x chunk incidence; ``node_vectors``: the normalized
Eq. 1 vectors) plus the builder's own arrays: ``sent_{indptr,indices,data}`` and
``sent_chunk`` (sentence x concept CSR and the chunk of each sentence), ``pagerank``,
``chunk_score`` and ``core_rows`` (core chunks best first; ``meta["core"]``).

One module (over 400 lines) because the build steps and the builder share the stored
ingredients that Table 4's variants are rebuilt from; split, each half would import the other.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ConfigError
from ..kernels import normalize_rows, pagerank
from ..params import check_fraction, check_positive_int
from ..providers.embedders import embed_with_spans
from ..textutil import sentence_spans, split_sentences
from ..types import FloatArray, IntArray
from .base import BuildContext, Builder, StructureData, register_builder
from .graph import Graph, graph_to_structure

if TYPE_CHECKING:
    from ..storage.store import ChunkTable

F64 = npt.NDArray[np.float64]

# Words of two or more characters starting with a letter: numbers ("1990", "875") are
# never concepts; tokens longer than 40 characters (URLs, garbage) are dropped.
TOKEN_PATTERN = r"(?u)\b[^\W\d_]\w{1,39}\b"
Incidence = Literal["contains", "source"]
SentenceVectors = Literal["pooled", "separate"]


def chunk_documents(chunks: ChunkTable, include_title: bool = True) -> list[list[str]]:
    """The sentences of every chunk; the title (entity name of a corpus passage) is
    a sentence of its own when ``include_title`` and the text does not start with it."""
    out: list[list[str]] = []
    for title, text in zip(chunks.titles, chunks.texts, strict=True):
        sents = split_sentences(text)
        if include_title and title.strip() and not text.lstrip().startswith(title.strip()):
            sents.insert(0, title.strip())
        out.append(sents)
    return out


def sentence_char_spans(
    chunks: ChunkTable, texts: list[str], include_title: bool = True
) -> list[list[tuple[int, int] | None]]:
    """Where each sentence of :func:`chunk_documents` lies in its chunk's embedded text.

    ``texts`` are the texts the chunk vectors embed (``"title\ntext"`` or the text: the
    text is always their suffix). A title sentence that the embedded text does not hold
    (titles not embedded, or a chunk of a longer document) has no span (``None``).
    """
    out: list[list[tuple[int, int] | None]] = []
    for title, text, emb in zip(chunks.titles, chunks.texts, texts, strict=True):
        shift = len(emb) - len(text)
        if shift < 0 or emb[shift:] != text:
            raise ConfigError("sentence_char_spans: each embedded text must end with its chunk's text")
        row: list[tuple[int, int] | None] = [(a + shift, b + shift) for a, b in sentence_spans(text)]
        t = title.strip()
        if include_title and t and not text.lstrip().startswith(t):
            at = emb.find(t, 0, shift) if shift else -1
            row.insert(0, (at, at + len(t)) if at >= 0 else None)
        out.append(row)
    return out


def _binary(m: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    out = sp.csr_matrix(m, dtype=np.float32)
    out.eliminate_zeros()
    out.data[:] = 1.0
    return out


def extract_concepts(
    texts: list[str],
    *,
    top_n: int = 20,
    max_df: float | int = 0.5,
    min_df: float | int = 1,
    incidence: Incidence = "source",
) -> tuple[list[str], sp.csr_matrix]:
    """TF-IDF keyword extraction (§3.2, Ramos 2003): concepts and the chunk x concept incidence.

    Parameters
    ----------
    texts : list of str
        One text per chunk.
    top_n : int
        Keywords kept per chunk (highest TF-IDF, ties by word).
    max_df, min_df : float or int
        scikit-learn document-frequency limits of the vocabulary.
    incidence : {"source", "contains"}
        ``"source"``: a concept is linked to the chunks it was extracted from (§3.2, "edges
        between w_i and its source chunk t_i"); ``"contains"``: to every chunk containing
        the word (§1's definition for the deletion study).

    Returns
    -------
    concepts : list of str
        Sorted concept words.
    chunk_concepts : csr_matrix, shape (n_chunks, n_concepts)
        Binary incidence.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    top_n = check_positive_int(extract_concepts, "top_n", top_n)
    if incidence not in ("contains", "source"):
        raise ConfigError(f"incidence must be 'contains' or 'source', got {incidence!r}")
    if not any(t.strip() for t in texts):
        return [], sp.csr_matrix((len(texts), 0), dtype=np.float32)
    vec = TfidfVectorizer(
        token_pattern=TOKEN_PATTERN,
        stop_words="english",
        lowercase=True,
        max_df=max_df,
        min_df=min_df,
        dtype=np.float32,
    )
    try:
        tfidf = sp.csr_matrix(vec.fit_transform(texts))
    except ValueError:  # scikit-learn: empty vocabulary (only stopwords or numbers)
        return [], sp.csr_matrix((len(texts), 0), dtype=np.float32)
    tfidf.sort_indices()
    row_of = np.repeat(np.arange(tfidf.shape[0]), np.diff(tfidf.indptr))
    order = np.lexsort((tfidf.indices, -tfidf.data, row_of))
    rank = np.arange(order.size) - tfidf.indptr[row_of[order]]
    kept = order[rank < top_n]
    cols = np.unique(tfidf.indices[kept])
    names = vec.get_feature_names_out()[cols].tolist()
    if incidence == "contains":
        return names, _binary(tfidf[:, cols])
    remap = np.full(tfidf.shape[1], -1, dtype=np.int64)
    remap[cols] = np.arange(cols.size)
    m = sp.csr_matrix(
        (np.ones(kept.size, np.float32), (row_of[kept], remap[tfidf.indices[kept]])),
        shape=(tfidf.shape[0], cols.size),
    )
    return names, _binary(m)


def sentence_incidence(sentences: list[str], concepts: list[str]) -> sp.csr_matrix:
    """Binary sentence x concept incidence (same tokenization as the keyword extraction)."""
    from sklearn.feature_extraction.text import CountVectorizer

    if not concepts or not sentences:
        return sp.csr_matrix((len(sentences), len(concepts)), dtype=np.float32)
    vec = CountVectorizer(token_pattern=TOKEN_PATTERN, lowercase=True, vocabulary=concepts, binary=True)
    return _binary(vec.transform(sentences))


def mean_vectors(incidence: sp.csr_matrix, unit_vectors: np.ndarray) -> FloatArray:
    """Row i: the mean of ``unit_vectors`` over the units containing concept i.

    Eq. 1 with sentences as units; Table 4's variant C with chunks. ``incidence`` is
    units x concepts; a concept found in no unit gets a zero vector.
    """
    inc_t = sp.csr_matrix(incidence.T, dtype=np.float32)
    sums = np.asarray(inc_t @ np.asarray(unit_vectors, dtype=np.float32), dtype=np.float32)
    counts = np.diff(inc_t.indptr).astype(np.float32)
    sums /= np.maximum(counts, 1.0)[:, np.newaxis]
    return sums


def concept_edges(
    incidence: sp.csr_matrix,
    vectors: FloatArray | None,
    *,
    theta_sem: float = 0.65,
    theta_co: int = 3,
    block: int = 2048,
    pair_block: int = 65536,
) -> sp.csr_matrix:
    """The concept graph's edges (§3.2 "Connect Concepts by Relevance").

    Parameters
    ----------
    incidence : csr_matrix, shape (n_units, n_concepts)
        Binary unit x concept incidence; units are chunks (the paper) or sentences
        (Table 4, variant A).
    vectors : ndarray or None, shape (n_concepts, d)
        L2-normalized concept vectors; ``None`` skips the similarity filter (variant B).
    theta_sem : float
        Cosine threshold (0.65).
    theta_co : int
        Co-occurrence threshold: the number of units containing both concepts (3).
    block, pair_block : int
        Concepts per sparse product and pairs per similarity batch (memory bound).

    Returns
    -------
    csr_matrix, shape (n_concepts, n_concepts)
        Symmetric float32 Dice weights ``2 Co / (|T_wi| + |T_wj|)``; no self-loops.
    """
    inc = _binary(incidence)
    n = inc.shape[1]
    inc_t = sp.csr_matrix(inc.T)
    size = np.diff(inc_t.indptr).astype(np.float64)
    rows: list[IntArray] = []
    cols: list[IntArray] = []
    weights: list[np.ndarray] = []
    for b0 in range(0, n, block):
        co = sp.coo_matrix(inc_t[b0 : b0 + block] @ inc)
        i = co.row.astype(np.int64) + b0
        j = co.col.astype(np.int64)
        c = co.data.astype(np.float64)
        keep = (j > i) & (c >= theta_co - 1e-9)
        i, j, c = i[keep], j[keep], c[keep]
        if vectors is not None and i.size:
            sims = np.concatenate(
                [
                    np.einsum("ij,ij->i", vectors[i[p : p + pair_block]], vectors[j[p : p + pair_block]])
                    for p in range(0, i.size, pair_block)
                ]
            )
            ok = sims >= theta_sem
            i, j, c = i[ok], j[ok], c[ok]
        rows.append(i)
        cols.append(j)
        weights.append(2.0 * c / (size[i] + size[j]))
    i = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    j = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    w = np.concatenate(weights) if weights else np.zeros(0)
    adj = sp.csr_matrix(
        (np.concatenate([w, w]).astype(np.float32), (np.concatenate([i, j]), np.concatenate([j, i]))),
        shape=(n, n),
    )
    adj.sort_indices()
    return adj


def chunk_scores(chunk_concepts: sp.csr_matrix, concept_scores: F64, aggregate: str = "sum") -> F64:
    """Rank chunks "based on which concepts they are associated with" (§3.2).

    ``aggregate`` is ``"sum"`` (the PageRank mass of the chunk's concepts: the default),
    ``"max"`` or ``"mean"``. Chunks without concepts score 0.
    """
    m = sp.csr_matrix(chunk_concepts, dtype=np.float64)
    if aggregate == "sum":
        return np.asarray(m @ concept_scores, dtype=np.float64).ravel()
    if aggregate == "mean":
        counts = np.diff(m.indptr)
        total = np.asarray(m @ concept_scores, dtype=np.float64).ravel()
        mean: np.ndarray = np.divide(total, counts, out=np.zeros_like(total), where=counts > 0)
        return mean
    if aggregate == "max":
        weighted = sp.csr_matrix(m.multiply(concept_scores[np.newaxis, :]))
        return np.asarray(weighted.max(axis=1).toarray(), dtype=np.float64).ravel()
    raise ConfigError(f"aggregate must be 'sum', 'mean' or 'max', got {aggregate!r}")


def select_core(scores: F64, kappa: float) -> IntArray:
    """The top ``ceil(kappa * n)`` rows by score, best first (ties by row), §3.2."""
    if not 0.0 <= kappa <= 1.0:
        raise ConfigError(f"kappa (the core-chunk fraction) must lie in [0, 1], got {kappa!r}")
    k = float(kappa)
    n = int(scores.size)
    keep = min(n, math.ceil(k * n - 1e-9))
    order = np.lexsort((np.arange(n), -scores))
    return np.asarray(order[:keep], dtype=np.int64)


def load_sentences(data: StructureData) -> tuple[sp.csr_matrix, IntArray]:
    """The stored sentence x concept incidence and the chunk row of each sentence."""
    a = data.arrays
    chunk_of = np.asarray(a["sent_chunk"], dtype=np.int64)
    indices = a["sent_indices"]
    shape = (chunk_of.size, int(data.meta["n_concepts"]))
    return sp.csr_matrix(
        (np.ones(indices.size, np.float32), indices, a["sent_indptr"]), shape=shape
    ), chunk_of


@register_builder
class ConceptGraph(Builder):
    """Builds the G2ConS concept graph and its core-chunk ranking (§3.2); no LLM call.

    Parameters
    ----------
    top_n : int
        TF-IDF keywords per chunk (the paper does not give it; 20 measured best with
        ``"source"`` edges on the dev sets, see the issue 6 closing note).
    max_df, min_df : float or int
        Document-frequency limits of the TF-IDF vocabulary.
    incidence : {"source", "contains"}
        Concept->chunk edges to the chunks a concept was extracted from (§3.2, the
        default; the graph's BFS then matters), or to every chunk containing the word
        (§1; local reranking alone then fills beta and the edges go unused).
    include_title : bool
        Treat a chunk's title (a passage's entity name) as one of its sentences.
    theta_sem, theta_co : float, int
        Edge thresholds (0.65 and 3, §4.1).
    kappa : float
        Core-chunk fraction stored in ``core_rows`` (0.8, §4.6).
    damping : float
        PageRank damping.
    aggregate : {"sum", "mean", "max"}
        How a chunk's score combines its concepts' PageRank.
    sentence_vectors : {"pooled", "separate"}
        Eq. 1's sentence embeddings: ``"pooled"`` (the default) takes the mean of the
        token embeddings of the chunk's own pass over the sentence's tokens (one pass per
        chunk, shared with the chunk vector; a chunk longer than the model reads is passed
        in windows, so every sentence is covered); ``"separate"`` embeds every sentence in
        a forward pass of its own (the paper's "embedding of a sentence"). Pooled measured
        better on MuSiQue and HotpotQA, worse on 2WikiMultihopQA, at a quarter of the
        embedding time (README, "Indexing cost"). An embedder without
        token embeddings (an embeddings server) falls back to ``"separate"`` and the
        structure's ``meta["sentence_vectors"]`` says so.
    """

    name = "concept_graph"
    version = 3  # 3: sentence vectors pooled from the chunk's pass by default
    requires = ()
    uses_llm = False

    def __init__(
        self,
        *,
        top_n: int = 20,
        max_df: float | int = 0.5,
        min_df: float | int = 1,
        incidence: Incidence = "source",
        include_title: bool = True,
        theta_sem: float = 0.65,
        theta_co: int = 3,
        kappa: float = 0.8,
        damping: float = 0.85,
        aggregate: str = "sum",
        sentence_vectors: SentenceVectors = "pooled",
    ) -> None:
        self.top_n = top_n
        self.max_df = max_df
        self.min_df = min_df
        self.incidence = incidence
        self.include_title = include_title
        self.theta_sem = theta_sem
        self.theta_co = theta_co
        self.kappa = kappa
        self.damping = damping
        self.aggregate = aggregate
        self.sentence_vectors = sentence_vectors

    def _check_mode(self) -> None:
        if self.sentence_vectors not in ("pooled", "separate"):
            raise ConfigError(
                f"ConceptGraph.sentence_vectors must be 'pooled' or 'separate', got {self.sentence_vectors!r}"
            )

    def chunk_spans(self, chunks: ChunkTable, texts: list[str]) -> list[list[tuple[int, int]]] | None:
        self._check_mode()
        if self.sentence_vectors != "pooled":
            return None
        spans = sentence_char_spans(chunks, texts, self.include_title)
        return [[s for s in row if s is not None] for row in spans]

    def _sentence_vectors(
        self, ctx: BuildContext, docs: list[list[str]], sent_texts: list[str], used: IntArray
    ) -> tuple[FloatArray, int, str]:
        """Eq. 1's sentence vectors (rows ``used`` filled), model texts embedded, mode used."""
        dim = int(ctx.embedder.dim)
        vectors = np.zeros((len(sent_texts), dim), dtype=np.float32)
        emb = ctx.embedder
        mode = self.sentence_vectors
        if mode == "pooled" and not (
            getattr(emb, "pools_tokens", False) or callable(getattr(emb, "token_embeddings", None))
        ):
            mode = "separate"  # an embedder without token embeddings
        todo = used
        if mode == "pooled":
            chunks = ctx.chunks
            texts = chunks.embedded_texts(bool(getattr(ctx, "embed_titles", True)))
            spans = sentence_char_spans(chunks, texts, self.include_title)
            clean = [[s for s in row if s is not None] for row in spans]
            if getattr(emb, "pools_tokens", False):  # the index's cache: computed with the chunk vectors
                pooled = emb.embed_spans(texts, clean)[1]  # type: ignore[attr-defined]
            else:
                pooled = embed_with_spans(emb, texts, clean)[1]
            row = 0
            missing: list[int] = []
            for c, sp_row in enumerate(spans):
                j = 0
                for span in sp_row:
                    if span is None:
                        missing.append(row)
                    else:
                        vectors[row] = pooled[c][j]
                        j += 1
                    row += 1
            gap = np.zeros(len(sent_texts), dtype=bool)
            gap[missing] = True
            gap |= ~vectors.any(axis=1)
            todo = np.asarray([u for u in used if gap[u]], dtype=np.int64)
        # the rest (every used sentence when separate): distinct texts, one embedder call
        uid: dict[str, int] = {}
        inverse = np.asarray([uid.setdefault(sent_texts[u], len(uid)) for u in todo], dtype=np.int64)
        if len(uid):
            sep = np.asarray(emb.embed(list(uid)), dtype=np.float32).reshape(len(uid), dim)
            vectors[todo] = sep[inverse]
        return vectors, len(uid), mode

    def build(self, ctx: BuildContext) -> StructureData:
        check_fraction(self, "kappa", self.kappa)
        self._check_mode()
        if not -1.0 <= self.theta_sem <= 1.0:
            raise ConfigError(f"ConceptGraph.theta_sem is a cosine in [-1, 1], got {self.theta_sem!r}")
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        chunks = ctx.chunks
        docs = chunk_documents(chunks, self.include_title)
        concepts, chunk_concepts = extract_concepts(
            ["\n\n".join(s) for s in docs],
            top_n=self.top_n,
            max_df=self.max_df,
            min_df=self.min_df,
            incidence=self.incidence,
        )
        sent_texts = [s for sents in docs for s in sents]
        sent_chunk = np.repeat(np.arange(len(docs), dtype=np.int64), [len(s) for s in docs])
        sent_inc = sentence_incidence(sent_texts, concepts)
        if self.incidence == "source":  # Eq. 1's S_w: sentences of the chunks linked to w
            sent_inc = _binary(sent_inc.multiply(chunk_concepts[sent_chunk]))
        timings["concepts_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        # Eq. 1 over the sentences containing each concept (a sentence text embedded once)
        used = np.flatnonzero(np.diff(sent_inc.indptr) > 0)
        sent_vectors, n_embedded, mode = self._sentence_vectors(ctx, docs, sent_texts, used)
        if mode == "pooled":  # each occurrence has its own (contextual) vector
            concept_vectors = mean_vectors(sent_inc, sent_vectors)
        else:  # one vector per distinct sentence text, counted once
            uid: dict[str, int] = {}
            inverse = np.asarray([uid.setdefault(sent_texts[u], len(uid)) for u in used], dtype=np.int64)
            to_unique = sp.csr_matrix(
                (np.ones(used.size, np.float32), (inverse, np.arange(used.size))), shape=(len(uid), used.size)
            )
            unique_vectors = np.zeros((len(uid), sent_vectors.shape[1]), dtype=np.float32)
            unique_vectors[inverse] = sent_vectors[used]
            concept_vectors = mean_vectors(_binary(to_unique @ sent_inc[used]), unique_vectors)
        timings["embed_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        adj = concept_edges(
            chunk_concepts,
            normalize_rows(concept_vectors),
            theta_sem=self.theta_sem,
            theta_co=self.theta_co,
        )
        timings["edges_s"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        pr = pagerank(adj, damping=self.damping)
        scores = chunk_scores(chunk_concepts, pr, self.aggregate)
        core = select_core(scores, self.kappa)
        timings["pagerank_s"] = time.perf_counter() - t0

        graph = Graph(
            names=list(concepts),
            kinds=["concept"] * len(concepts),
            adjacency=adj,
            node_chunks=sp.csr_matrix(chunk_concepts.T, dtype=np.float32),
            node_vectors=normalize_rows(concept_vectors),
        )
        arrays = {
            "sent_indptr": sent_inc.indptr.astype(np.int64),
            "sent_indices": sent_inc.indices.astype(np.int32),
            "sent_chunk": sent_chunk,
            "pagerank": pr,
            "chunk_score": scores,
            "core_rows": core,
        }
        meta = {
            "settings": self.get_params(),
            "embedder": str(getattr(ctx.embedder, "name", "")),
            "chunks_fingerprint": chunks.fingerprint(),
            "n_chunks": len(chunks),
            "n_concepts": len(concepts),
            "n_sentences": len(sent_texts),
            "n_embedded_sentences": n_embedded,
            "sentence_vectors": mode,
            "n_edges": int(adj.nnz // 2),
            "core": {"array": "core_rows", "kappa": self.kappa, "n_core": int(core.size)},
            "timings_s": {k: round(v, 4) for k, v in timings.items()},
            # one line for `paretorag inspect`
            "summary": {
                "concepts": len(concepts),
                "edges": int(adj.nnz // 2),
                "core_chunks": f"{core.size}/{len(chunks)} (kappa {self.kappa}, array core_rows)",
            },
        }
        return graph_to_structure(graph, meta=meta, arrays=arrays)
