"""What the browser tests do on the page and read back from it: set a pane, pick an example, read the
diff, where the caret is. Each goes through what a person uses (the catalog, the panes) or reads
what a person sees; none calls into the page's own logic."""

from __future__ import annotations

from typing import Any

from tests.playground.browser import Browser
from tests.playground.support import Playground

PANES = ("policies", "resources", "cluster", "context", "userInfo", "oldObjects")


def js(browser: Browser, script: str, *args: Any) -> Any:
    return browser.driver.execute_script(script, *args)


def by_id(browser: Browser, element: str) -> Any:
    from selenium.webdriver.common.by import By

    return browser.driver.find_element(By.ID, element)


def text_of(browser: Browser, element: str) -> str:
    return str(by_id(browser, element).text)


# A pane is a CodeMirror editor (its view on the pane's element) or, before it starts, a textarea.
_PANE_VIEW = """const pane = document.getElementById(arguments[0]);
const view = pane && pane.cmView ? pane.cmView : null;"""


def set_pane(browser: Browser, pane: str, text: str) -> None:
    """Replace a pane's text as a paste would (the page reacts as to typing)."""
    js(
        browser,
        _PANE_VIEW
        + """
        if (view) view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: arguments[1]},
                                 userEvent: "input.paste"});
        else { pane.value = arguments[1]; pane.dispatchEvent(new Event('input')); }""",
        pane,
        text,
    )


def type_into(browser: Browser, pane: str, text: str, *, at_end: bool = False) -> None:
    """Type into a pane's editor as a person does (text arrives as typed input, not as a paste);
    ``at_end``: after what is there."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    content = browser.driver.find_element("css selector", f"#{pane} .cm-content")
    content.click()
    if at_end:
        ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys(Keys.END).key_up(Keys.CONTROL).perform()
    browser.driver.execute_cdp_cmd("Input.insertText", {"text": text})


def type_at_end_of_line(browser: Browser, pane: str, line: int, text: str) -> None:
    """Put the caret at the end of a line of a pane (as a click there does) and type ``text``."""
    js(
        browser,
        _PANE_VIEW
        + """const at = view.state.doc.line(arguments[1]).to;
        view.dispatch({selection: {anchor: at}}); view.focus();""",
        pane,
        line,
    )
    browser.driver.execute_cdp_cmd("Input.insertText", {"text": text})


def completions(browser: Browser) -> list[tuple[str, str]]:
    """The completion list the editor shows: (label, detail) of each option, once it is open."""
    browser.wait(lambda _: js(browser, "return !!document.querySelector('.cm-tooltip-autocomplete li')"), "completions")
    rows = js(
        browser,
        """return [...document.querySelectorAll('.cm-tooltip-autocomplete li')].map(li => [
            li.querySelector('.cm-completionLabel').textContent,
            (li.querySelector('.cm-completionDetail') || {textContent: ''}).textContent]);""",
    )
    return [(str(label), str(detail)) for label, detail in rows]


def line_of_text(browser: Browser, pane: str, needle: str) -> int:
    """The 1-based line of a pane holding ``needle``."""
    return int(
        js(
            browser,
            _PANE_VIEW + "return view.state.doc.toString().split('\\n').findIndex(l => l.includes(arguments[1])) + 1;",
            pane,
            needle,
        )
    )


def pane_text(browser: Browser, pane: str) -> str:
    return str(js(browser, _PANE_VIEW + "return view ? view.state.doc.toString() : pane.value;", pane))


def pane_state(browser: Browser) -> dict[str, str]:
    state = {pane: pane_text(browser, pane) for pane in PANES}
    state["operation"] = str(js(browser, "return document.getElementById('operation').value"))
    return state


def caret(browser: Browser, pane: str) -> tuple[int, int]:
    """The 1-based line and column of the caret in a pane."""
    line, column = js(
        browser,
        _PANE_VIEW
        + """
        if (view) { const head = view.state.selection.main.head; const line = view.state.doc.lineAt(head);
                    return [line.number, head - line.from + 1]; }
        const before = pane.value.slice(0, pane.selectionStart).split('\\n');
        return [before.length, before[before.length - 1].length + 1];""",
        pane,
    )
    return int(line), int(column)


def changed_rows(browser: Browser) -> list[tuple[str, str]]:
    """(the after side's text, its provenance title) of every changed line of the diff."""
    rows = js(
        browser,
        """return [...document.querySelectorAll('#diff tbody tr:not(.equal)')]
        .filter(tr => tr.querySelector('td.r'))
        .map(tr => [tr.querySelector('td.r').textContent.trim(), tr.title]);""",
    )
    return [tuple(row) for row in rows]


def choose_example(browser: Browser, example: str) -> None:
    """Pick an example as a person does: the catalog (or, on a page without one, the Examples menu)."""
    from selenium.webdriver.support.ui import Select

    control = by_id(browser, "example")
    if control.tag_name == "select":
        Select(control).select_by_value(example)
        return
    control.click()
    browser.wait(lambda _: by_id(browser, "catalog").is_displayed(), "the catalog to open")
    entry = browser.driver.find_element("css selector", f'#catalog [data-entry="example:{example}"]')
    entry.click()


def accept_replacement(browser: Browser, accept: bool = True) -> bool:
    """Answer the page's question before an example replaces edited panes; False when it asked none."""
    found = browser.driver.find_elements("css selector", "#confirm-replace[open]")
    if not found:
        return False
    by_id(browser, "confirm-replace-yes" if accept else "confirm-replace-no").click()
    return True


def load_example(browser: Browser, served: Playground, example: str) -> None:
    """A fresh page with ``example`` loaded and run."""
    browser.open(served.url)
    js(browser, "localStorage.clear()")  # no earlier session offered
    with browser.finishes("runs"):
        choose_example(browser, example)


def box(browser: Browser, selector: str) -> dict[str, float]:
    return js(
        browser,
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height};",
        selector,
    )
