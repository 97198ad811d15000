"""SQuAD v1.1 train rebuilt from the site's article pages: text, order and answer positions."""

from __future__ import annotations

import json

import pytest

from paretorag.errors import InputError
from paretorag.training.squad_pages import locate, rebuild

PAGE = (
    '<html><h1 id="title">Oslo_Prize</h1><div><div><div class="para-wrap"><div class="row">'
    '<div class="col-md-6"><pre>The prize went to Oslo in 1999. A gala in Paris &amp; Oslo followed.</pre></div>'
    '<div class="col-md-6 rightCol">'
    '<div class="qa-wrap"><p> <strong class="question">Where did the gala take place?</strong></p>'
    '<ol class="list-unstyled"><li><p><i>Answer 1: </i><span class="answer">Oslo</span></p></li></ol></div>'
    '<div class="qa-wrap"><p> <strong class="question">When did the prize go?</strong></p>'
    '<ol class="list-unstyled"><li><p><i>Answer 1: </i><span class="answer">1999 </span></p></li></ol></div>'
    "</div></div></div></div></div></html>"
)


def test_a_repeated_answer_takes_the_occurrence_near_the_question():
    filler = " Nothing else happened that year." * 10
    context = f"The prize went to Oslo in 1999.{filler} A gala took place in Paris and Oslo."
    start, n = locate(context, "Oslo", "Where did the gala take place?")
    assert n == 2 and start == context.rindex("Oslo")
    assert locate(context, "Rome", "Where?") == (-1, 0)


def test_pages_are_read_back_into_squad_json_in_the_index_order(tmp_path):
    (tmp_path / "index.html").write_text(
        '<a href="/SQuAD-explorer/explore/1.1/train/Oslo_Prize.html">Oslo</a>', encoding="utf-8"
    )
    (tmp_path / "Oslo_Prize.html").write_text(PAGE, encoding="utf-8")
    out = tmp_path / "train.json"
    counts = rebuild(tmp_path, out)
    assert counts["articles"] == 1 and counts["questions"] == 2
    (article,) = json.loads(out.read_text())["data"]
    (par,) = article["paragraphs"]
    assert article["title"] == "Oslo_Prize" and "Paris & Oslo" in par["context"]
    for qa in par["qas"]:
        (a,) = qa["answers"]
        assert par["context"][a["answer_start"] :].startswith(a["text"])
    assert [qa["answers"][0]["text"] for qa in par["qas"]] == ["Oslo", "1999"]  # the blank stripped


def test_a_folder_without_the_index_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"index\.html not found"):
        rebuild(tmp_path, tmp_path / "x.json")
