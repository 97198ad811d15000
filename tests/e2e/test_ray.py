"""Indexing on a local Ray cluster (num_cpus=2) gives the single-process index, and resumes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paretorag import RAG
from paretorag.cli import optional_ray_address
from paretorag.errors import ConfigError, ProviderError
from paretorag.indexing.distributed import RayCluster
from paretorag.providers.embedders import HashEmbedder

from ..conftest import DATA

pytestmark = pytest.mark.slow
CHILD = Path(__file__).parents[1] / "ray_child.py"


@pytest.fixture(scope="module")
def cluster():
    with RayCluster(num_cpus=2) as c:
        yield c


def _corpus(root: Path, n: int, long_docs: int = 1) -> list[Path]:
    """``n`` 2Wiki passages as a corpus file, plus long text files cut into several chunks."""
    records = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_dev164_corpus.json").read_text())
    root.mkdir(parents=True, exist_ok=True)
    corpus = root / "passages.json"
    corpus.write_text(json.dumps(records[:n]))
    paths = [corpus]
    for d in range(long_docs):
        page = root / f"long{d}.txt"
        page.write_text("\n\n".join(r["text"] for r in records[n + 30 * d : n + 30 * (d + 1)]))
        paths.append(page)
    return paths


def _structures(rag: RAG) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for name, info in rag.manifest.structures.items():
        data = rag.backend.load_structure(info["dir"])
        out[name] = {**data.arrays, "dir": np.asarray([info["dir"]])}
    return out


def _same_structures(a: dict[str, dict[str, np.ndarray]], b: dict[str, dict[str, np.ndarray]]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert sorted(a[name]) == sorted(b[name]), name
        for key, x in a[name].items():
            y = b[name][key]
            assert x.shape == y.shape, (name, key)
            if np.issubdtype(x.dtype, np.floating):
                np.testing.assert_allclose(x, y, atol=1e-5, err_msg=f"{name}.{key}")
            else:
                np.testing.assert_array_equal(x, y, err_msg=f"{name}.{key}")


def test_local_cluster_embeds_and_chunks_as_one_process(tmp_path, cluster, minilm):
    paths = _corpus(tmp_path / "corpus", 30)
    one = RAG.open(tmp_path / "one", embedder=minilm, chunk_size=200)
    one.index(paths)
    ray = RAG.open(tmp_path / "ray", chunk_size=200)  # MiniLM, built on each worker from the setting
    before = dict(cluster.tasks_run)
    report = ray.index(paths, cluster=cluster)
    assert report.added == 31 and ray.manifest.counts["chunks"] > 31  # the long file is cut in several
    assert cluster.tasks_run["chunk"] > before["chunk"] and cluster.tasks_run["embed"] > before["embed"]

    assert list(ray.view.chunks.ids) == list(one.view.chunks.ids)
    assert list(ray.view.chunks.texts) == list(one.view.chunks.texts)
    assert ray.manifest.vectors == one.manifest.vectors
    np.testing.assert_allclose(ray.view.vectors.matrix, one.view.vectors.matrix, atol=1e-5)
    question = "Who directed the film?"
    assert [c.chunk_id for c in ray.query(question, context_only=True).contexts] == [
        c.chunk_id for c in one.query(question, context_only=True).contexts
    ]
    one.close()
    ray.close()


@pytest.mark.parametrize("where", ["folder", "postgres"])
def test_local_cluster_builds_the_same_spacy_entity_graph_and_tree(tmp_path, cluster, where, request):
    """Also into PostgreSQL: the driver is the one writer wherever the index is."""
    paths = _corpus(tmp_path / "corpus", 60)
    methods = ["vanilla", "e2graphrag"]  # chunk vectors, summary tree, spaCy entity graph
    one = RAG.open(tmp_path / "one", embedder=HashEmbedder(32), methods=methods, chunk_size=200)
    one.index(paths)
    target = tmp_path / "ray" if where == "folder" else request.getfixturevalue("pg_url")
    ray = RAG.open(target, embedder="hash:32", methods=methods, chunk_size=200)
    before = cluster.tasks_run["extract"]
    ray.index(paths, cluster=cluster)
    assert cluster.tasks_run["extract"] > before

    assert list(ray.view.chunks.ids) == list(one.view.chunks.ids)
    _same_structures(_structures(ray), _structures(one))
    entity = ray.view.structure("entity_graph")
    assert entity.meta["stats"]["chunks_extracted"] == ray.manifest.counts["chunks"]
    assert entity.meta["stats"]["entities"] > 100
    question = "Who directed the film?"
    assert [c.chunk_id for c in ray.query(question, method="e2graphrag", context_only=True).contexts] == [
        c.chunk_id for c in one.query(question, method="e2graphrag", context_only=True).contexts
    ]
    one.close()
    ray.close()


def test_local_cluster_pools_sentence_spans_in_the_chunk_pass(tmp_path, cluster):
    """The concept graph's sentence vectors (G2ConS Eq. 1) come from the cluster's one
    pass per chunk, as in a single process: no chunk is embedded a second time."""
    paths = _corpus(tmp_path / "corpus", 40, long_docs=0)
    methods = ["vanilla", "g2cons"]
    one = RAG.open(tmp_path / "one", embedder=HashEmbedder(32), methods=methods, chunk_size=200)
    one.index(paths)
    ray = RAG.open(tmp_path / "ray", embedder="hash:32", methods=methods, chunk_size=200)
    before = dict(cluster.tasks_run)
    ray.index(paths, cluster=cluster)
    assert cluster.tasks_run["embed_spans"] > before.get("embed_spans", 0)
    assert cluster.tasks_run["embed"] == before.get("embed", 0)  # no separate chunk pass

    calls = ray.manifest.model_calls
    assert calls["vectors"]["embed_texts"] == ray.manifest.counts["chunks"]
    assert calls["vectors"]["pooled_spans"] > ray.manifest.counts["chunks"]  # several sentences each
    assert calls.get("build.concept_graph", {}).get("embed_texts", 0) == 0
    assert ray.manifest.model_calls == one.manifest.model_calls
    _same_structures(_structures(ray), _structures(one))
    one.close()
    ray.close()


def _child(index_dir: Path, paths: list[Path], kill_on: str | None = None) -> int | None:
    """Run ray_child.py; with ``kill_on``, SIGKILL its process group (the driver and the
    local cluster it started) at that progress line. Returns the texts it embedded."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(index_dir), *map(str, paths)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    embedded = None
    for line in proc.stdout:
        if kill_on and line.startswith(kill_on):
            os.killpg(proc.pid, signal.SIGKILL)
            break
        if line.startswith("done "):
            embedded = int(line.split()[1])
    proc.wait(timeout=120)
    if kill_on is None:
        assert proc.returncode == 0
    return embedded


