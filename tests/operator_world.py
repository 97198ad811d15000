"""A hand-made index for operator tests: six chunks about Marie Curie, one knowledge graph.

The same ten entities and nine relations serve as "kg", "tkg" (with descriptions),
"rkg" (with keywords) and "communities" (with a two-level hierarchy), so one prepared
state fits every graph setting. "passage_graph" has the chunks as nodes plus the
TF-IDF arrays of :func:`paretorag.kernels.tfidf.fit_tfidf`; "raptor_tree" has the
chunks and two summaries; "bm25" is the BM25 index of the six texts.

Entity rows::

    0 Marie Curie  1 Warsaw  2 Paris  3 Pierre Curie  4 Poland
    5 Nobel Prize  6 Stockholm  7 Germany  8 Physics  9 Radium (isolated)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from paretorag.errors import MissingStructureError
from paretorag.graphs.bm25 import build_bm25
from paretorag.graphs.graph import Communities, Edges, Graph, graph_to_structure
from paretorag.graphs.linear import assemble, trigraph_structure
from paretorag.kernels.rank import vector_top_k
from paretorag.kernels.tfidf import fit_tfidf
from paretorag.providers.base import Request
from paretorag.providers.embedders import HashEmbedder, RegexTokenizer
from paretorag.providers.llm import ExtractiveLLM, FakeLLM
from paretorag.providers.question_nlp import QuestionNLP
from paretorag.providers.wrappers import CountingLLM
from paretorag.retrieval.query import QueryOptions, State
from paretorag.storage.store import ChunkTable
from paretorag.storage.structures import StructureData, pack_texts
from paretorag.types import Chunk, ContextItem, FloatArray, Scored, Usage

TEXTS = [
    "Marie Curie was born in Warsaw. She studied physics in Paris.",
    "Pierre Curie married Marie Curie in Paris.",
    "Warsaw is the capital of Poland.",
    "Marie Curie won the Nobel Prize in Physics.",
    "The Nobel Prize is awarded in Stockholm.",
    "Poland borders Germany.",
]
NAMES = [
    "Marie Curie",
    "Warsaw",
    "Paris",
    "Pierre Curie",
    "Poland",
    "Nobel Prize",
    "Stockholm",
    "Germany",
    "Physics",
    "Radium",
]
KINDS = ["PERSON", "GPE", "GPE", "PERSON", "GPE", "AWARD", "GPE", "GPE", "FIELD", "ELEMENT"]
# (src, dst, relation, chunk rows)
TRIPLES = [
    (0, 1, "born in", [0]),
    (0, 2, "studied in", [0]),
    (3, 0, "married", [1]),
    (3, 2, "married in", [1]),
    (1, 4, "capital of", [2]),
    (0, 5, "won", [3]),
    (5, 6, "awarded in", [4]),
    (4, 7, "borders", [5]),
    (0, 8, "studied", [0, 3]),
]
NODE_CHUNKS = [[0, 1, 3], [0, 2], [0, 1], [1], [2, 5], [3, 4], [4], [5], [0, 3], []]
# level, parent, members, report, rating
COMMUNITIES = [
    (0, -1, [0, 1, 2, 3, 4, 7, 8], "Marie Curie's life in Warsaw and Paris, and Poland.", 8.0),
    (0, -1, [5, 6, 9], "The Nobel Prize, awarded in Stockholm; radium.", 5.0),
    (1, 0, [0, 2, 3, 8], "Marie and Pierre Curie in Paris, physics.", 9.0),
    (1, 0, [1, 4, 7], "Warsaw, capital of Poland, which borders Germany.", 6.0),
    (1, 1, [5, 6], "The Nobel Prize ceremony in Stockholm.", 7.0),
    (1, 1, [9], "Radium.", 1.0),
]
EMBEDDER = HashEmbedder(32)
N_NODES, N_EDGES, N_CHUNKS, N_COMMUNITIES = len(NAMES), len(TRIPLES), len(TEXTS), len(COMMUNITIES)


def incidence(rows: list[list[int]], n_cols: int) -> sp.csr_matrix:
    r = [i for i, cols in enumerate(rows) for _ in cols]
    c = [j for cols in rows for j in cols]
    return sp.csr_matrix((np.ones(len(c)), (r, c)), shape=(len(rows), n_cols))


def knowledge_graph(
    *, descriptions: bool = False, keywords: bool = False, communities: bool = False
) -> Graph:
    src = np.array([t[0] for t in TRIPLES], dtype=np.int64)
    dst = np.array([t[1] for t in TRIPLES], dtype=np.int64)
    adj = sp.csr_matrix((np.ones(2 * N_EDGES), (np.r_[src, dst], np.r_[dst, src])), shape=(N_NODES, N_NODES))
    edges = Edges(
        src=src,
        dst=dst,
        weight=np.ones(N_EDGES, dtype=np.float32),
        chunks=incidence([t[3] for t in TRIPLES], N_CHUNKS),
        relation=[t[2] for t in TRIPLES],
        description=[f"{NAMES[s]} {r} {NAMES[d]}." for s, d, r, _ in TRIPLES] if descriptions else [],
        keywords=[r.split()[0] for _, _, r, _ in TRIPLES] if keywords else [],
    )
    descs = [f"{n}, a {k.lower()}." for n, k in zip(NAMES, KINDS, strict=True)] if descriptions else []
    comm = None
    if communities:
        comm = Communities(
            level=np.array([c[0] for c in COMMUNITIES], dtype=np.int64),
            parent=np.array([c[1] for c in COMMUNITIES], dtype=np.int64),
            members=incidence([c[2] for c in COMMUNITIES], N_NODES),
            reports=[c[3] for c in COMMUNITIES],
            rating=np.array([c[4] for c in COMMUNITIES], dtype=np.float32),
            vectors=EMBEDDER.embed([c[3] for c in COMMUNITIES]),
        )
    return Graph(
        names=list(NAMES),
        kinds=list(KINDS),
        adjacency=adj,
        node_chunks=incidence(NODE_CHUNKS, N_CHUNKS),
        edges=edges,
        descriptions=descs,
        node_vectors=EMBEDDER.embed(descs or NAMES),
        edge_vectors=EMBEDDER.embed([edges.text(j, NAMES) for j in range(N_EDGES)]),
        communities=comm,
    )


def passage_graph() -> StructureData:
    shared = incidence(NODE_CHUNKS, N_CHUNKS)
    co = sp.csr_matrix((shared.T @ shared) > 0, dtype=np.float64)
    co.setdiag(0)
    co.eliminate_zeros()
    g = Graph(
        names=[f"chunk {i}" for i in range(N_CHUNKS)],
        kinds=["passage"] * N_CHUNKS,
        adjacency=co,
        node_chunks=sp.identity(N_CHUNKS, format="csr"),
        node_vectors=EMBEDDER.embed(TEXTS),
    )
    m, vocab, idf = fit_tfidf(TEXTS)
    arrays: dict[str, np.ndarray] = {
        "tfidf_indptr": m.indptr.astype(np.int64),
        "tfidf_indices": m.indices.astype(np.int32),
        "tfidf_data": m.data.astype(np.float64),
        "tfidf_idf": idf,
    }
    arrays["tfidf_vocab_utf8"], arrays["tfidf_vocab_offsets"] = pack_texts(vocab)
    return graph_to_structure(g, arrays=arrays)


def raptor_tree() -> Graph:
    summaries = [
        "Marie Curie, Paris, Warsaw and the Curies.",
        "The Nobel Prize, Stockholm, Poland and Germany.",
    ]
    leaves = [[i] for i in range(N_CHUNKS)] + [[0, 1, 2], [3, 4, 5]]
    parent = sp.csr_matrix(([1.0] * 6, ([6, 6, 6, 7, 7, 7], [0, 1, 2, 3, 4, 5])), shape=(8, 8))
    return Graph(
        names=[f"node {i}" for i in range(8)],
        kinds=["chunk"] * N_CHUNKS + ["summary"] * 2,
        adjacency=sp.csr_matrix(parent + parent.T),
        node_chunks=incidence(leaves, N_CHUNKS),
        descriptions=TEXTS + summaries,
        node_vectors=EMBEDDER.embed(TEXTS + summaries),
    )


def linear_graph() -> StructureData:
    """LinearRAG's Tri-Graph of the six texts, from hand-made NER (the question's NER is spaCy's)."""
    per_passage = []
    for text in TEXTS:
        sents = [s.strip() + "." for s in text.split(".") if s.strip()]
        per_passage.append([(s, [n for n in NAMES if n in s]) for s in sents if any(n in s for n in NAMES)])
    parts = assemble(per_passage, TEXTS, adjacent=True)
    return trigraph_structure(
        parts, EMBEDDER.embed(parts.entities), EMBEDDER.embed(parts.sentences), titles=False
    )


