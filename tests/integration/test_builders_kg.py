"""KG / TKG / RKG builders (unified framework §4, Table 2): spaCy backend, scripted LLM backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from paretorag.errors import ConfigError
from paretorag.graphs.base import get_builder
from paretorag.graphs.graph import graph_from_structure
from paretorag.graphs.kg_prompts import COMPLETE, RECORD, TUPLE, parse_json, parse_records
from paretorag.kernels.knn import knn_pairs
from paretorag.providers.base import Request
from paretorag.providers.llm import FakeLLM

from ..builders_util import CORPUS, Ctx, round_trip, table

# -- LLM-free backend (spaCy) ----------------------------------------------------------


def test_kg_offline_has_svo_triples_and_no_llm_call(tmp_path: Path) -> None:
    data = get_builder("kg").build(Ctx(table()))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    assert data.meta["backend"] == "spacy" and data.meta["summary"]["llm_calls"] == 0
    assert {"barack obama", "hawaii", "steven spielberg", "harvard university"} <= set(g.names)
    assert g.kinds[g.ids["barack obama"]] == "PERSON"
    e = g.edges
    assert e is not None
    triples = {
        (g.names[int(s)], r, g.names[int(o)]) for s, r, o in zip(e.src, e.relation, e.dst, strict=True)
    }
    assert ("barack obama", "bear in", "hawaii") in triples
    assert ("jaws", "direct by", "steven spielberg") in triples or (
        "film jaws",
        "direct by",
        "steven spielberg",
    ) in triples
    # node -> chunk: obama occurs in chunks 0 and 1
    assert set(g.node_chunks[g.ids["barack obama"]].indices.tolist()) == {0, 1}
    assert g.node_vectors is not None and g.node_vectors.shape == (g.n_nodes, 32)
    assert g.edge_vectors is not None and g.edge_vectors.shape[0] == len(e)
    assert g.descriptions == []  # Table 2: a KG has no entity descriptions


def test_tkg_rkg_offline_descriptions_and_keywords(tmp_path: Path) -> None:
    tkg = round_trip(get_builder("tkg").build(Ctx(table())), tmp_path / "t")  # type: ignore[arg-type]
    rkg = round_trip(get_builder("rkg").build(Ctx(table())), tmp_path / "r")  # type: ignore[arg-type]
    i = tkg.ids["hawaii"]
    assert "born in Hawaii" in tkg.descriptions[i]
    assert tkg.edges is not None and rkg.edges is not None
    assert tkg.edges.keywords == [] and len(rkg.edges.keywords) == len(rkg.edges)
    j = [
        k
        for k in range(len(rkg.edges))
        if {rkg.names[int(rkg.edges.src[k])], rkg.names[int(rkg.edges.dst[k])]} == {"barack obama", "hawaii"}
    ]
    assert j and "bear" in rkg.edges.keywords[j[0]] and "hawaii" in rkg.edges.keywords[j[0]]
    assert "born in Hawaii" in rkg.edges.description[j[0]]


def test_offline_long_descriptions_are_cut_not_summarized() -> None:
    texts = [f"Obama visited Paris in {1990 + i}. Obama liked Paris." for i in range(12)]
    g = graph_from_structure(get_builder("tkg", summary_max_tokens=20).build(Ctx(table(texts))))  # type: ignore[arg-type]
    d = g.descriptions[g.ids["paris"]]
    assert 0 < len(d.split("\n")) < 12


# -- scripted LLM backend --------------------------------------------------------------


def hipporag_llm(bad_chunk: str = "Jaws") -> FakeLLM:
    """HippoRAG-style answers; the NER answer about ``bad_chunk`` is garbage once, then fixed."""

    def reply(req: Request) -> str:
        last = req.messages[-1].content
        if last.startswith("Your answer was not valid JSON"):
            return '{"named_entities": ["Jaws", "Steven Spielberg"]}'
        text = last.rsplit("Paragraph:\n", 1)[1]
        if "RDF" in last:
            ents = json.loads(text.strip().split("\n\n")[1])["named_entities"]
            return json.dumps({"triples": [[ents[0], "related to", e] for e in ents[1:]] + [["x", "y"]]})
        if bad_chunk in text:
            return "I cannot answer that."
        words = [w.strip(".,") for w in text.split() if w[:1].isupper()]
        return "```json\n" + json.dumps({"named_entities": sorted(set(words))})[:-1] + ",}\n```"  # repaired

    return FakeLLM(reply)


def test_kg_with_llm_repairs_and_retries(tmp_path: Path) -> None:
    llm = hipporag_llm()
    ctx = Ctx(table(), llm)
    data = get_builder("kg", synonyms=False).build(ctx)  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    assert ctx.stages and set(ctx.stages) == {"index.kg"}
    # 2 calls per chunk (NER, OpenIE) + 1 retry of the garbage NER answer
    assert len(llm.requests) == 2 * len(CORPUS) + 1 == data.meta["summary"]["llm_calls"]
    assert data.meta["stats"]["retries"] == 1 and data.meta["stats"]["unparsed"] == 0
    assert data.meta["backend"] == "llm" and set(g.kinds) == {"entity"}
    assert "steven spielberg" in g.names and "jaws" in g.names
    assert g.edges is not None and "related to" in g.edges.relation
    assert all(r != "y" for r in g.edges.relation)  # a 2-field triple is dropped


def test_kg_with_llm_prompts_are_deterministic() -> None:
    a, b = hipporag_llm(), hipporag_llm()
    get_builder("kg").build(Ctx(table(), a))  # type: ignore[arg-type]
    get_builder("kg").build(Ctx(table(), b))  # type: ignore[arg-type]
    assert [r.messages for r in a.requests] == [r.messages for r in b.requests]


def graphrag_llm(kind: str, gleaning: list[str]) -> FakeLLM:
    """GraphRAG / LightRAG-style records; chunk 2's first answer is prose (retried)."""
    t, r = TUPLE, RECORD

    def reply(req: Request) -> str:
        last = req.messages[-1].content
        if last.startswith("MANY entities"):
            gleaning.append(last)
            return f'("entity"{t}"OSCAR"{t}"EVENT"{t}"An award ceremony."){COMPLETE}'
        if last.startswith("It appears"):
            return "NO"
        if last.startswith("Your answer had no records"):
            text = req.messages[0].content
        elif "Jaws" in last.rsplit("Text:", 1)[1]:
            return "Sorry, here is a summary of the text instead."
        else:
            text = last
        body = text.rsplit("Text:", 1)[1]
        names = sorted({w.strip(".,") for w in body.split() if w[:1].isupper() and len(w) > 3})
        recs = [f'("entity"{t}"{n.upper()}"{t}"PERSON"{t}"{n} appears in the text.")' for n in names]
        kw = f"{t}'theme, link'" if kind == "rkg" else ""
        recs += [
            f'("relationship"{t}"{names[0]}"{t}"{n}"{t}"{names[0]} and {n} are linked."{kw}{t}8)'
            for n in names[1:]
        ]
        return r.join(recs) + COMPLETE

    return FakeLLM(reply)


