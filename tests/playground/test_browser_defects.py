"""The ten defects a new user met in the playground (headless Chromium, policies nobody here wrote),
each replayed in the browser as that user met it. Screenshots of each state land among the test
artefacts (``test-artifacts/playground/``)."""

from __future__ import annotations

import zipfile

import pytest

from tests.playground.browser import Browser, requires_browser
from tests.playground.page import (
    accept_replacement,
    box,
    by_id,
    caret,
    choose_example,
    js,
    load_example,
    pane_state,
    pane_text,
    set_pane,
    text_of,
)
from tests.playground.support import POD, Playground
from tests.playground.test_api import CALLS_OUT

pytestmark = requires_browser()

# A syntax error on the second line of a folded expression (line 18 of the pane): CEL sees the
# folded text as one line, so its column is far past the end of the block's first line.
FOLDED = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: folded-labels
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [pods]
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        # the labels the shop's pods carry
        expression: >-
          Object{metadata: Object.metadata{labels:
          {"team": "shop", "tier": "web" +}}}
"""
FOLDED_ERROR_LINE = 18
LONG_IMAGE = (
    "registry.example.com/shop/storefront/checkout-service-with-a-very-long-name:v1.2.3-build.4567-sha.0123456789abcdef"
)
IMAGE_POLICY = f"""apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: pin-image}}
spec:
  matchConstraints:
    resourceRules: [{{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: '[JSONPatch{{op: "replace", path: "/spec/containers/0/image", value: "{LONG_IMAGE}"}}]'
"""


def test_1_the_scratch_pad_works_with_an_empty_policies_pane(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", "")
    by_id(browser, "tab-cel").click()
    with browser.finishes("evals"):
        by_id(browser, "evaluate").click()
    assert text_of(browser, "cel-result") == '"web-7d4b9c"'
    browser.screenshot("defect-1-scratch-pad-without-policies")


def test_2_the_why_panel_follows_the_object_shown_and_a_failed_run(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "security-context")
    first = browser.driver.find_element("css selector", "#diff tr.annotated")
    first.click()
    pointer = browser.driver.find_element("css selector", "#why h2").text
    assert pointer.startswith("/spec/")
    chips = browser.driver.find_elements("css selector", "#objects [role=tab]")
    assert len(chips) == 2
    chips[1].click()  # another object: the first one's field is not shown as this one's
    assert not browser.driver.find_elements("css selector", "#why h2")
    assert "Hover or focus a marked line" in text_of(browser, "why")
    browser.driver.find_element("css selector", "#diff tr.annotated").click()
    assert browser.driver.find_element("css selector", "#why h2").text.startswith("/spec/template/")
    with browser.finishes("runs"):  # a failed run: nothing of the last one is shown as current
        set_pane(browser, "resources", "apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n")
    assert not browser.driver.find_elements("css selector", "#why h2")
    browser.screenshot("defect-2-why-cleared")


def test_3_the_response_of_a_denied_object_says_it_was_denied(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "resources", POD)
        set_pane(browser, "policies", CALLS_OUT)
    by_id(browser, "tab-response").click()
    patch = text_of(browser, "patch")
    assert "denied" in patch and "allow-list is empty" in patch
    assert "admitted as it came" not in patch
    browser.screenshot("defect-3-denied-response")


def test_4_an_error_in_a_folded_expression_is_on_its_own_line(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", FOLDED)
    problem = text_of(browser, "problems")
    assert f"policies, line {FOLDED_ERROR_LINE}, column " in problem, problem
    column = int(problem.split(f"line {FOLDED_ERROR_LINE}, column ")[1].split(",")[0])
    assert FOLDED.splitlines()[FOLDED_ERROR_LINE - 1][column - 1] == "}"  # just after the dangling +
    go_to = browser.driver.find_element("css selector", "#problems button")
    go_to.click()
    assert caret(browser, "policies") == (FOLDED_ERROR_LINE, column)
    browser.screenshot("defect-4-folded-error")


def test_5_a_long_value_in_the_diff_can_be_read_whole(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", IMAGE_POLICY)
    cell = js(
        browser,
        """const cell = [...document.querySelectorAll('#diff td.r')].find(td => td.textContent.includes('image:'));
        return {text: cell.textContent, width: cell.clientWidth, scroll: cell.scrollWidth,
                visible: cell.innerText};""",
    )
    assert LONG_IMAGE in cell["text"] and LONG_IMAGE in cell["visible"].replace("\n", "")
    assert cell["scroll"] <= cell["width"]  # nothing cut off: wrapped inside its cell
    browser.screenshot("defect-5-long-value")


def test_6_the_keyboard_on_the_examples_control_loads_nothing(browser: Browser, served: Playground) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.open(served.url)
    js(browser, "localStorage.clear()")
    with browser.finishes("runs"):
        set_pane(browser, "policies", "# my own work\n")
    runs = browser.counter("runs")
    control = by_id(browser, "example")
    control.send_keys(Keys.ARROW_DOWN)
    control.send_keys(Keys.ARROW_DOWN)
    js(browser, "return new Promise(r => setTimeout(r, 1500))")  # what a second and a half brings
    assert browser.counter("runs") == runs
    assert pane_text(browser, "policies") == "# my own work\n"
    browser.screenshot("defect-6-keyboard-loads-nothing")


def test_6_an_example_asks_before_it_replaces_edited_panes(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", pane_text(browser, "policies") + "# edited\n")
    edited = pane_state(browser)
    choose_example(browser, "gpu-slicing")
    browser.wait(lambda _: accept_replacement(browser, accept=False) or pane_state(browser) != edited, "a question")
    assert pane_state(browser) == edited  # "keep my panes": nothing replaced
    browser.screenshot("defect-6-asked")
    with browser.finishes("runs"):
        choose_example(browser, "gpu-slicing")
        assert accept_replacement(browser)
    assert "GpuSlicing" in pane_text(browser, "policies") or "gpu" in pane_text(browser, "policies").lower()


def test_7_at_390_pixels_the_panes_stack_and_the_diff_is_unified(browser: Browser, served: Playground) -> None:
    with browser.viewport(390, 844, mobile=True):
        load_example(browser, served, "team-label")
        assert js(browser, "return document.documentElement.scrollWidth <= window.innerWidth")
        inputs, results = box(browser, "#inputs"), box(browser, "#results")
        assert results["top"] >= inputs["bottom"] - 1 and inputs["width"] > 300 and results["width"] > 300
        results_tab = by_id(browser, "results")
        js(browser, "arguments[0].scrollIntoView()", results_tab)
        columns = js(browser, "return document.querySelector('#diff tbody tr.insert').cells.length")
        assert columns <= 3  # one column of text: the unified diff (number, text, provenance)
        inserted = js(browser, "return document.querySelector('#diff tbody tr.insert td.text').textContent")
        assert inserted.startswith("+ ") and inserted[2:].strip() == "team: payments"
        browser.screenshot("defect-7-phone")


def test_8_the_size_message_names_the_pane(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "resources", "# " + "x" * (4 * 1024 * 1024))
    problem = text_of(browser, "problems")
    assert "The Resources pane holds 4.0 MB" in problem and "3 MiB" in problem
    browser.screenshot("defect-8-size-message")


def test_9_export_says_it_downloads_a_zip_and_what_is_in_it(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    export = by_id(browser, "export")
    assert "kyverno-test.zip" in (export.get_attribute("title") or "")
    for old in browser.downloads.glob("*"):
        old.unlink()
    with browser.finishes("exports"):
        export.click()
    archive = browser.downloads / "kyverno-test.zip"
    browser.wait(lambda _: archive.is_file() and not list(browser.downloads.glob("*.crdownload")), "the download")
    with zipfile.ZipFile(archive) as opened:
        names = [n.split("/", 1)[1] for n in opened.namelist()]
    status = text_of(browser, "status")
    assert status.startswith("Exported kyverno-test.zip") and all(name in status for name in names)
    browser.screenshot("defect-9-export")


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_10_the_status_never_moves_the_page(browser: Browser, served: Playground, width: int, height: int) -> None:
    with browser.viewport(width, height, mobile=width < 800):
        browser.open(served.url)
        js(browser, "localStorage.clear()")
        before = box(browser, "main")["top"]
        with browser.finishes("runs"):
            choose_example(browser, "security-context")
        assert box(browser, "main")["top"] == before
        with browser.finishes("runs"):
            set_pane(browser, "resources", pane_text(browser, "resources") + "\n# a longer status line\n")
        assert len(text_of(browser, "status")) > 10
        assert box(browser, "main")["top"] == before
        browser.screenshot(f"defect-10-status-{width}")