def structures() -> dict[str, StructureData]:
    return {
        "kg": graph_to_structure(knowledge_graph()),
        "tkg": graph_to_structure(knowledge_graph(descriptions=True)),
        "rkg": graph_to_structure(knowledge_graph(descriptions=True, keywords=True)),
        "communities": graph_to_structure(knowledge_graph(descriptions=True, communities=True)),
        "passage_graph": passage_graph(),
        "raptor_tree": graph_to_structure(raptor_tree()),
        "bm25": build_bm25(TEXTS),
        "fact_graph": graph_to_structure(knowledge_graph()),  # HippoRAG 2's: facts + occurrence
        "entity_graph": graph_to_structure(knowledge_graph()),  # the walk reads its occurrences only
        "linear_graph": linear_graph(),
    }


def scripted_reply(request: Request) -> str:
    """A generative fake: keywords as LightRAG's JSON, otherwise a choice among numbered candidates."""
    prompt = request.messages[-1].content
    if "high_level_keywords" in prompt:
        return '```json\n{"high_level_keywords": ["birthplace"], "low_level_keywords": ["Marie Curie", "Warsaw"]}\n```'
    return "The most useful are 2 and then 1."


class StubIndex:
    """An :class:`~paretorag.retrieval.query.IndexView` over the hand-made world (no files)."""

    def __init__(self, llm: Any = None, *, missing: tuple[str, ...] = ()) -> None:
        self.nlp = QuestionNLP()  # spaCy's readings of a question, as a loaded index gives them
        chunks = [
            Chunk(f"c{i}", f"d{i}", 0, 0, len(t), t, len(t.split()), f"doc {i}") for i, t in enumerate(TEXTS)
        ]
        self.chunks = ChunkTable.from_chunks(chunks)
        self.vectors = EMBEDDER.embed(TEXTS)
        self.structures = {k: v for k, v in structures().items() if k not in missing}
        self.memo: dict[str, Any] = {}
        self.usage = Usage()
        self.inner_llm = FakeLLM(scripted_reply) if llm is None else llm
        self.tokenizer = RegexTokenizer()

    def embed_query(self, text: str) -> FloatArray:
        return EMBEDDER.embed([text])[0]

    def embed(self, texts: list[str]) -> np.ndarray:
        return EMBEDDER.embed(texts)

    def dense_search(self, query_vector: FloatArray, k: int) -> Scored:
        return vector_top_k(self.vectors, query_vector, k, "chunk")

    def chunk_vectors(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[rows], dtype=np.float32)

    def structure(self, name: str) -> StructureData:
        if name not in self.structures:
            raise MissingStructureError(f"structure {name!r} must be built before it is used")
        return self.structures[name]

    def cached(self, key: str, factory: Any) -> Any:
        if key not in self.memo:
            self.memo[key] = factory()
        return self.memo[key]

    def llm(self, stage: str) -> CountingLLM:
        return CountingLLM(self.inner_llm, self.usage, stage, self.tokenizer)

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count([text])[0]

    def chunk_item(self, row: int, score: float) -> ContextItem:
        c = self.chunks
        return ContextItem(
            c.ids[row], c.doc_ids[row], c.titles[row], c.texts[row], float(score), int(c.n_tokens[row]), row
        )


