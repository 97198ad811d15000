"""The web page in a real headless Chromium (Debian's chromium + chromedriver, driven by
selenium; no browser is downloaded): ask, see the answer and open a citation, upload a
file, delete it. Screenshots are saved in the test's tmp dir."""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed: pip install 'paretorag[serve]'")
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'"
)

from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from paretorag.server import KeyRing, create_app  # noqa: E402

from ..server_util import build_index, live_server, write_corpus  # noqa: E402

KEY = "rw-browser-0123456789abcdef"
RO_KEY = "ro-browser-0123456789abcdef"
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}  # an iPhone 12-15


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip(
            "chromium/chromedriver not installed: run `make browser` (apt-get install chromium chromium-driver)"
        )
    return browser, driver


def _driver(*extra: str):
    binary, driver_path = _chromium()
    from selenium.webdriver.chrome.service import Service as DriverService

    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        *extra,
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for csp_violations
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=opts)
    driver.set_page_load_timeout(30)
    return driver


def csp_violations(driver) -> list[str]:
    """What the console says the page's Content-Security-Policy refused (since the last call)."""
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]


@pytest.fixture
def browser():
    driver = _driver()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def offline_browser():
    """Chromium with the network off: every host but 127.0.0.1 fails to resolve, and any
    request that still leaves goes to a closed port."""
    driver = _driver(
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
    )
    try:
        yield driver
    finally:
        driver.quit()


def test_api_docs_render_with_the_network_off(tmp_path, offline_browser):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    wait = WebDriverWait(offline_browser, 30)
    with live_server(create_app(ix), limit_s=90) as base:
        offline_browser.get(base + "/docs")
        title = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".swagger-ui .info .title")))
        assert title.text.startswith("paretorag")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= 10)
        paths = {e.text for e in offline_browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert {"/query", "/documents", "/jobs/{job_id}"} <= paths
        offline_browser.save_screenshot(str(tmp_path / "docs.png"))
        # the check is real: a page from the internet does not load in this browser
        with pytest.raises(WebDriverException, match="ERR_"):
            offline_browser.get("https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css")


def test_ask_cite_upload_delete_in_a_real_browser(tmp_path, browser):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    upload = tmp_path / "newts.md"
    upload.write_text("Newts are small amphibians that return to ponds every spring to breed.")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    app = create_app(ix, keys=KeyRing.from_pairs([("write", KEY)]))
    wait = WebDriverWait(browser, 20)
    with live_server(app, limit_s=120) as base:
        browser.get(base + "/")
        # without the key the page asks for it (no bare 401)
        wait.until(lambda d: "needs an API key" in d.find_element(By.ID, "key-prompt").text)
        assert not browser.find_element(By.ID, "error").is_displayed()
        browser.find_element(By.ID, "api-key").send_keys(KEY)
        browser.find_element(By.ID, "save-key").click()
        wait.until(lambda d: len(Select(d.find_element(By.ID, "method")).options) > 1)
        assert (
            Select(browser.find_element(By.ID, "method")).first_selected_option.get_attribute("value")
            == "vanilla"
        )

        browser.find_element(By.ID, "question").send_keys("What do otters eat?")
        browser.find_element(By.ID, "ask").click()
        cite = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "#answer a.cite")))
        assert "fish" in browser.find_element(By.ID, "answer").text
        # the line under the answer in plain words: method, passages, retrieval time; who
        # answered; the total time; the LLM's part. How it retrieved: the tooltip, "details"
        route = browser.find_element(By.ID, "route")
        n = len(browser.find_elements(By.CSS_SELECTOR, "#contexts li"))
        assert re.fullmatch(rf"vanilla, {n} passages?, (under 1|\d+) ms", route.text), route.text
        assert "/" not in route.text and "(" not in route.text
        assert route.get_attribute("title").startswith("dense retrieval") and "total" in route.get_attribute(
            "title"
        )
        assert browser.find_element(By.ID, "latency").text.endswith("ms")
        cost = browser.find_element(By.ID, "cost").text
        assert re.fullmatch(r"no LLM call|\d+ LLM calls?, \d+ \+ \d+ tokens", cost), cost
        more = browser.find_element(By.ID, "route-details")
        assert more.is_displayed() and not browser.find_element(By.ID, "route-more").is_displayed()
        more.find_element(By.TAG_NAME, "summary").click()
        assert "how: dense retrieval" in browser.find_element(By.ID, "route-more").text
        browser.save_screenshot(str(shots / "1-answer.png"))
        cite.click()
        wait.until(ec.visibility_of_element_located((By.ID, "passage")))
        assert "otters" in browser.find_element(By.ID, "passage-title").text
        assert "Otters eat fish" in browser.find_element(By.ID, "passage-text").text
        float(browser.find_element(By.ID, "passage-score").text)
        browser.save_screenshot(str(shots / "2-citation.png"))
        browser.find_element(By.ID, "passage-close").click()

        browser.find_element(By.ID, "tab-docs").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#documents tbody tr")) == 6)
        browser.find_element(By.ID, "files").send_keys(str(upload))
        browser.find_element(By.ID, "upload").click()
        row = "#documents tbody tr td:first-child"
        wait.until(lambda d: "newts" in [td.text for td in d.find_elements(By.CSS_SELECTOR, row)])
        wait.until(lambda d: "added 1" in d.find_element(By.ID, "job-status").text)
        browser.save_screenshot(str(shots / "3-uploaded.png"))
        doc_id = next(
            tr.get_attribute("data-doc-id")
            for tr in browser.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
            if tr.find_element(By.CSS_SELECTOR, "td").text == "newts"
        )
        browser.find_element(By.CSS_SELECTOR, f'button.delete[data-doc-id="{doc_id}"]').click()
        wait.until(lambda d: "newts" not in [td.text for td in d.find_elements(By.CSS_SELECTOR, row)])
        wait.until(lambda d: "deleted 1" in d.find_element(By.ID, "job-status").text)
        browser.save_screenshot(str(shots / "4-deleted.png"))
        assert csp_violations(browser) == []
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-answer.png",
        "2-citation.png",
        "3-uploaded.png",
        "4-deleted.png",
    ]
    assert all(p.stat().st_size > 5000 for p in shots.iterdir())


