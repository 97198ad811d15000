"""BM25 (the ``bm25`` builder, ``chunk.bm25``), rank fusion (``chunk.fuse``) and the
``bm25`` / ``hybrid`` methods; G2ConS's ``ranking="hybrid"``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from paretorag import RAG
from paretorag.errors import ConfigError, MissingStructureError
from paretorag.graphs.bm25 import BM25Index, build_bm25, tokenize, tokenizer_settings
from paretorag.ingest.files import make_document
from paretorag.kernels.rank import column_sums
from paretorag.retrieval.methods import get_method
from paretorag.retrieval.operators import get_operator
from paretorag.retrieval.query import QueryOptions, State
from paretorag.types import Scored
from tests.operator_world import StubIndex, prepared_state

TOPICS = {
    "Snowy owl": "The snowy owl hunts lemmings on the Arctic tundra in winter.",
    "Honey bee": "Honey bees dance to tell the hive where flowers are.",
    "Harbour seal": "Harbour seals rest on sandbanks and dive for fish.",
    "Valve QX-4471": "The QX-4471 pressure valve is rated for 40 bar and fitted on boilers.",
    "Red fox": "The red fox hunts voles and mice in fields at dusk.",
    "Barn swallow": "Barn swallows migrate to Africa each autumn and return in spring.",
    "Emperor penguin": "Emperor penguins breed in the Antarctic winter on sea ice.",
}
DOCS = [make_document(t, x, f"zoo#{i}", presplit=True) for i, (t, x) in enumerate(TOPICS.items())]
TITLES = list(TOPICS)


def titled(titles: list[str]) -> list[str]:
    return [f"{t}\n{TOPICS[t]}" for t in titles]


# -- the kernel and the tokenizer ------------------------------------------------------------
def test_column_sums_by_hand() -> None:
    m = sp.csc_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.5], [0.0, 0.0, 0.0]]))
    assert column_sums(m, [2, 0]).tolist() == [3.0, 0.5, 0.0]
    assert column_sums(m, [1, 1]).tolist() == [0.0, 6.0, 0.0]  # a repeated term counts again
    assert column_sums(m, []).tolist() == [0.0, 0.0, 0.0]


def test_tokenizer_lowercases_drops_stopwords_and_stems() -> None:
    s = tokenizer_settings()
    assert tokenize(["The Owls were HUNTING in the fields"], s) == [["owl", "were", "hunt", "field"]]
    raw = tokenizer_settings(stemmer="none", stopwords="none")
    assert tokenize(["The Owls were HUNTING"], raw) == [["the", "owls", "were", "hunting"]]
    with pytest.raises(ConfigError, match="stemmer"):
        tokenize(["x"], tokenizer_settings(stemmer="porter"))
    with pytest.raises(ConfigError, match="b must be"):
        build_bm25(["a text"], b=2.0)


# -- scores equal bm25s's own retriever --------------------------------------------------------
def test_scores_equal_the_bm25s_reference() -> None:
    import bm25s

    texts = titled(TITLES)
    data = build_bm25(texts)
    index = BM25Index(data)
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index(tokenize(texts, data.meta["tokenizer"]), show_progress=False)
    for q in [
        "Which owl hunts lemmings?",
        "fox hunts mice",
        "rated pressure of the QX-4471 valve",
        "penguin",
    ]:
        terms = tokenize([q], data.meta["tokenizer"])[0]
        want = reference.get_scores(terms)
        np.testing.assert_allclose(index.scores(q), want, rtol=1e-6, atol=1e-7)
        assert want.max() > 0


def test_unknown_or_stopword_questions_match_nothing() -> None:
    index = BM25Index(build_bm25(titled(TITLES)))
    assert not index.scores("the of and").any()
    assert not index.scores("xylophone zeppelin").any()


# -- the builder through an index: round trip, insert, delete -----------------------------------
def open_bm25(path, docs, **kw):
    rag = RAG.open(path, embedder="hash:32", methods=["bm25"], **kw)
    rag.index(docs)
    return rag


def arrays(rag: RAG) -> dict[str, np.ndarray]:
    return rag.view.structure("bm25").arrays


def test_builder_round_trip_and_rare_term_first(tmp_path) -> None:
    rag = open_bm25(tmp_path / "ix", DOCS)
    data = rag.view.structure("bm25")  # read back from arrays.npz + meta.json
    expect = build_bm25(titled(TITLES))
    assert set(data.arrays) == set(expect.arrays)
    for key, value in expect.arrays.items():
        np.testing.assert_array_equal(data.arrays[key], value, err_msg=key)
    assert data.meta["tokenizer"] == expect.meta["tokenizer"] and data.meta["titles"] is True
    info = rag.manifest.structures["bm25"]
    assert info["terms"] > 20 and info["chunks_tokenized"] == len(DOCS)
    # an exact rare term (a part number) ranks its passage first, by a margin
    r, items = rag.retrieve("Which boilers take the QX-4471?", method="bm25")
    assert items[0].title == "Valve QX-4471"
    assert r.scored.scores[0] > 2 * (r.scored.scores[1] if len(r.scored) > 1 else 0.0)
    assert r.mode == "sparse" and len(r.scored) <= 5


def test_insert_tokenizes_only_new_chunks_and_equals_a_rebuild(tmp_path) -> None:
    rag = open_bm25(tmp_path / "inc", DOCS[:4])
    first = dict(arrays(rag))
    rag.insert(DOCS[4:])
    info = rag.manifest.structures["bm25"]
    assert (info["chunks_tokenized"], info["chunks_from_cache"]) == (3, 4)
    full = open_bm25(tmp_path / "full", DOCS)
    for key, value in arrays(full).items():
        np.testing.assert_array_equal(arrays(rag)[key], value, err_msg=key)
    rag.delete([d.doc_id for d in DOCS[4:]])
    info = rag.manifest.structures["bm25"]
    assert (info["chunks_tokenized"], info["chunks_from_cache"]) == (0, 4)
    for key, value in first.items():
        np.testing.assert_array_equal(arrays(rag)[key], value, err_msg=key)


def test_builder_settings_change_the_structure(tmp_path) -> None:
    rag = open_bm25(tmp_path / "raw", DOCS, builders={"bm25": {"stemmer": "none", "titles": False}})
    data = rag.view.structure("bm25")
    assert data.meta["tokenizer"]["stemmer"] == "none" and data.meta["titles"] is False
    _, items = rag.retrieve("hunting owls", method="bm25")  # unstemmed: "owls" is not "owl"
    assert all(it.title != "Snowy owl" for it in items)
    _, items = rag.retrieve("penguin", method="bm25")  # only the title has "penguin", unstemmed
    assert items == []
    default = open_bm25(tmp_path / "default", DOCS)
    assert [it.title for it in default.retrieve("penguin", method="bm25")[1]] == ["Emperor penguin"]


def test_method_without_the_structure_names_the_fix(tmp_path) -> None:
    rag = RAG.open(tmp_path / "v", embedder="hash:32", methods=["vanilla"])
    rag.index(DOCS)
    with pytest.raises(MissingStructureError, match="--methods hybrid"):
        rag.retrieve("owl", method="hybrid")


# -- fusion by hand ---------------------------------------------------------------------------
def fuse(**params: object) -> Scored:
    state = prepared_state()  # dense: rows 0, 3, 1; sparse: rows 2, 0
    return get_operator("chunk.fuse", **params)(StubIndex(), state)


def test_rrf_by_hand() -> None:
    out = fuse(k=10)
    want = {0: 1 / 61 + 1 / 62, 2: 1 / 61, 3: 1 / 62, 1: 1 / 63}
    assert out.ids.tolist() == [0, 2, 3, 1]
    np.testing.assert_allclose(out.scores, [want[i] for i in out.ids.tolist()], rtol=1e-6)
    assert fuse(k=2).ids.tolist() == [0, 2]
    assert fuse(k=10, rrf_k=0).ids.tolist() == [0, 2, 3, 1]  # 1/1 + 1/2 beats 1/1


def test_weighted_rrf_by_hand() -> None:
    assert fuse(k=10, weights=(1.0, 0.0)).ids.tolist() == [0, 3, 1]  # dense alone
    assert fuse(k=10, weights=(0.0, 1.0)).ids.tolist() == [2, 0]  # sparse alone
    out = fuse(k=10, weights=(0.5, 2.0))
    want = {0: 0.5 / 61 + 2 / 62, 2: 2 / 61, 3: 0.5 / 62, 1: 0.5 / 63}
    assert out.ids.tolist() == [0, 2, 3, 1]
    np.testing.assert_allclose(out.scores, [want[i] for i in out.ids.tolist()], rtol=1e-6)
    # the dense ranking weighted up puts its second row above the sparse-only row
    assert fuse(k=10, weights=(3.0, 1.0)).ids.tolist() == [0, 3, 1, 2]


def test_fuse_errors_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="one per source"):
        fuse(weights=(1.0,))
    with pytest.raises(ConfigError, match="one per source"):
        fuse(weights=(1.0, -1.0))
    with pytest.raises(ConfigError, match="put a step that produces 'bm25'"):
        fuse(sources=("dense", "bm25"))
    with pytest.raises(ConfigError, match="sources"):
        fuse(sources="dense")
    with pytest.raises(ConfigError, match="chunk rankings"):
        fuse(sources=("dense", "entity"))


# -- the methods end to end, with the real MiniLM embedder ----------------------------------------
@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory, minilm) -> RAG:
    rag = RAG.open(
        tmp_path_factory.mktemp("hybrid") / "ix", embedder=minilm, methods=["vanilla", "bm25", "hybrid"]
    )
    rag.index(DOCS)
    return rag


@pytest.mark.slow
def test_hybrid_keeps_what_each_ranking_finds_best(zoo: RAG) -> None:
    # "QX-4471" is a rare exact term (BM25's strength); "bird that travels south for the
    # cold months" paraphrases the swallow passage with no shared content word (dense's)
    q = "Is the QX-4471 a bird that travels south for the cold months?"
    dense = [it.title for it in zoo.retrieve(q, method="vanilla")[1]]
    sparse = [it.title for it in zoo.retrieve(q, method="bm25")[1]]
    r, items = zoo.retrieve(q, method="hybrid", k=2)
    fused = [it.title for it in items]
    assert sparse[0] == "Valve QX-4471" and dense[0] != "Valve QX-4471"
    assert set(fused) == {dense[0], sparse[0]}  # each ranking's best, from 7 candidates
    assert r.mode == "hybrid" and r.branch.startswith("rrf(dense, bm25)")
    ans = zoo.query(q, method="hybrid", k=2)
    assert ans.citations and {c.title for c in ans.contexts} == set(fused)


@pytest.mark.slow
def test_hybrid_settings_and_query_depth(zoo: RAG) -> None:
    q = "Which animal hunts at dusk?"
    r, _ = zoo.retrieve(q, method="hybrid", k=6, dense__k=2, sparse__k=2)
    assert len(r.scored) == 6  # a query's k deepens both rankings to at least k
    only_dense, _ = zoo.retrieve(q, method="hybrid", k=3, fuse__weights=(1.0, 0.0))
    dense, _ = zoo.retrieve(q, method="vanilla", k=3)
    assert only_dense.scored.ids.tolist() == dense.scored.ids.tolist()
    m = get_method("hybrid", fuse__weights=(1.0, 0.5))
    assert m.requires == ("vectors", "bm25") and not m.uses_llm
    assert m.get_params()["fuse__weights"] == (1.0, 0.5) and m.get_params()["dense__k"] == 50


# -- G2ConS with the hybrid ranking -------------------------------------------------------------
@pytest.fixture(scope="module")
def g2cons_index(tmp_path_factory: pytest.TempPathFactory) -> RAG:
    rag = RAG.open(
        tmp_path_factory.mktemp("g2h") / "ix",
        embedder="hash:64",
        methods=["g2cons-concept", "g2cons", "hybrid"],
    )
    rag.index(DOCS)
    return rag


def test_g2cons_ranking_setting(g2cons_index: RAG) -> None:
    from paretorag.retrieval.operators.sparse import hybrid_chunk_scores

    rag = g2cons_index
    assert "bm25" not in get_method("g2cons").requires
    assert "bm25" in get_method("g2cons", ranking="hybrid").requires
    assert "bm25" in get_method("g2cons-concept", ranking="hybrid").requires
    q = "Which animal hunts in winter?"
    dense, _ = rag.retrieve(q, method="g2cons-concept", rerank="naive")
    explicit, _ = rag.retrieve(q, method="g2cons-concept", rerank="naive", ranking="dense")
    assert dense.scored.ids.tolist() == explicit.scored.ids.tolist()  # the default is unchanged
    hybrid, items = rag.retrieve(q, method="g2cons-concept", rerank="naive", ranking="hybrid")
    rows = hybrid.scored.ids
    assert sorted(rows.tolist()) == sorted(dense.scored.ids.tolist())  # the same chunks, reordered
    fused = hybrid_chunk_scores(rag.view, q, rag.view.embed_query(q))
    assert rows.tolist() == sorted(rows.tolist(), key=lambda r: (-fused[r], r))  # naive: by fused score
    titles = [it.title for it in items]
    # the hashed vectors put the valve second; BM25's "hunt" lifts the fox above it
    assert titles.index("Red fox") < titles.index("Valve QX-4471")
    assert rows.tolist() != dense.scored.ids.tolist()
    both, _ = rag.retrieve(q, method="g2cons", ranking="hybrid", second="hybrid")
    assert both.branch == "concept+hybrid@core" and len(both.scored) > 0
    with pytest.raises(ConfigError, match="ranking"):
        rag.retrieve(q, method="g2cons-concept", ranking="sparse")


def test_hybrid_chunk_scores_rank_every_row() -> None:
    from paretorag.retrieval.operators.sparse import hybrid_chunk_scores

    index = StubIndex()
    index.structures["bm25"] = build_bm25(list(index.chunks.texts))
    state = State("Where is the Nobel Prize awarded?", QueryOptions())
    scores = hybrid_chunk_scores(index, state.question, state.vector(index))
    assert scores.shape == (len(index.chunks),) and np.isfinite(scores).all()
    assert int(np.argmax(scores)) == 4  # "The Nobel Prize is awarded in Stockholm."