@pytest.mark.parametrize("kind", ["tkg", "rkg"])
def test_tkg_rkg_with_llm_gleaning_and_retry(kind: str, tmp_path: Path) -> None:
    gleaning: list[str] = []
    llm = graphrag_llm(kind, gleaning)
    data = get_builder(kind).build(Ctx(table(), llm))  # type: ignore[arg-type]
    g = round_trip(data, tmp_path)
    n = len(CORPUS)
    # 1 extraction + 1 gleaning per chunk (max_gleaning=1: no YES/NO check) + 1 retry
    assert len(gleaning) == n and len(llm.requests) == 2 * n + 1 == data.meta["summary"]["llm_calls"]
    glean = next(q for q in llm.requests if q.messages[-1].content.startswith("MANY"))
    assert [m.role for m in glean.messages] == ["user", "assistant", "user"]  # same conversation
    assert "oscar" in g.names and g.kinds[g.ids["oscar"]] == "EVENT"
    assert "jaws" in g.names  # recovered by the retry
    assert g.descriptions[g.ids["spielberg"]] == "Spielberg appears in the text."
    assert g.edges is not None and all(d for d in g.edges.description)
    if kind == "rkg":
        assert set(g.edges.keywords) == {"theme, link"}
    assert "you" not in " ".join(g.names)


