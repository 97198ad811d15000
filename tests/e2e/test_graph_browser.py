"""The page's graph view in a real headless Chromium with the network off (the vendored
cytoscape.js, no CDN): the graph of a question's passages renders its nodes, a click on a
node shows its passages, an entity's neighborhood renders, and the view fits 390 px.
Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")
pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'")

from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from paretorag import RAG
from paretorag.server import create_app

from ..server_util import live_server, write_corpus
from .test_server_browser import _driver, csp_violations

NODES = "return window.paretoragGraph ? window.paretoragGraph.nodes().length : -1"
OFFLINE = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=127.0.0.1",
)


@pytest.fixture
def browser():
    driver = _driver(*OFFLINE)
    try:
        yield driver
    finally:
        driver.quit()


def long_corpus(folder) -> list:
    """A corpus of one long document, hard-wrapped at 60 columns, that names the otter all
    through (several 1,200-token passages), and a line of markup that must stay text."""
    import textwrap

    animals = ["fish", "crab", "heron", "salmon", "beaver", "eel", "frog", "mussel"]
    places = ["river", "estuary", "lake", "marsh", "harbour", "stream", "delta", "pond"]
    paragraphs = ["Otters <img src=x id=injected> and <b>bold</b> tags stay plain text here."]
    for i in range(64):
        a, b = animals[i % 8], animals[(i * 3 + 1) % 8]
        place = places[(i * 5) % 8]
        sentences = [
            f"In the {place} the otter chases a {a} while a {b} hides under the roots of an old willow.",
            f"Watchers counted the {a} and the {b} for hours along the {place} without a break.",
            f"Later that season a young otter returned to the {place} and fed on the {b} again.",
            f"Nobody saw the {a} in the {place} after the first frost covered the banks in white.",
        ]
        if i == 24:  # a name once, deep in a passage
            sentences.append("A kingfisher watched the otter from a low branch.")
        paragraphs.append(textwrap.fill(" ".join(sentences), width=60))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "otter-diary.txt"
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return [path]


def click_node(driver, name: str) -> None:
    """A real mouse click on the node's place on the canvas (cytoscape turns it into a tap),
    at viewport coordinates: the canvas may be taller than a phone's viewport."""
    x, y = driver.execute_script(
        "const n = window.paretoragGraph.nodes().filter((n) => n.data('name') === arguments[0])[0];"
        "const p = n.renderedPosition(); const c = document.getElementById('graph-canvas');"
        "window.scrollTo(0, window.scrollY + c.getBoundingClientRect().top + p.y - window.innerHeight / 2);"
        "const r = c.getBoundingClientRect(); return [r.left + p.x, r.top + p.y];",
        name,
    )
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y)).click()
    actions.perform()


def test_graph_view_renders_and_a_node_shows_its_passages(tmp_path, browser):
    with RAG.open(tmp_path / "ix", embedder="hash:64", methods=["entity-walk"]) as rag:
        rag.index(write_corpus(tmp_path / "src"))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    wait = WebDriverWait(browser, 30)
    with live_server(create_app(tmp_path / "ix"), limit_s=120) as base:
        browser.get(base + "/")
        wait.until(lambda d: len(Select(d.find_element(By.ID, "method")).options) > 1)
        Select(browser.find_element(By.ID, "method")).select_by_value("entity-walk")
        browser.find_element(By.ID, "question").send_keys("What do otters eat?")
        browser.find_element(By.ID, "ask").click()
        wait.until(lambda d: d.find_element(By.ID, "latency").text.endswith("ms"))
        assert browser.find_element(By.ID, "route").text.startswith("entity-walk, ")
        wait.until(ec.element_to_be_clickable((By.ID, "show-graph"))).click()

        # the question's graph: the nodes of the passages entity-walk retrieved
        wait.until(lambda d: d.execute_script(NODES) > 0)
        n_nodes = browser.execute_script(NODES)
        summary = browser.find_element(By.ID, "graph-summary").text
        assert summary.startswith(f"{n_nodes} node(s)") and "entity_graph" in summary
        names = set(browser.execute_script("return window.paretoragGraph.nodes().map((n) => n.data('name'))"))
        assert {"otter", "fish", "crab"} <= names
        assert browser.execute_script("return window.paretoragGraph.edges().length") > 0
        assert browser.find_element(By.ID, "graph-node").is_displayed() is False
        browser.save_screenshot(str(shots / "1-question-graph.png"))

        click_node(browser, "otter")
        wait.until(ec.visibility_of_element_located((By.ID, "graph-node")))
        assert browser.find_element(By.ID, "graph-node-title").text == "otter"
        items = browser.find_elements(By.CSS_SELECTOR, "#graph-passages li")
        assert len(items) == 1 and "Otters eat fish" in items[0].text and "retrieved" in items[0].text
        selected = browser.execute_script(
            "return window.paretoragGraph.$('node:selected').map((n) => n.data('name'))"
        )
        assert selected == ["otter"]
        browser.save_screenshot(str(shots / "2-node-passages.png"))

        # an entity's neighbours, on a phone-sized window
        browser.set_window_size(390, 844)
        Select(browser.find_element(By.ID, "graph-by")).select_by_value("entity")
        q = browser.find_element(By.ID, "graph-q")
        q.clear()
        q.send_keys("fish")
        browser.find_element(By.ID, "graph-show").click()
        wait.until(lambda d: "around fish" in d.find_element(By.ID, "graph-summary").text)
        names = browser.execute_script("return window.paretoragGraph.nodes().map((n) => n.data('name'))")
        assert names[0] == "fish" and {"otter", "crab"} <= set(names)
        width = browser.execute_script("return window.innerWidth")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        canvas = browser.find_element(By.ID, "graph-canvas")
        assert 0 < canvas.size["width"] <= width and canvas.size["height"] > 200
        click_node(browser, "crab")
        wait.until(lambda d: d.find_element(By.ID, "graph-node-title").text == "crab")
        assert "Otters eat fish" in browser.find_element(By.ID, "graph-passages").text
        browser.save_screenshot(str(shots / "3-entity-390px.png"))
        assert csp_violations(browser) == []  # cytoscape's one inline style is allowed
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-question-graph.png",
        "2-node-passages.png",
        "3-entity-390px.png",
    ]
    assert all(p.stat().st_size > 5000 for p in shots.iterdir())