def test_killed_driver_resumes_without_redoing_committed_batches(tmp_path):
    paths = _corpus(tmp_path / "corpus", 200, long_docs=0)
    ref = RAG.open(tmp_path / "ref", embedder=HashEmbedder(32), methods=["vanilla", "e2graphrag"], workers=1)
    ref.index(paths)

    ix = tmp_path / "ray"
    _child(ix, paths, kill_on="embedding chunks 128")  # two batches of 64 committed
    with sqlite3.connect(ix / "index.sqlite") as db:
        cached = db.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0]
    assert 128 <= cached < 200
    embedded = _child(ix, paths)
    assert embedded == 200 - cached  # committed batches were not embedded again

    ray = RAG.open(ix, embedder=HashEmbedder(32), create=False)
    assert list(ray.view.chunks.ids) == list(ref.view.chunks.ids)
    np.testing.assert_array_equal(ray.view.vectors.matrix, ref.view.vectors.matrix)
    _same_structures(_structures(ray), _structures(ref))
    ray.close()
    ref.close()


def test_embedder_object_cannot_go_to_workers(tmp_path, cluster):
    rag = RAG.open(tmp_path / "ix", embedder=HashEmbedder(16))  # the setting says minilm
    with pytest.raises(ConfigError, match="embedder object cannot be sent"):
        rag.index(_corpus(tmp_path / "c", 3, long_docs=0), cluster=cluster)
    rag.close()


def test_ray_flag_without_address_means_a_local_cluster():
    assert optional_ray_address(["index", "a", "--ray"]) == ["index", "a", "--ray", "local"]
    assert optional_ray_address(["index", "a", "--ray", "-i", "x"])[3] == "local"
    assert optional_ray_address(["index", "a", "--ray", "ray://h:10001"])[3] == "ray://h:10001"


def test_a_failing_task_stops_the_build_with_its_error(cluster):
    with pytest.raises(ProviderError, match=r"Ray embed task failed.*does not exist"):
        list(cluster.embed("st:/nonexistent/model", [["a text"]]))
