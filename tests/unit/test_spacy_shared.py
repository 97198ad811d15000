"""One spaCy model per process: each caller's pipeline shares its components and computes the same."""

from __future__ import annotations

import threading

import pytest

spacy = pytest.importorskip("spacy")

from paretorag.providers import nlp as nlp_mod  # noqa: E402
from paretorag.providers.nlp import MODEL, load_spacy  # noqa: E402

TEXTS = [
    "Andy Laney flew from Boston to Lisbon in March 1998 with two colleagues from Acme Corp.",
    "The lighthouse keepers counted ships. Nobody in Cape Wrath believed them.",
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
]


def _annotations(nlp, texts):
    return [
        ([(t.text, t.tag_, t.is_sent_start, t.dep_) for t in doc], [(e.text, e.label_) for e in doc.ents])
        for doc in nlp.pipe(texts)
    ]


def test_pipelines_share_one_model_and_keep_their_own_component_lists():
    graph = load_spacy("test", exclude=["parser", "attribute_ruler"], disable=["lemmatizer"])
    graph.enable_pipe("senter")
    kg = load_spacy("test", exclude=["senter", "attribute_ruler"], disable=["lemmatizer"])
    assert graph.get_pipe("ner") is kg.get_pipe("ner") and graph.get_pipe("tok2vec") is kg.get_pipe("tok2vec")
    assert "parser" not in graph.component_names and "parser" in kg.pipe_names
    assert "senter" in graph.pipe_names and "senter" not in kg.component_names
    assert "lemmatizer" in graph.disabled and "lemmatizer" in kg.disabled
    graph.add_pipe("sentencizer", name="mine", first=True)
    assert "mine" not in kg.component_names
    assert len(nlp_mod._BASES) == 1


@pytest.mark.parametrize(
    ("exclude", "enable"),
    [(["parser", "attribute_ruler"], ["senter"]), (["senter", "attribute_ruler"], []), (["lemmatizer"], [])],
)
def test_a_shared_pipeline_annotates_as_its_own_copy_does(exclude, enable):
    own = spacy.load(MODEL, exclude=exclude, disable=["lemmatizer"] if "lemmatizer" not in exclude else [])
    shared = load_spacy(
        "test", exclude=exclude, disable=["lemmatizer"] if "lemmatizer" not in exclude else []
    )
    for name in enable:
        own.enable_pipe(name)
        shared.enable_pipe(name)
    assert own.pipe_names == shared.pipe_names
    assert _annotations(shared, TEXTS) == _annotations(own, TEXTS)


def test_pipelines_sharing_components_annotate_alike_from_parallel_threads():
    a = load_spacy("test", exclude=["parser", "attribute_ruler"], disable=["lemmatizer"])
    a.enable_pipe("senter")
    b = load_spacy("test", exclude=["senter", "attribute_ruler"], disable=["lemmatizer"])
    want = {"a": _annotations(a, TEXTS * 4), "b": _annotations(b, TEXTS * 4)}
    got: dict[str, list[object]] = {}

    def run(name, nlp):
        got[name] = _annotations(nlp, TEXTS * 4)

    threads = [threading.Thread(target=run, args=(n, p)) for n, p in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want