HEIGHT = "return document.documentElement.scrollHeight"
SCROLLED_TO_MARK = (  # the open passage's box is scrolled down to the marked sentence
    "const box = document.querySelector('#graph-passages details[open] .text');"
    "const b = box.getBoundingClientRect(), r = box.querySelector('mark').getBoundingClientRect();"
    "return box.scrollTop > 0 && r.top >= b.top && r.bottom <= b.bottom + 1;"
)


def test_a_node_of_long_passages_shows_its_sentences_and_the_page_stays_short(tmp_path, browser):
    """A node in many long passages: the sentences that name it, the name marked, each opening
    onto its whole passage in a box of bounded height; the page stays short at 1280 and 390 px."""
    # the paper's graph: on long documents the default leaves out a common noun in every chunk
    paper = {"entity_graph": {"nouns_max_df": 1.0}}
    with RAG.open(tmp_path / "ix", embedder="hash:64", methods=["entity-walk"], builders=paper) as rag:
        rag.index(long_corpus(tmp_path / "src"))
    wait = WebDriverWait(browser, 30)
    with live_server(create_app(tmp_path / "ix"), limit_s=150) as base:
        browser.get(base + "/")
        for width in (1280, 390):
            browser.set_window_size(width, 900 if width > 400 else 844)
            browser.find_element(By.ID, "tab-graph").click()
            Select(browser.find_element(By.ID, "graph-by")).select_by_value("entity")
            q = browser.find_element(By.ID, "graph-q")
            q.clear()
            q.send_keys("otter")
            browser.execute_script("window.paretoragGraph = null")
            browser.find_element(By.ID, "graph-show").click()
            wait.until(lambda d: d.execute_script(NODES) > 0)
            click_node(browser, "otter")
            wait.until(lambda d: d.find_element(By.ID, "graph-node-title").text == "otter")
            items = browser.find_elements(By.CSS_SELECTOR, "#graph-passages li")
            assert len(items) >= 4  # the otter is in every passage
            marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#graph-passages summary mark")]
            assert len(marks) >= len(items) and {m.lower() for m in marks} <= {"otter", "otters"}
            summaries = browser.find_elements(By.CSS_SELECTOR, "#graph-passages details > summary")
            assert all(len(s.text) < 400 for s in summaries)
            assert not browser.find_elements(By.CSS_SELECTOR, "#graph-passages img, #graph-passages b")
            assert browser.execute_script(HEIGHT) < 3000, (width, browser.execute_script(HEIGHT))
            assert browser.execute_script("return document.documentElement.scrollWidth") <= width

            # one sentence opens onto its whole passage: line breaks collapsed, the box scrolls
            summaries[0].click()
            whole = wait.until(
                ec.visibility_of_element_located((By.CSS_SELECTOR, "#graph-passages details[open] .text"))
            )
            box = browser.execute_script(
                "const e = arguments[0]; return [e.clientHeight, e.scrollHeight, e.innerText];", whole
            )
            assert 0 < box[0] <= 420 and box[1] > box[0], box[:2]
            assert "otter chases a" in box[2] and box[2].count("\n\n") >= 3  # paragraphs kept,
            assert "\n" not in box[2].replace("\n\n", " ")  # hard-wrapped line breaks gone
            assert browser.execute_script(HEIGHT) < 3000
            assert "<img src=x id=injected>" in whole.get_attribute("textContent")  # text, not markup
            assert not browser.find_elements(By.ID, "injected")
            browser.save_screenshot(str(tmp_path / f"long-passages-{width}.png"))

            # a sentence deep in its passage opens with the box scrolled to it
            click_node(browser, "kingfisher")
            wait.until(lambda d: d.find_element(By.ID, "graph-node-title").text == "kingfisher")
            (summary,) = browser.find_elements(By.CSS_SELECTOR, "#graph-passages details > summary")
            assert summary.text == "A kingfisher watched the otter from a low branch."
            summary.click()
            wait.until(lambda d: d.execute_script(SCROLLED_TO_MARK))