def _storage(driver, kind: str) -> str | None:
    return driver.execute_script(f"return window.{kind}.getItem('paretorag-api-key')")


def _options(driver) -> list[tuple[str, bool]]:
    """The method picker's options (value, enabled), read at once: the page rebuilds them."""
    rows = driver.execute_script(
        "return [...document.getElementById('method').options].map((o) => [o.value, !o.disabled])"
    )
    return [(value, enabled) for value, enabled in rows]


def test_a_server_with_keys_gets_its_key_asked_for_and_kept_for_the_tab_only(tmp_path, browser):
    ix = build_index(tmp_path / "ix", write_corpus(tmp_path / "src"))
    app = create_app(ix, keys=KeyRing.from_pairs([("write", KEY), ("read", RO_KEY)]))
    wait = WebDriverWait(browser, 20)
    prompt = (By.ID, "key-prompt")
    with live_server(app, limit_s=120) as base:
        browser.get(base + "/")
        wait.until(lambda d: "This server needs an API key" in d.find_element(*prompt).text)
        assert browser.find_element(By.ID, "key-status").text == "key needed"
        assert not browser.find_element(By.ID, "error").is_displayed()  # no "401", no empty list
        assert _options(browser) == [("enter the API key first", False)]
        assert not browser.find_element(By.ID, "ask").is_enabled()
        assert browser.switch_to.active_element == browser.find_element(By.ID, "api-key")
        browser.save_screenshot(str(tmp_path / "key-prompt.png"))

        browser.find_element(By.ID, "api-key").send_keys("wrong-key-0123456789")
        browser.find_element(By.ID, "save-key").click()
        wait.until(lambda d: "did not accept" in d.find_element(*prompt).text)
        assert browser.find_element(By.ID, "key-status").text == "key not accepted"
        assert _storage(browser, "sessionStorage") is None

        browser.find_element(By.ID, "api-key").send_keys(RO_KEY)  # a read-only key may ask
        browser.find_element(By.ID, "save-key").click()
        wait.until(lambda d: len(_options(d)) > 1)
        assert not browser.find_element(*prompt).is_displayed()
        assert browser.find_element(By.ID, "key-status").text.startswith("key accepted")
        assert ("vanilla", True) in _options(browser) and ("lightrag-local", False) in _options(browser)
        assert browser.find_element(By.ID, "ask").is_enabled()
        assert _storage(browser, "sessionStorage") == RO_KEY and _storage(browser, "localStorage") is None

        browser.refresh()  # the same tab keeps the key
        wait.until(lambda d: len(_options(d)) > 1)
        assert not browser.find_element(*prompt).is_displayed()

        browser.switch_to.new_window("tab")  # another tab does not
        browser.get(base + "/")
        wait.until(lambda d: "This server needs an API key" in d.find_element(*prompt).text)
        assert _storage(browser, "sessionStorage") is None

        browser.find_element(By.ID, "api-key").send_keys(KEY)
        browser.find_element(By.ID, "save-key").click()
        wait.until(lambda d: len(_options(d)) > 1)
        browser.find_element(By.ID, "forget-key").click()
        wait.until(lambda d: d.find_element(*prompt).is_displayed())
        assert _storage(browser, "sessionStorage") is None and _options(browser)[0][1] is False


