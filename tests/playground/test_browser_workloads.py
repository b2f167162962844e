"""Whole workloads and the live cluster in a real browser: a Deployment of 10 replicas under the 40 %
spot preset, run as its pods, says "4 of 10 on spot" and why each pod went where it went; the page
connected to a (fake) cluster says so, loads a namespace's pods from it and writes nothing.
Screenshots of each state among the test artefacts."""

from __future__ import annotations

import re
from pathlib import Path

from tests.playground.browser import Browser, requires_browser
from tests.playground.live_support import LiveCluster
from tests.playground.page import by_id, changed_rows, js, load_example, pane_text, set_pane, text_of
from tests.playground.support import Playground

TEAM_LABEL = Path(__file__).resolve().parents[2] / "policies" / "examples" / "add-managed-by-label.yaml"
pytestmark = requires_browser()


def test_a_deployment_of_10_runs_as_its_pods_4_of_10_on_spot_each_with_its_reason(
    browser: Browser, served: Playground
) -> None:
    load_example(browser, served, "spot-partial-workload")
    assert text_of(browser, "verdict") == "Deployment shop/web: no policy changed it"  # what a webhook never sees
    offer = by_id(browser, "run-pods")
    assert offer.is_displayed() and offer.text == "Run as its 10 pods"
    browser.screenshot("workload-offered")
    with browser.finishes("workloads"):
        offer.click()
    summary = text_of(browser, "pods-summary")
    assert re.fullmatch(
        r"Deployment shop/web \(through ReplicaSet shop/web-\w+\): 4 of 10 on spot, 6 on-demand", summary
    )
    rows = js(
        browser,
        "return [...document.querySelectorAll('#pods tbody tr')].map(tr => [...tr.cells].map(c => c.textContent))",
    )
    assert len(rows) == 10 and [r[2] for r in rows].count("spot") == 4
    assert rows[0][3] == "spot-partial: 40 % on spot: no pod before it; 1 × 40 % = 0.4, rounded down 0: on-demand"
    assert (
        rows[2][3]
        == "spot-partial: 40 % on spot: 0 of the 2 pods before it on spot; 3 × 40 % = 1.2, rounded down 1: spot"
    )
    assert all(re.fullmatch(r"web-\w+-[a-z0-9]{5}", r[1]) for r in rows)
    browser.screenshot("workload-pods")
    browser.driver.find_elements("css selector", "#pods tbody button")[2].click()  # the third pod: its diff
    assert by_id(browser, "view-diff").is_displayed()
    assert text_of(browser, "verdict").startswith(f"Pod shop/{rows[2][1]}: ")
    changed = js(
        browser,
        "return [...document.querySelectorAll('#diff tbody tr:not(.equal) td.r')].map(td => td.textContent.trim())",
    )
    assert "celmut.io/placement: spot" in changed
    browser.screenshot("workload-pod-diff")
    with browser.viewport(390, 844, mobile=True):  # the phone: the pods table fits, nothing scrolls sideways
        by_id(browser, "tab-pods").click()
        assert js(browser, "return document.documentElement.scrollWidth <= window.innerWidth")
        js(browser, "document.getElementById('pods-summary').scrollIntoView()")
        browser.screenshot("workload-pods-phone")


def test_the_page_connected_to_a_cluster_loads_a_namespace_s_pods_and_writes_nothing(
    browser: Browser, live: LiveCluster
) -> None:
    from selenium.webdriver.support.ui import Select

    browser.open(live.served.url)
    js(browser, "localStorage.clear()")
    browser.wait(lambda _: by_id(browser, "connection").is_displayed(), "the connection badge")
    assert text_of(browser, "connection") == "Connected to fakekube (read-only)"
    with browser.finishes("runs"):  # labels each pod with its namespace's team: read from the cluster
        set_pane(browser, "policies", TEAM_LABEL.read_text())
    by_id(browser, "tab-resources").click()
    assert by_id(browser, "live").is_displayed()
    with browser.finishes("listings"):
        Select(by_id(browser, "live-namespace")).select_by_value("shop")
    options = [o.text for o in Select(by_id(browser, "live-name")).options]
    assert options == ["all 2 Pods", "web-1", "web-2"]
    with browser.finishes("runs"):
        by_id(browser, "live-load").click()
    resources = pane_text(browser, "resources")
    assert "name: web-1" in resources and "name: web-2" in resources and "resourceVersion" not in resources
    chips = js(browser, "return [...document.querySelectorAll('#objects [role=tab]')].map(b => b.textContent)")
    assert chips == ["Pod shop/web-1", "Pod shop/web-2"]
    assert ("team: payments", "set by add-team-label spec.mutations[0]") in changed_rows(browser)
    browser.screenshot("live-cluster-loaded")
    assert {r.method for r in live.server.requests} == {"GET"}  # listed and read: nothing written