def test_gleaning_loop_check_between_rounds() -> None:
    llm = graphrag_llm("tkg", [])
    get_builder("tkg", max_gleaning=2).build(Ctx(table(), llm))  # type: ignore[arg-type]
    kinds = [q.messages[-1].content[:8] for q in llm.requests]
    # round 1, gleaning 1, loop check (answered NO): no second gleaning
    assert sum(k.startswith("MANY") for k in kinds) == len(CORPUS)
    assert sum(k.startswith("It appea") for k in kinds) == len(CORPUS)


def test_long_merged_descriptions_are_summarized_by_the_llm() -> None:
    texts = [f"Paris hosted event number {i}." for i in range(6)]
    t = TUPLE

    def reply(req: Request) -> str:
        last = req.messages[-1].content
        if "comprehensive summary" in last:
            return "Paris is a city that hosted many events."
        if last.startswith("MANY"):
            return COMPLETE
        i = last.rsplit("number ", 1)[1].split(".")[0]
        return f'("entity"{t}"PARIS"{t}"GEO"{t}"Paris hosted event {i}, a long and memorable occasion."){COMPLETE}'

    llm = FakeLLM(reply)
    g = graph_from_structure(get_builder("tkg", summary_max_tokens=20).build(Ctx(table(texts), llm)))  # type: ignore[arg-type]
    assert g.descriptions == ["Paris is a city that hosted many events."]
    assert sum("comprehensive summary" in q.messages[-1].content for q in llm.requests) == 1


# -- parsing and synonyms --------------------------------------------------------------


def test_parsers_never_crash_on_garbage() -> None:
    for text in ["", "}{", "[[[", "```json\n{'a': 1}\n```", "null", '{"triples": 5}', "(" * 1000]:
        parse_json(text)
        parse_records(text, "tkg")
    rec, ok = parse_records(
        f'entity{TUPLE}"A"{TUPLE}PERSON{TUPLE}desc\nrelationship{TUPLE}A{TUPLE}B{TUPLE}d{TUPLE}x', "tkg"
    )
    assert ok and rec.entities == [("A", "PERSON", "desc")] and rec.relations == [("A", "B", "", "d", "")]


def test_knn_pairs_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(300, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    i, j, s = knn_pairs(v, k=5, threshold=0.6, block=64)
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    top = np.argsort(-sims, axis=1)[:, :5]
    want = {(min(a, int(b)), max(a, int(b))) for a in range(300) for b in top[a] if sims[a, b] >= 0.6}
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == want
    assert np.allclose(s, sims[i, j], atol=1e-5)


def test_kg_synonym_edges() -> None:
    texts = ["Obama met Barack Obama.", "Barack Obama spoke.", "Barack H Obama smiled."]
    g = graph_from_structure(get_builder("kg", synonym_threshold=0.5).build(Ctx(table(texts))))  # type: ignore[arg-type]
    assert g.edges is not None
    syn = [k for k, r in enumerate(g.edges.relation) if r == "synonym"]
    assert syn and all(g.edges.chunks[k].nnz == 0 for k in syn)
    a, b = int(g.edges.src[syn[0]]), int(g.edges.dst[syn[0]])
    assert g.adjacency[a, b] > 0 and g.adjacency[b, a] == g.adjacency[a, b]
    off = graph_from_structure(get_builder("kg", synonyms=False).build(Ctx(table(texts))))  # type: ignore[arg-type]
    assert off.edges is not None and "synonym" not in off.edges.relation


@pytest.mark.parametrize(
    ("name", "params", "word"),
    [
        ("kg", {"synonym_threshold": 2.0}, "synonym_threshold"),
        ("kg", {"synonym_k": 0}, "synonym_k"),
        ("tkg", {"max_gleaning": -1}, "max_gleaning"),
        ("rkg", {"entity_types": "person"}, "entity_types"),
        ("tkg", {"summary_max_tokens": 0}, "summary_max_tokens"),
    ],
)
def test_bad_settings_name_the_setting(name: str, params: dict[str, object], word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        get_builder(name, **params).build(Ctx(table()))  # type: ignore[arg-type]
