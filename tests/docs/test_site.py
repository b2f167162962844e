"""The documentation site builds with ``mkdocs build --strict`` (a broken link, anchor or nav entry,
a missing page or an API name that does not resolve is a warning, and a warning fails), and, opened
in a real headless Chromium at a desktop's 1280×800 and a phone's 390×844, its navigation and its
search work. Screenshots land in ``test-artifacts/docs/``.

The browser part is skipped, saying why, where no browser is installed (``.ci/run`` installs one);
the build never is."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.examples import ROOT
from tests.playground.browser import Browser, chromium, missing

DESKTOP, PHONE = (1280, 800), (390, 844)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the theme's notice about its successor: not ours
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert "WARNING" not in built.stderr, built.stderr[-4000:]
    return target


def test_the_site_builds_strict_with_every_page_of_the_nav(site: Path) -> None:
    for page in ("index.html", "quick-start.html", "reference/cli/apply.html", "reference/metrics.html"):
        assert (site / page).is_file(), page
    api = (site / "python-api.html").read_text()
    assert 'id="celmut.api.load"' in api and 'id="celmut.api.Policies"' in api  # mkdocstrings rendered them
    assert "Keep a Changelog" in (site / "development" / "changelog.html").read_text()  # included, not linked


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


browser_only = pytest.mark.skipif(bool(missing()), reason=f"no browser for the site's browser tests: {missing()}")


def _h1(browser: Browser) -> str:
    from selenium.webdriver.common.by import By

    return str(browser.driver.find_element(By.CSS_SELECTOR, "article h1").text)


def _click(browser: Browser, css: str, text: str | None = None) -> None:
    """Click the first visible element matching ``css`` (and holding ``text``), as a user would."""
    from selenium.webdriver.common.by import By

    def found(driver: object) -> object:
        for element in browser.driver.find_elements(By.CSS_SELECTOR, css):
            if element.is_displayed() and (text is None or text in element.text):
                return element
        return False

    element = browser.wait(found, f"a visible {css} {text or ''}")
    element.click()  # type: ignore[attr-defined]


def _arrives(browser: Browser, path: str, title: str) -> None:
    browser.wait(lambda d: d.current_url.split("#")[0].endswith(path), f"the page {path}")
    browser.wait(lambda _: _h1(browser) == title, f"the heading {title!r}")


def _search(browser: Browser, phone: bool, query: str) -> None:
    from selenium.webdriver.common.by import By

    if phone:
        _click(browser, 'label.md-header__button[for="__search"]')
    else:
        _click(browser, "input.md-search__input")
    field = browser.driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    browser.wait(lambda _: field.is_displayed(), "the search field")
    field.send_keys(query)
    browser.wait(
        lambda d: any(e.is_displayed() for e in d.find_elements(By.CSS_SELECTOR, "li.md-search-result__item")),
        f"search results for {query!r}",
    )


@browser_only
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-1280x800", "phone-390x844"])
def test_navigation_and_search_work_in_a_browser(served: str, size: tuple[int, int]) -> None:
    phone = size == PHONE
    name = "phone" if phone else "desktop"
    with chromium(*size, area="docs") as browser:
        browser.driver.get(served + "index.html")
        browser.wait(lambda _: _h1(browser) == "celmut", "the home page")
        browser.screenshot(f"{name}-1-home")

        # Navigation: to the quick start, then into a section and one of its pages.
        if phone:
            _click(browser, 'label.md-header__button[for="__drawer"]')
            _click(browser, "nav.md-nav--primary a.md-nav__link", "Quick start")
        else:
            _click(browser, "a.md-tabs__link", "Quick start")
        _arrives(browser, "quick-start.html", "Quick start")
        browser.screenshot(f"{name}-2-quick-start")
        if phone:  # the drawer: a section's page, then the drawer opens on that section's pages
            _click(browser, 'label.md-header__button[for="__drawer"]')
            _click(browser, "nav.md-nav--primary a.md-nav__link", "Reference")
            _arrives(browser, "reference/index.html", "Reference")
            _click(browser, 'label.md-header__button[for="__drawer"]')
            browser.screenshot(f"{name}-3-drawer")
        else:
            _click(browser, "a.md-tabs__link", "Reference")
            _arrives(browser, "reference/index.html", "Reference")
        _click(browser, "nav.md-nav--primary a.md-nav__link", "Metrics")
        _arrives(browser, "reference/metrics.html", "Metrics")
        browser.screenshot(f"{name}-4-metrics")

        # Search: a word of one page, and its result opens that page.
        _search(browser, phone, "autogen pitfall")
        browser.screenshot(f"{name}-5-search")
        _click(browser, "li.md-search-result__item a.md-search-result__link")
        browser.wait(lambda d: "autogen" in d.current_url or "quick-start" in d.current_url, "a page about autogen")
        browser.wait(lambda d: "autogen" in d.find_element("css selector", "article").text.lower(), "autogen")
        browser.screenshot(f"{name}-6-search-result")
