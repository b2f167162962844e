"""The editor in a real browser: CEL completion inside an expression field (the variables in scope, the
policy's variables, the resource's fields from its schema, the environment's functions with their
signatures), CEL highlighting, and a syntax error's gutter mark, underline and hover text on the right
line of a folded expression. Screenshots of each state among the test artefacts."""

from __future__ import annotations

from tests.playground.browser import Browser, requires_browser
from tests.playground.page import (
    box,
    completions,
    js,
    line_of_text,
    load_example,
    set_pane,
    text_of,
    type_at_end_of_line,
)
from tests.playground.support import Playground
from tests.playground.test_browser_defects import FOLDED, FOLDED_ERROR_LINE

pytestmark = requires_browser()

POLICY = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: complete-me}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [pods]
  variables:
    - name: team
      expression: namespaceObject.metadata.name
    - name: tier
      expression: "'web'"
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: |
          [JSONPatch{op: "add", path: "/metadata/labels/x", value: variables.team}]
"""


def close_completions(browser: Browser) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser.driver).send_keys(Keys.ESCAPE).perform()


def test_typing_in_an_expression_completes_from_the_schema_the_policy_and_the_environment(
    browser: Browser, served: Playground
) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", POLICY)
    line = line_of_text(browser, "policies", "[JSONPatch{op:")
    cases = [
        # (typed after the mutation's expression, a label offered, its detail)
        (" + object.spec.cont", "containers", "array"),  # the Pod's schema: the policy matches pods
        (" + object.metadata.name.sta", "startsWith", "string.startsWith(string) -> bool"),  # a string's methods
        (" + variables.t", "tier", "variable"),  # the policy's own variables
        (" + math.gre", "greatest", "math.greatest(int) -> int"),  # the environment's functions
        (" + namespaceObj", "namespaceObject", "dyn"),  # the variables in scope
        (" + namespaceObject.metadata.lab", "labels", "map"),  # the Namespace's schema
    ]
    for typed, label, detail in cases:
        set_pane(browser, "policies", POLICY)
        type_at_end_of_line(browser, "policies", line, typed)
        offered = completions(browser)
        assert (label, detail) in offered, (typed, offered[:12])
        if label == "startsWith":
            assert all(d.startswith(("string.", "dyn.")) or d in ("macro", "") for _, d in offered), offered
            browser.screenshot("editor-completion-methods")
        if label == "containers":
            browser.screenshot("editor-completion-schema")
        close_completions(browser)
    type_at_end_of_line(browser, "policies", line_of_text(browser, "policies", "namespaceObject.metadata.lab"), "e")
    completions(browser)
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    js(browser, "return new Promise(r => setTimeout(r, 300))")  # past the list's guard against a stray Enter
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()  # accepted: the field is written out
    assert "namespaceObject.metadata.labels" in js(
        browser, "return document.getElementById('policies').cmView.state.doc.toString()"
    )


def test_cel_is_highlighted_inside_expression_fields_only(browser: Browser, served: Playground) -> None:
    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", POLICY)
    highlighted = js(
        browser,
        """return [...document.querySelectorAll(`#policies .cm-cel-variable, #policies .cm-cel-function,
            #policies .cm-cel-string`)].map(e => e.className.match(/cm-cel-\\w+/)[0] + ' ' + e.textContent);""",
    )
    assert "cm-cel-variable namespaceObject" in highlighted and "cm-cel-variable variables" in highlighted
    assert 'cm-cel-string "add"' in highlighted
    keys = js(browser, "return [...document.querySelectorAll('#policies .cm-yaml-key')].map(e => e.textContent)")
    assert "expression" in keys and "namespaceObject" not in keys  # the YAML around it stays YAML
    assert not js(
        browser,
        "return [...document.querySelectorAll('#policies .cm-cel')].some(e => e.textContent.includes('name: team'))",
    )
    browser.screenshot("editor-cel-highlighting")


def test_a_syntax_error_s_gutter_mark_is_on_its_line_of_a_folded_expression(
    browser: Browser, served: Playground
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    load_example(browser, served, "team-label")
    with browser.finishes("runs"):
        set_pane(browser, "policies", FOLDED)
    assert f"policies, line {FOLDED_ERROR_LINE}," in text_of(browser, "problems")
    browser.wait(
        lambda _: js(browser, "return !!document.querySelector('#policies .cm-lint-marker-error')"), "the mark"
    )
    js(browser, "document.querySelector('#policies .cm-lint-marker-error').scrollIntoView({block: 'center'})")
    marker = box(browser, "#policies .cm-lint-marker-error")
    line_text = FOLDED.splitlines()[FOLDED_ERROR_LINE - 1].strip()
    line_top = js(
        browser,
        """const line = [...document.querySelectorAll('#policies .cm-line')].find(l => l.textContent.trim() === arguments[0]);
        return line.getBoundingClientRect().top;""",
        line_text,
    )
    assert abs(marker["top"] - line_top) < 6, (marker, line_top)  # the mark beside the line of the error
    underlined = js(
        browser, "return [...document.querySelectorAll('#policies .cm-lintRange-error')].map(e => e.textContent)"
    )
    assert underlined == ["}"]  # the token CEL stopped at
    ActionChains(browser.driver).move_to_element(
        browser.driver.find_element("css selector", "#policies .cm-lintRange-error")
    ).perform()
    browser.wait(lambda _: js(browser, "return !!document.querySelector('.cm-tooltip-lint')"), "the hover text")
    assert "Syntax error" in js(browser, "return document.querySelector('.cm-tooltip-lint').textContent")
    browser.screenshot("editor-folded-error-gutter")
