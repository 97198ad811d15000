"""The sentences a graph node's passages name it in (the page's Graph tab quotes them):
matched on word stems whatever the case, line breaks collapsed, long sentences cut around
the name, the name's offsets pointing into the quoted sentence."""

from __future__ import annotations

from paretorag.explore.mentions import SENTENCE_CHARS, PassageWords, mentions, name_stems


def marked(m: dict) -> list[str]:
    return [m["sentence"][a:b] for a, b in m["highlights"]]


def test_names_match_whatever_the_case_and_plural_and_line_breaks_collapse():
    text = "THE OTTER dives.\nTwo river\n   otters  play all day. Herons wade.\n\nAn otter's den is a holt."
    found = mentions(PassageWords(text), name_stems(["River Otter", "otter"]), limit=5)
    assert [m["sentence"] for m in found] == [
        "THE OTTER dives.",
        "Two river otters play all day.",
        "An otter's den is a holt.",
    ]
    assert [marked(m) for m in found] == [["OTTER"], ["river otters"], ["otter"]]  # the longest name
    assert [text[m["start"] : m["end"]].split() == m["sentence"].split() for m in found] == [True] * 3


def test_at_most_limit_sentences_and_the_first_one_when_none_names_it():
    words = PassageWords("Otters swim. Otters eat. Otters sleep.")
    assert [m["sentence"] for m in mentions(words, name_stems(["otter"]))] == ["Otters swim.", "Otters eat."]
    none = mentions(PassageWords("Geese fly south. They honk."), name_stems(["goose"]))
    assert none == [{"sentence": "Geese fly south.", "start": 0, "end": 16, "highlights": []}]
    assert mentions(PassageWords("Otters swim."), name_stems(["%%"])) == [
        {"sentence": "Otters swim.", "start": 0, "end": 12, "highlights": []}
    ]
    assert mentions(PassageWords(""), name_stems(["otter"])) == []


def test_a_long_sentence_is_cut_around_the_name():
    before = " ".join(f"word{i}" for i in range(300))
    after = " ".join(f"more{i}" for i in range(300))
    text = f"{before} the sea\notter swims {after} <b>end</b>"
    (m,) = mentions(PassageWords(text), name_stems(["sea otter"]))
    assert len(m["sentence"]) <= SENTENCE_CHARS + 2
    assert m["sentence"].startswith("\u2026word") and m["sentence"].endswith("\u2026")
    assert marked(m) == ["sea otter"]
    assert (m["start"], m["end"]) == (0, len(text))
