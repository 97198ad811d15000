"""Every LLM builder re-issues identical prompts on a re-run, so the index's response cache
makes a build resumed after a kill free (unified framework §4; the summary tree's guarantee)."""

from __future__ import annotations

import pytest

from paretorag.graphs.base import get_builder
from paretorag.providers.llm import FakeLLM
from paretorag.providers.wrappers import CachedLLM

from ..builders_util import CORPUS, Ctx, table
from .test_builders_kg import graphrag_llm, hipporag_llm


class DictStore:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_llm(self, key: str) -> str | None:
        return self.data.get(key)

    def put_llm(self, key: str, model: str, response: str) -> None:
        self.data[key] = response


def make(name: str) -> FakeLLM:
    if name == "kg":
        return hipporag_llm()
    if name in ("tkg", "rkg"):
        return graphrag_llm(name, [])
    return FakeLLM(lambda r: "Summary: " + r.messages[-1].content[-40:])


@pytest.mark.parametrize("name", ["kg", "tkg", "rkg", "raptor_tree"])
def test_second_build_is_served_by_the_cache(name: str) -> None:
    store = DictStore()
    texts = CORPUS * 4 if name == "raptor_tree" else CORPUS
    params = {"stop_size": 3, "max_clusters": 6} if name == "raptor_tree" else {}
    first = make(name)
    a = get_builder(name, **params).build(Ctx(table(texts), CachedLLM(first, store)))  # type: ignore[arg-type]
    assert first.requests
    second = make(name)
    b = get_builder(name, **params).build(Ctx(table(texts), CachedLLM(second, store)))  # type: ignore[arg-type]
    assert second.requests == []  # every prompt repeated exactly: nothing new to pay for
    assert a.meta["summary"] == b.meta["summary"]
    assert all((a.arrays[k] == b.arrays[k]).all() for k in a.arrays)


def test_communities_resume_from_the_cache() -> None:
    src = get_builder("tkg").build(Ctx(table(CORPUS)))  # type: ignore[arg-type]
    store = DictStore()
    llm = FakeLLM(lambda r: '{"title": "T", "summary": "S", "rating": 5}')
    get_builder("communities").build(Ctx(table(CORPUS), CachedLLM(llm, store), {"tkg": src}))  # type: ignore[arg-type]
    again = FakeLLM(lambda r: "unused")
    get_builder("communities").build(Ctx(table(CORPUS), CachedLLM(again, store), {"tkg": src}))  # type: ignore[arg-type]
    assert llm.requests and again.requests == []
