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
from .test_server_browser import _driver

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
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-question-graph.png",
        "2-node-passages.png",
        "3-entity-390px.png",
    ]
    assert all(p.stat().st_size > 5000 for p in shots.iterdir())
