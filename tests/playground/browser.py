"""The system's headless Chromium, driven through its chromedriver (Debian's ``chromium`` and
``chromium-driver``, which ``.ci/run`` installs), at 1280×800 (or another size), for the playground's
and the documentation site's browser tests.

Never a browser a test tool downloads (the network is closed to that). Every wait is on the page's
state — ``data-ready``, and the counters the page bumps when a run, an evaluation or an export has
finished (``data-runs``…) — never a sleep. Screenshots go to ``test-artifacts/<area>/`` (or
``$CELMUT_TEST_ARTIFACTS/<area>``): ``playground`` by default.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1280, 800
WAIT_SECONDS = 90  # a generous bound for a loaded CI machine; the waits end as soon as the state is there
ROOT = Path(__file__).resolve().parents[2]
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
)  # fmt: skip


def missing() -> str:
    """Why the browser tests cannot run here ('' when they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra has it)"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} not found: apt-get install {package} (.ci/run does)"
    return ""


def requires_browser() -> Any:
    """The mark of a browser test module: skipped, saying why, where no browser is installed."""
    import pytest

    return pytest.mark.skipif(bool(missing()), reason=f"no browser for the playground's browser tests: {missing()}")


def artifacts(area: str = "playground") -> Path:
    base = Path(os.environ.get("CELMUT_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    directory = base / area
    directory.mkdir(parents=True, exist_ok=True)
    return directory


class Browser:
    """One Chromium with a fresh profile, and the waits the tests use."""

    def __init__(self, driver: Any, downloads: Path, area: str = "playground") -> None:
        self.driver = driver
        self.downloads = downloads
        self.area = area

    def wait(self, condition: Callable[[Any], Any], what: str) -> Any:
        """Poll ``condition`` until truthy; an element the page re-rendered between finding it and
        reading it (a search's results, a pane's lines) is found again at the next poll."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(
            self.driver, WAIT_SECONDS, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
        ).until(condition, message=what)

    def counter(self, name: str) -> int:
        return int(self.driver.execute_script(f"return document.body.dataset.{name} || '0'"))

    @contextmanager
    def finishes(self, name: str) -> Iterator[None]:
        """Wait, after the block, until the page has finished one more ``name`` (runs, evals, exports)."""
        before = self.counter(name)
        yield
        self.wait(lambda _: self.counter(name) > before, f"the page to finish a {name[:-1]}")

    def open(self, url: str) -> None:
        self.driver.get(url)
        self.wait(lambda d: d.execute_script("return document.body.dataset.ready") == "true", "the page to start")

    def screenshot(self, name: str) -> Path:
        path = artifacts(self.area) / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def resize(self, width: int, height: int, *, mobile: bool = False) -> None:
        """The viewport the page lays itself out for (a phone: ``mobile``, 3x pixels as most are)."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 3 if mobile else 1, "mobile": mobile}
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)

    @contextmanager
    def viewport(self, width: int, height: int, *, mobile: bool = False) -> Iterator[None]:
        """The page at another size for the block, then at 1280×800 again."""
        self.resize(width, height, mobile=mobile)
        try:
            yield
        finally:
            self.resize(WIDTH, HEIGHT)

    def emulate_dark(self, dark: bool) -> None:
        """The system's colour scheme as the page sees it (``prefers-color-scheme``)."""
        features = [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})


@contextmanager
def chromium(width: int = WIDTH, height: int = HEIGHT, area: str = "playground") -> Iterator[Browser]:
    """A browser whose viewport is ``width``×``height`` (a phone's when narrow: touch and mobile
    emulation on), saving its screenshots under ``area``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = Path(tempfile.mkdtemp(prefix="celmut-chromium-"))
    downloads = profile / "downloads"
    downloads.mkdir()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile / 'profile'}"):
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        mobile = width < 600
        opened = Browser(driver, downloads, area)
        opened.resize(width, height, mobile=mobile)
        if mobile:
            driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True})
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        yield opened
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
