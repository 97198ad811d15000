"""Start-up cost: commands that need no model import no model library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from paretorag import RAG

HEAVY = ("torch", "sentence_transformers", "transformers", "spacy", "onnxruntime", "faiss")

# runs CLI commands in-process, then reports which heavy libraries were imported
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from paretorag.cli import app
    for args in json.loads(sys.argv[1]):
        try:
            app(args, standalone_mode=False)
        except SystemExit:
            pass
    print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
    """
).format(heavy=HEAVY)


def _run(commands: list[list[str]]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(commands)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_help_version_inspect_and_delete_load_no_model(tmp_path, minilm):
    (tmp_path / "a.md").write_text("# A\n\nThe snowy owl lives in the Arctic tundra.")
    (tmp_path / "b.md").write_text("# B\n\nHoney bees dance to share where flowers are.")
    ix = tmp_path / "ix"
    with RAG.open(ix, embedder=minilm, methods=["vanilla"]) as rag:
        rag.index([tmp_path / "a.md", tmp_path / "b.md"])
        doc_id = next(d["doc_id"] for d in rag.documents() if d["title"] == "b")
    i = ["--index", str(ix)]
    assert (
        _run([["--help"], ["--version"], ["methods"], ["inspect", *i], ["inspect", *i, "--documents"]]) == []
    )
    assert _run([["delete", doc_id, *i]]) == ["faiss"]  # it writes the remaining chunks' faiss file
    with RAG.open(ix, create=False) as rag:
        assert [d["title"] for d in rag.documents()] == ["a"]
        assert rag.manifest.counts["vector_dim"] == 384
        ans = rag.query("Where does the snowy owl live?", context_only=True)  # the model loads here
        assert ans.contexts[0].title == "a"


def test_query_on_the_onnx_path_imports_no_torch(tmp_path, minilm):
    """An index embedded by torch, queried by ONNX (same model name): the answer needs no torch."""
    (tmp_path / "a.md").write_text("# A\n\nThe snowy owl lives in the Arctic tundra. It hunts lemmings.")
    (tmp_path / "b.md").write_text("# B\n\nHoney bees dance to share where flowers are.")
    ix = tmp_path / "ix"
    with RAG.open(ix, embedder=minilm, methods=["vanilla", "entity-walk"]) as rag:
        rag.index([tmp_path / "a.md", tmp_path / "b.md"])
    q = ["query", "Where does the snowy owl live?", "--index", str(ix), "--json"]
    # the question names nothing, and the index holds the reader's spans: no spaCy either
    assert _run([q, [*q, "--method", "entity-walk"]]) == ["faiss", "onnxruntime"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PARETORAG_EMBEDDER_BACKEND": "torch"}
    r = subprocess.run(
        [sys.executable, "-m", "paretorag.cli", *q], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["contexts"][0]["title"] == "a"


def test_spacy_is_imported_without_torch_for_its_thread_only() -> None:
    """While one thread imports spaCy without torch, another thread sees torch as installed
    (an index build imports scikit-learn and scipy in other threads meanwhile)."""
    code = textwrap.dedent(
        """
        import importlib.util, json, sys, threading
        from paretorag.providers import imports
        from paretorag.providers import nlp
        seen = {}
        refuse = imports.RefuseToThread.find_spec
        def spy(self, name, path=None, target=None):
            if name == "torch" and not seen:
                def other():  # reads only: the import lock is held here
                    seen["entry"] = repr(sys.modules.get("torch", "absent"))
                t = threading.Thread(target=other)
                t.start()
                t.join()
            return refuse(self, name, path, target)
        imports.RefuseToThread.find_spec = spy
        nlp.import_spacy()
        import thinc.compat
        seen["thinc_torch"] = thinc.compat.has_torch
        seen["loaded"] = "torch" in sys.modules
        seen["findable"] = importlib.util.find_spec("torch") is not None  # refused to that import only
        print(json.dumps(seen))
        """
    )
    env = {**os.environ, "PARETORAG_EMBEDDER_BACKEND": "auto"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"entry": "'absent'", "findable": True, "thinc_torch": False, "loaded": False}


def _fusion_query_modules(ix, question: str) -> tuple[dict[str, list[str]], dict]:
    """Run ``paretorag query QUESTION --json`` in a fresh process: which heavy libraries it
    imported (``unused`` ones it must not, ``used`` ones it did) and the answer."""
    script = textwrap.dedent(
        """
        import json, sys
        from paretorag.cli import app
        try:
            app(json.loads(sys.argv[1]), standalone_mode=False)
        except SystemExit:
            pass
        unused = ("torch", "sklearn", "pandas", "nltk", "scipy.stats")
        print(json.dumps({"unused": sorted(m for m in unused if m in sys.modules),
                          "used": sorted(m for m in ("lightgbm", "spacy", "Stemmer") if m in sys.modules)}))
        """
    )
    q = ["query", question, "--index", str(ix), "--json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-c", script, json.dumps(q)], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    return json.loads(lines[-1]), json.loads("\n".join(lines[:-1]))


def test_an_answered_fusion_query_imports_no_unused_companions(tmp_path, minilm):
    """The recommended method with the offline reader: LightGBM without scikit-learn or pandas,
    stems without NLTK (each cost a CLI query about a second); spaCy only for a question that
    names something the index's entity spans do not hold (its load cost a CLI query 1.3 s)."""
    (tmp_path / "a.md").write_text(
        "# Snowy owl\n\nThe snowy owl lives in the Arctic tundra. It hunts lemmings."
    )
    (tmp_path / "b.md").write_text("# Honey bee\n\nHoney bees dance in Germany to share where flowers are.")
    ix = tmp_path / "ix"
    with RAG.open(ix, embedder=minilm, methods=["fusion"]) as rag:
        rag.index([tmp_path / "a.md", tmp_path / "b.md"])
    # no capitalized word past "What": the question names nothing, no parse needed
    mods, answer = _fusion_query_modules(ix, "What does the snowy owl hunt?")
    assert mods == {"unused": [], "used": ["Stemmer", "lightgbm"]}
    assert answer["method"] == "fusion"
    # "Germany" is an entity span of the index: still no spaCy
    mods, _ = _fusion_query_modules(ix, "Where do honey bees dance in Germany?")
    assert mods == {"unused": [], "used": ["Stemmer", "lightgbm"]}
    # "Gandalf" is not: the question is parsed, spaCy loads (still without torch)
    mods, answer = _fusion_query_modules(ix, "What does Gandalf hunt?")
    assert mods == {"unused": [], "used": ["Stemmer", "lightgbm", "spacy"]}
    assert answer["method"] == "fusion"