def _fits(driver, width: int = PHONE["width"]) -> None:
    scroll = driver.execute_script("return document.documentElement.scrollWidth")
    wide = driver.execute_script(
        "return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > "
        f"{width} + 1).map((e) => e.tagName + '#' + e.id)"
    )
    assert scroll <= width, (scroll, wide)


def test_the_page_fits_a_phone_screen(tmp_path, browser):
    corpus = write_corpus(tmp_path / "src")
    long_name = tmp_path / "src" / ("a-very-long-file-name-without-any-break-" * 3 + ".md")
    long_name.write_text("Ospreys_dive_feet_first_to_catch_fish_" * 8 + " and carry them head first.")
    ix = build_index(tmp_path / "ix", [*corpus, long_name])
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    wait = WebDriverWait(browser, 20)
    app = create_app(ix, keys=KeyRing.from_pairs([("write", KEY)]))
    with live_server(app, limit_s=120) as base:
        browser.get(base + "/")
        wait.until(lambda d: d.find_element(By.ID, "key-prompt").is_displayed())
        assert browser.execute_script("return window.innerWidth") == PHONE["width"]
        _fits(browser)  # the key prompt
        browser.find_element(By.ID, "api-key").send_keys(KEY)
        browser.find_element(By.ID, "save-key").click()
        wait.until(lambda d: len(_options(d)) > 1)
        browser.find_element(By.ID, "question").send_keys("How do ospreys catch fish?")
        browser.find_element(By.ID, "ask").click()
        wait.until(lambda d: d.find_element(By.ID, "latency").text.endswith("ms"))
        _fits(browser)  # an answer and its passages, one of them a long unbroken word
        browser.save_screenshot(str(tmp_path / "phone-answer.png"))
        browser.find_element(By.CSS_SELECTOR, "#contexts a.cite").click()
        wait.until(ec.visibility_of_element_located((By.ID, "passage")))
        _fits(browser)
        browser.find_element(By.ID, "passage-close").click()
        browser.find_element(By.ID, "tab-docs").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#documents tbody tr")) == 7)
        _fits(browser)  # ids, long source paths and the delete buttons
        browser.save_screenshot(str(tmp_path / "phone-documents.png"))
