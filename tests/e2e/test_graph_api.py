"""The /graph routes on a real uvicorn server on 127.0.0.1, through httpx: entities, relations,
the neighborhood of a question and of an entity, API keys, bad input, a graph not built."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")

from paretorag import RAG
from paretorag.server import KeyRing, create_app

from ..server_util import build_index, live_server, write_corpus

RO = "ro-graph-0123456789abcdef"


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("graphapi")
    with RAG.open(root / "ix", embedder="hash:64", methods=["entity-walk", "hipporag"]) as rag:
        rag.index(write_corpus(root / "src"))
    return root / "ix"


def test_graph_routes_on_a_live_server(graph_index):
    app = create_app(graph_index, keys=KeyRing.from_pairs([("read", RO)]))
    auth = {"Authorization": f"Bearer {RO}"}
    with live_server(app, limit_s=60) as base, httpx.Client(base_url=base, timeout=30) as c:
        # the read keys guard the graph like the other read routes
        denied = c.get("/graph/entities")
        assert denied.status_code == 401 and denied.json()["error"]["type"] == "unauthorized"

        s = c.get("/graph/structures", headers=auth).json()
        assert s["default"] == "entity_graph"
        assert [x["name"] for x in s["structures"]] == ["entity_graph", "kg"]
        assert s["structures"][0]["nodes"] == 27

        e = c.get("/graph/entities", params={"q": "otter", "limit": 5}, headers={"X-API-Key": RO})
        assert e.status_code == 200, e.text
        body = e.json()
        assert body["structure"] == "entity_graph" and body["entities"][0]["name"] == "otter"
        assert {"id", "name", "kind", "degree", "passages"} <= set(body["entities"][0])
        kg = c.get("/graph/entities", params={"q": "otter", "structure": "kg"}, headers=auth).json()
        assert {"otter", "sea otter"} <= {x["name"] for x in kg["entities"]}

        rel = c.get("/graph/relations", params={"q": "otter eat", "structure": "kg"}, headers=auth).json()
        assert ("otter", "eat", "fish") in {
            (r["source_name"], r["relation"], r["target_name"]) for r in rel["relations"]
        }

        hood = c.get(
            "/graph/neighborhood",
            params={"question": "What do otters eat?", "method": "vanilla", "k": 2},
            headers=auth,
        )
        assert hood.status_code == 200, hood.text
        h = hood.json()
        assert h["method"] == "vanilla" and len(h["retrieved"]) == 2
        names = {n["name"] for n in h["nodes"]}
        assert {"otter", "fish", "crab"} <= names
        ids = {n["id"] for n in h["nodes"]}
        assert h["edges"] and all(x["source"] in ids and x["target"] in ids for x in h["edges"])
        otter = next(n for n in h["nodes"] if n["name"] == "otter")
        assert otter["seed"] and otter["passage_ids"]
        passage = h["passages"][otter["passage_ids"][0]]
        assert passage["retrieved"] and "Otters eat fish" in passage["text"] and passage["title"] == "otters"
        # the sentences of its passages that name it, the name's offsets for highlighting
        assert otter["aliases"] == []
        assert [(m["chunk_id"], m["sentence"], m["highlights"]) for m in otter["mentions"]] == [
            (otter["passage_ids"][0], "Otters eat fish and crabs in cold rivers.", [[0, 6]]),
            (otter["passage_ids"][0], "Sea otters float on their backs while eating.", [[4, 10]]),
        ]
        for m in otter["mentions"]:
            assert passage["text"][m["start"] : m["end"]] == m["sentence"]
        crab = next(n for n in h["nodes"] if n["name"] == "crab")
        assert [(m["sentence"], m["highlights"]) for m in crab["mentions"]] == [
            ("Otters eat fish and crabs in cold rivers.", [[20, 25]])
        ]
        assert all({"aliases", "mentions"} <= set(n) for n in h["nodes"])

        around = c.get("/graph/neighborhood", params={"entity": "Fish"}, headers=auth).json()
        assert around["entity"] == "fish" and around["nodes"][0]["name"] == "fish"
        neighbours = {n["name"] for n in around["nodes"][1:]}
        assert {"otter", "crab"} <= neighbours  # fish co-occurs with both in the otters passage
        assert len(around["nodes"]) == 1 + len(neighbours)
        assert around["nodes"][0]["mentions"][0]["sentence"] == "Otters eat fish and crabs in cold rivers."
        assert around["nodes"][0]["mentions"][0]["highlights"] == [[11, 15]]
        small = c.get("/graph/neighborhood", params={"entity": "fish", "max_nodes": 2}, headers=auth).json()
        assert len(small["nodes"]) == 2 and small["truncated"] is True

        # bad input: named field, 4xx
        for params, status, fld in (
            ({}, 400, "question"),
            ({"question": "otters", "entity": "fish"}, 400, "question"),
            ({"question": "  "}, 400, "question"),
            ({"question": "otters", "method": "nope"}, 400, "method"),
            ({"entity": "zebra"}, 404, "entity"),
            ({"entity": "fish", "structure": "tree"}, 400, "structure"),
            ({"entity": "fish", "max_nodes": 0}, 400, "max_nodes"),
        ):
            r = c.get("/graph/neighborhood", params=params, headers=auth)
            assert r.status_code == status, (params, r.text)
            assert r.json()["error"]["field"] == fld, params
        assert c.get("/graph/entities", params={"limit": 0}, headers=auth).status_code == 400
        missing = c.get("/graph/entities", params={"structure": "rkg"}, headers=auth)
        assert missing.status_code == 409
        err = missing.json()["error"]
        assert err["type"] == "missing_structure" and "--methods" in err["message"]


def test_an_index_without_a_graph_says_how_to_build_one(tmp_path):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    with live_server(create_app(ix), limit_s=60) as base:
        s = httpx.get(base + "/graph/structures", timeout=30).json()
        r = httpx.get(base + "/graph/neighborhood", params={"question": "otters"}, timeout=30)
    assert s == {"default": None, "structures": []}
    assert r.status_code == 409
    assert "holds no graph yet" in r.json()["error"]["message"]
    assert "--methods fusion" in r.json()["error"]["message"]


def test_the_page_serves_the_pinned_cytoscape_from_the_package(tmp_path):
    """The graph view's library is the vendored file (scripts/vendor_js.sh), not a CDN's."""
    import hashlib
    import re

    static = Path(__file__).parents[2] / "src" / "paretorag" / "server" / "static"
    note = (static / "vendor" / "cytoscape.VERSION").read_text(encoding="utf-8")
    version = re.search(r"^cytoscape (\S+) ", note, re.M)
    sha256 = re.search(r"sha256 ([0-9a-f]{64})", note)
    integrity = re.search(r"(sha512-\S+)", note)
    assert version and sha256 and integrity
    script = (Path(__file__).parents[2] / "scripts" / "vendor_js.sh").read_text(encoding="utf-8")
    assert f"VERSION={version.group(1)}\n" in script and f"INTEGRITY={integrity.group(1)}\n" in script
    docs = (Path(__file__).parents[2] / "docs" / "graph.md").read_text(encoding="utf-8")
    assert version.group(1) in docs and integrity.group(1) in docs
    assert "Copyright" in (static / "vendor" / "cytoscape.LICENSE").read_text(encoding="utf-8")
    for page in ("index.html", "app.js"):
        assert not re.search(
            r"""src=["']?https?:|import\s*\(\s*["']https?:""", (static / page).read_text("utf-8")
        )
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    with live_server(create_app(ix), limit_s=60) as base:
        r = httpx.get(base + "/static/vendor/cytoscape.min.js", timeout=30)
    assert r.status_code == 200 and "javascript" in r.headers["content-type"]
    assert hashlib.sha256(r.content).hexdigest() == sha256.group(1)
