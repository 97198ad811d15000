"""A document's outline (headings, page breaks) and the heading paths chunks carry."""

from __future__ import annotations

from paretorag.textutil import PAGE, heading_paths, outline

MD = """# Guide

Intro text.

## Install

Run pip.

```bash
# not a heading: a comment in a code block
pip install paretorag
```

### From source ###

Clone it.

## Use

Ask.
"""


def test_markdown_headings_outside_code_fences():
    found = outline(MD)
    assert [(h.level, h.title) for h in found] == [
        (1, "Guide"),
        (2, "Install"),
        (3, "From source"),
        (2, "Use"),
    ]
    for h in found:
        assert MD[h.start : h.end].lstrip("#").strip().rstrip("#").strip() == h.title


def test_heading_paths_follow_levels_and_drop_the_title():
    offs = [MD.index(x) for x in ("Intro", "Run pip", "pip install", "Clone", "Ask")]
    assert heading_paths(MD, offs) == [
        "Guide",
        "Guide > Install",
        "Guide > Install",
        "Guide > Install > From source",
        "Guide > Use",
    ]
    assert heading_paths(MD, offs, title="guide")[-1] == "Use"  # the document's own title is left out
    assert heading_paths(MD, [0]) == ["Guide"]  # a heading starting at the offset counts


def test_html_heading_tags_in_plain_text_and_page_breaks():
    text = "Page - wikipedia <H1> Page </H1> <P> a </P> <H2> History <b>( edit )</b> </H2> old \f new"
    found = outline(text)
    assert [(h.level, h.title) for h in found] == [(1, "Page"), (2, "History ( edit )"), (PAGE, "")]
    assert heading_paths(text, [0, text.index("old"), text.index("new")], "Page") == [
        "",
        "History ( edit )",
        "History ( edit )",
    ]


def test_no_headings_and_hashes_that_are_not_headings():
    assert outline("Plain text. #hashtag and C# code.\n#not-a-heading\n") == []
    assert heading_paths("no outline here", [0, 5]) == ["", ""]
    long_line = "# " + "word " * 100
    assert outline(long_line) == []  # a paragraph starting with '#', not a heading
