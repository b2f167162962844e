"""Sessions in a real browser: the panes kept in this browser and restored after a reload, files added
to a pane (uploaded, or dropped on it), the searchable catalog of examples, policies and presets, and
dark mode following the system. Screenshots of each state among the test artefacts."""

from __future__ import annotations

from pathlib import Path

from tests.playground.browser import Browser, requires_browser
from tests.playground.page import (
    accept_replacement,
    by_id,
    choose_example,
    js,
    load_example,
    pane_state,
    pane_text,
    set_pane,
    text_of,
)
from tests.playground.support import Playground

pytestmark = requires_browser()

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {mode: fast}\n"


def test_a_session_is_restored_after_a_reload(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "security-context")
    with browser.finishes("runs"):
        set_pane(browser, "policies", pane_text(browser, "policies") + "# my change\n")
        js(browser, "document.getElementById('operation').value = 'UPDATE'")
    browser.wait(lambda _: js(browser, "return document.body.dataset.saved"), "the session to be kept")
    edited = pane_state(browser)
    browser.open(served.url)  # a reload: the panes start empty, the last session is offered
    assert pane_text(browser, "policies") == "" and by_id(browser, "restore").is_displayed()
    assert "Policies, Resources" in text_of(browser, "restore-text")
    browser.screenshot("session-offered")
    with browser.finishes("runs"):
        by_id(browser, "restore-yes").click()
    restored = pane_state(browser)
    assert restored == {**edited, "operation": restored["operation"]} and pane_text(browser, "policies").endswith(
        "# my change\n"
    )
    assert not by_id(browser, "restore").is_displayed()
    browser.screenshot("session-restored")


def test_files_are_added_to_a_pane_by_upload_or_by_dropping_them(
    browser: Browser, served: Playground, tmp_path: Path
) -> None:
    load_example(browser, served, "team-label")
    by_id(browser, "tab-cluster").click()
    before = pane_text(browser, "cluster")
    upload = tmp_path / "configmap.yaml"
    upload.write_text(CONFIGMAP)
    with browser.finishes("files"):
        by_id(browser, "upload").send_keys(str(upload))
    assert pane_text(browser, "cluster") == before + ("" if before.endswith("\n") else "\n") + "---\n" + CONFIGMAP
    assert "Added configmap.yaml to the Cluster pane" in text_of(browser, "status")
    by_id(browser, "tab-resources").click()
    with browser.finishes("files"):  # a file dropped on the pane, as the browser delivers it
        js(
            browser,
            """const data = new DataTransfer();
            data.items.add(new File([arguments[0]], 'dropped.yaml', {type: 'text/yaml'}));
            const target = document.querySelector('#resources .cm-content');
            target.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, bubbles: true, cancelable: true}));
            target.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));""",
            CONFIGMAP.replace("settings", "dropped"),
        )
    assert pane_text(browser, "resources").endswith("---\n" + CONFIGMAP.replace("settings", "dropped"))
    browser.wait(lambda _: "ConfigMap shop/dropped" in text_of(browser, "objects"), "the dropped object to run")
    browser.screenshot("files-added")


def test_the_catalog_is_searchable_and_a_preset_fills_the_policies_pane(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    resources = pane_text(browser, "resources")
    by_id(browser, "example").click()
    search = by_id(browser, "catalog-search")
    assert js(browser, "return document.activeElement.id") == "catalog-search"
    search.send_keys("spot partial")
    titles = js(browser, "return [...document.querySelectorAll('#catalog-list .entry .title')].map(e => e.textContent)")
    assert titles and all("spot" in t.lower() and "partial" in t.lower() for t in titles), titles
    groups = js(browser, "return [...document.querySelectorAll('#catalog-list h3')].map(e => e.textContent)")
    assert groups == ["Examples", "Policies", "Presets"]
    browser.screenshot("catalog-search")
    search.clear()
    search.send_keys("GPU slicing preset")
    with browser.finishes("runs"):
        browser.driver.find_element("css selector", '#catalog [data-entry="file:presets/gpu-slicing.yaml"]').click()
        accept_replacement(browser)  # the example's policies were not edited: no question
    assert "kind: GpuSlicing" in pane_text(browser, "policies") and pane_text(browser, "resources") == resources


def test_dark_mode_follows_the_system(browser: Browser, served: Playground) -> None:
    def luminance(selector: str) -> float:
        rgb = js(browser, "return getComputedStyle(document.querySelector(arguments[0])).backgroundColor", selector)
        red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    load_example(browser, served, "team-label")
    assert luminance("body") > 200 and luminance("#policies .cm-editor") > 200
    browser.emulate_dark(True)
    try:
        assert (
            luminance("body") < 60 and luminance("#policies .cm-editor") < 60 and luminance("#diff tr.insert td.r") < 90
        )
        browser.screenshot("dark-mode")
    finally:
        browser.emulate_dark(False)
    assert luminance("body") > 200


def test_a_shared_link_is_not_replaced_by_the_saved_session(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", pane_text(browser, "policies") + "# kept in the browser\n")
    browser.wait(lambda _: js(browser, "return document.body.dataset.saved"), "the session to be kept")
    with browser.finishes("runs"):
        choose_example(browser, "gpu-slicing")
        accept_replacement(browser)
    with browser.finishes("shares"):
        by_id(browser, "share").click()
    link = browser.driver.current_url
    browser.driver.get("about:blank")
    browser.open(link)  # a fresh page: it runs the link's state once
    browser.wait(lambda _: browser.counter("runs") >= 1, "the link's state to run")
    assert "GpuSlicing" in pane_text(browser, "policies") or "gpu" in pane_text(browser, "policies").lower()
    assert not by_id(browser, "restore").is_displayed()  # the link's state is what is shown
