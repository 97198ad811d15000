"""KGP's passage graph (unified framework §4 "Passage Graph"): entity and TF-IDF edges, TF-IDF index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from paretorag.errors import ConfigError
from paretorag.graphs.base import get_builder
from paretorag.graphs.passages import TFIDF_SETTINGS, tfidf_matrix, tfidf_query
from paretorag.storage.structures import load_structure, save_structure

from ..builders_util import CORPUS, Ctx, round_trip, table


def test_nodes_are_passages_with_identity_node_chunks(tmp_path: Path) -> None:
    data = get_builder("passage_graph").build(Ctx(table()))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    assert g.names == [f"d{i}#0" for i in range(len(CORPUS))] and set(g.kinds) == {"passage"}
    assert np.array_equal(g.node_chunks.toarray(), np.eye(len(CORPUS)))
    # chunks 0 and 1 share "barack obama" and "harvard university"; 2 and 3 share "steven spielberg"
    only_entities = get_builder("passage_graph", tfidf_k=0).build(Ctx(table()))  # type: ignore[arg-type]
    a = round_trip(only_entities, tmp_path / "e").adjacency.toarray()
    assert a[0, 1] == 2 and a[2, 3] == 1 and a[0, 2] == 0 and np.allclose(a, a.T)
    two = round_trip(
        get_builder("passage_graph", tfidf_k=0, min_shared_entities=2).build(Ctx(table())), tmp_path / "2"
    )  # type: ignore[arg-type]
    assert two.adjacency[0, 1] == 2 and two.adjacency[2, 3] == 0
    assert data.meta["summary"]["llm_calls"] == 0 and data.meta["summary"]["entity_edges"] == 2


def test_tfidf_edges_and_index_match_sklearn(tmp_path: Path) -> None:
    data = get_builder("passage_graph", min_shared_entities=0, tfidf_k=1, tfidf_threshold=0.0).build(
        Ctx(table())
    )  # type: ignore[arg-type]
    save_structure(tmp_path, "p", data)
    back = load_structure(tmp_path, "p")
    ref = TfidfVectorizer(dtype=np.float32, **TFIDF_SETTINGS)
    x = ref.fit_transform(CORPUS)
    assert np.allclose(tfidf_matrix(back).toarray(), x.toarray(), atol=1e-6)
    q = "Where was Steven Spielberg born?"
    assert np.allclose(tfidf_query(back, q).toarray(), ref.transform([q]).toarray(), atol=1e-6)
    sims = (x @ x.T).toarray()
    np.fill_diagonal(sims, -1)
    g = round_trip(data, tmp_path / "g")
    for i in range(len(CORPUS)):  # each passage is linked to its nearest TF-IDF neighbour
        assert g.adjacency[i, int(np.argmax(sims[i]))] > 0
    assert data.meta["summary"]["tfidf_edges"] >= 2


def test_question_without_known_terms_is_a_zero_row() -> None:
    data = get_builder("passage_graph").build(Ctx(table()))  # type: ignore[arg-type]
    assert tfidf_query(data, "zzz qqq").nnz == 0


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"tfidf_k": -1}, "tfidf_k"),
        ({"tfidf_threshold": 3}, "tfidf_threshold"),
        ({"min_shared_entities": 1.5}, "min_shared_entities"),
    ],
)
def test_bad_settings(params: dict[str, object], word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        get_builder("passage_graph", **params).build(Ctx(table()))  # type: ignore[arg-type]
