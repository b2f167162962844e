"""The playground in a real headless browser (Debian's Chromium through chromedriver, at 1280×800): load
an example, edit a policy and see the diff and provenance follow, open the shared link in a fresh page
and get the same state, export a test and run it with ``celmut test``, use the page with the keyboard
alone, and see a located error. Screenshots land in ``test-artifacts/playground/``.

Skipped, saying why, where no browser is installed; every wait is on the page's own state."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from celmut.main import main
from tests.playground.browser import HEIGHT, WIDTH, Browser, requires_browser
from tests.playground.page import (
    accept_replacement,
    by_id,
    caret,
    changed_rows,
    choose_example,
    js,
    load_example,
    pane_state,
    pane_text,
    set_pane,
    type_into,
)
from tests.playground.support import Playground

pytestmark = requires_browser()

ANNOTATE = """---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: mark-reviewed
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{annotations: {"reviewed": "yes"}}}'
"""


def test_load_an_example_edit_a_policy_and_the_diff_and_provenance_follow(browser: Browser, served: Playground) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    load_example(browser, served, "team-label")
    assert changed_rows(browser) == [("team: payments", "set by add-team-label spec.mutations[0]")]
    browser.screenshot("1-example")
    with browser.finishes("runs"):  # typed at the end of the pane: the page runs once the typing pauses
        type_into(browser, "policies", ANNOTATE, at_end=True)
    browser.wait(lambda _: any("mark-reviewed" in t for _, t in changed_rows(browser)), "the new policy in the diff")
    assert changed_rows(browser) == [
        ("team: payments", "set by add-team-label spec.mutations[0]"),
        ("reviewed: 'yes'", "set by mark-reviewed spec.mutations[0]"),
    ]
    outcomes = js(
        browser,
        "return [...document.querySelectorAll('#outcomes tbody tr')].map(tr => tr.cells[0].textContent + ' ' + tr.cells[2].textContent)",
    )
    assert [o for o in outcomes if "(autogen" not in o] == ["add-team-label applied", "mark-reviewed applied"]
    assert "mark-reviewed (autogen cronjobs) skipped" in outcomes  # its autogen variants do not select a Pod
    marked = browser.driver.find_elements(By.CSS_SELECTOR, "#diff tr.annotated")
    ActionChains(browser.driver).move_to_element(marked[-1]).perform()  # hovering a line says who set it
    browser.wait(lambda _: "mark-reviewed spec.mutations[0]" in by_id(browser, "why").text, "the line's provenance")
    assert "add /metadata/annotations/reviewed" in by_id(browser, "why").text  # type: ignore[attr-defined]
    browser.screenshot("2-edited")  # the playground page's picture (docs/playground.png)
    with browser.finishes("natives"):
        by_id(browser, "tab-native").click()  # type: ignore[attr-defined]
    natives = by_id(browser, "native").text  # type: ignore[attr-defined]
    assert "name: mpol-add-team-label" in natives and "name: mpol-mark-reviewed" in natives


def test_a_shared_link_opens_the_same_state_in_a_fresh_page(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "security-context")
    js(browser, "document.getElementById('operation').value = 'CREATE'")
    with browser.finishes("shares"):
        by_id(browser, "share").click()  # type: ignore[attr-defined]
    link = browser.driver.current_url
    assert "#s=" in link and len(link) < 4000  # deflated: the policies and resources are ~1.6 kB of YAML
    state, rows = pane_state(browser), changed_rows(browser)
    original = browser.driver.current_window_handle
    browser.driver.switch_to.new_window("tab")
    try:
        with browser.finishes("runs"):
            browser.open(link)
        assert pane_state(browser) == state
        assert changed_rows(browser) == rows and rows
        browser.screenshot("3-shared-link")
        browser.open(served.url + "?broken#s=bm90LWRlZmxhdGU")  # a link whose state was cut or tampered with
        assert "This link's state cannot be read" in by_id(browser, "problems").text  # type: ignore[attr-defined]
    finally:
        browser.driver.close()
        browser.driver.switch_to.window(original)


def test_an_exported_test_runs_with_celmut_test(browser: Browser, served: Playground, tmp_path: Path) -> None:
    load_example(browser, served, "team-label")
    for old in browser.downloads.glob("*"):
        old.unlink()
    with browser.finishes("exports"):
        by_id(browser, "export").click()  # type: ignore[attr-defined]
    archive = browser.downloads / "kyverno-test.zip"
    browser.wait(lambda _: archive.is_file() and not list(browser.downloads.glob("*.crdownload")), "the download")
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(tmp_path)
    assert main(["test", str(tmp_path / "playground")]) == 0


def test_the_page_is_usable_with_the_keyboard_alone_and_fits_1280x800(browser: Browser, served: Playground) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    load_example(browser, served, "team-label")
    assert js(browser, "return document.documentElement.scrollWidth") <= WIDTH
    for element in ("run", "share", "export", "policies", "diff"):
        box = js(
            browser,
            f"const r = document.getElementById('{element}').getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]",
        )
        assert box[0] >= 0 and box[2] <= WIDTH and 0 <= box[1] < HEIGHT, (element, box)  # type: ignore[index]
    # From the top of the page, as after a load: the first stop is the skip link (focused here: where Tab
    # starts after a blur depends on what had the focus before).
    js(browser, "window.scrollTo(0, 0); document.querySelector('.skip').focus()")
    keys = ActionChains(browser.driver)
    visited = ["A"]
    for _ in range(80):  # Tab through the page until the diff's marked line
        keys.send_keys(Keys.TAB).perform()
        active = js(
            browser,
            """const a = document.activeElement; const pane = a.closest('.editor');
            return [pane ? pane.id : a.id || a.tagName, a.className,
                    getComputedStyle(pane ? a.closest('.cm-editor') : a).outlineStyle]""",
        )
        visited.append(active[0])  # type: ignore[index]
        if "annotated" in active[1]:  # type: ignore[index]
            break
    else:
        pytest.fail(f"no marked diff line in the tab order: {visited}")
    visited = [v for v in visited if v != "BODY"]
    assert visited[:4] == ["A", "example", "operation", "run"]  # the skip link, then the header, in order
    assert "tab-policies" in visited and "policies" in visited  # the tab, then its editor
    assert active[2] != "none"  # type: ignore[index]  # the focus is visible
    keys.send_keys(Keys.ENTER).perform()
    assert "add-team-label spec.mutations[0]" in by_id(browser, "why").text  # type: ignore[attr-defined]
    assert js(browser, "return document.activeElement.textContent") == "Show in policies"
    browser.screenshot("4-keyboard")
    keys.send_keys(Keys.ENTER).perform()
    assert js(browser, "return document.getElementById('policies').contains(document.activeElement)")
    assert caret(browser, "policies")[0] == 23  # the mutation's `expression: |`
    js(browser, "document.getElementById('tab-policies').focus()")
    keys.send_keys(Keys.ARROW_RIGHT).perform()  # the panes' tabs follow the arrow keys (WAI-ARIA tabs)
    assert js(browser, "return [document.activeElement.id, document.getElementById('pane-resources').hidden]") == [
        "tab-resources",
        False,
    ]
    loaded = js(browser, "return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(served.url) for url in loaded)  # type: ignore[union-attr]  # nothing from elsewhere
    with browser.finishes("runs"):  # Ctrl+Enter runs from anywhere
        keys.key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()


def test_a_broken_expression_is_shown_at_its_line_and_column(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", pane_text(browser, "policies").replace("variables.team}] :", "variables.tem}] :"))
    problem = by_id(browser, "problems").text  # type: ignore[attr-defined]
    assert "policies, line 25, column 83, spec.mutations[0].jsonPatch.expression" in problem
    assert "undefined field 'tem'" in problem
    assert "stale" in by_id(browser, "results").get_attribute("class")  # type: ignore[attr-defined]
    browser.screenshot("5-error")
    with browser.finishes("runs"):  # a 10 MB paste: said at once, nothing sent, the page still works
        set_pane(browser, "resources", "# " + "x" * (10 * 1024 * 1024))
    assert "over the 3 MiB a request may carry" in by_id(browser, "problems").text  # type: ignore[attr-defined]
    with browser.finishes("runs"):
        choose_example(browser, "security-context")
        accept_replacement(browser)  # the panes were edited: the page asked first
    assert by_id(browser, "problems").text == ""  # type: ignore[attr-defined]
    assert ("runAsNonRoot: true", "set by default-security-context spec.mutations[0]") in changed_rows(browser)