QUESTION = "Where was Marie Curie born?"


def prepared_state(question: str = QUESTION, options: QueryOptions | None = None) -> State:
    """A state as earlier steps leave it: terms, keywords, entities, relations, paths, and
    three chunk rankings stored under step names ("dense", "sparse", "walk") for fusion."""
    state = State(question, options or QueryOptions())
    state.terms = ["Marie Curie", "Warsaw"]
    state.info["keywords"] = ["birthplace"]
    state.put("entity", Scored(np.array([0, 1, 5]), np.array([0.9, 0.6, 0.3]), "entity"))
    state.put("relation", Scored(np.array([0, 4, 5]), np.array([0.8, 0.5, 0.4]), "relation"))
    state.put("subgraph", Scored(np.array([0, 4, 5]), np.array([1.0, 1.0, 0.5]), "subgraph"))
    state.put("chunk", Scored(np.array([1, 0, 3]), np.array([0.9, 0.5, 0.2]), "chunk"))
    state.info["paths"] = [[0, 1, 4], [0, 5]]
    state.info["paths_graph"] = "kg"
    state.put("dense", Scored(np.array([0, 3, 1]), np.array([0.9, 0.7, 0.5]), "chunk"))
    state.put("sparse", Scored(np.array([2, 0]), np.array([3.0, 1.0]), "chunk"))
    state.put("walk", Scored(np.array([3, 2]), np.array([0.4, 0.1]), "chunk"))
    return state


def extractive_index() -> StubIndex:
    return StubIndex(ExtractiveLLM())
