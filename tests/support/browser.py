"""Headless Chromium for tests that look at a page as a visitor does: Debian's ``chromium`` driven
by Selenium through Debian's ``chromedriver`` (``scripts/browser.sh ensure`` installs both).

Starting the browser takes about 0.5 s and quitting it about as long, so a test may start one of
its own (the ``browser`` fixture: import ``browser_fixture``)::

    from support.browser import Browser, browser_fixture  # noqa: F401

    def look(browser: Browser, url: str) -> str:
        browser.open(url, width=360, scheme="dark")
        return browser.wait_for_element("h1").text

    title = await asyncio.to_thread(look, browser, url)

Selenium blocks, so an async test calls it in a thread: the servers the page comes from may run
on the test's own event loop.

What the browser may reach: loopback only. Every request goes through a proxy on 127.0.0.1:1,
where nothing listens, except loopback addresses, which Chromium never proxies; host names are
not resolved at all (``--host-resolver-rules``); background networking, sync, component updates
and extensions are off. The viewport's width is the CSS width asked for (``Emulation.
setDeviceMetricsOverride``: ``set_window_size`` sets the outer window), the colour scheme is
emulated (``Emulation.setEmulatedMedia``), and screenshots cover the whole page.

Chromium's processes are found by a marker in their environment (the crash handlers detach
from the process tree) and none outlives the fixture: after ``quit()``, what still runs after
a deadline is killed by PID.
"""

from __future__ import annotations

import base64
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Nothing listens on port 1 (tcpmux, a privileged port nobody uses): a request sent through this
# "proxy" fails at once with ERR_PROXY_CONNECTION_FAILED. Loopback is never proxied.
DEAD_PROXY = "http://127.0.0.1:1"
ARGUMENTS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--no-pings",
    "--hide-scrollbars",
    f"--proxy-server={DEAD_PROXY}",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)
MARKER = "MONITOR_TEST_BROWSER"  # environment variable naming one browser's processes
DEFAULT_TIMEOUT = 10.0
QUIT_TIMEOUT = 10.0

Scheme = Literal["light", "dark"]
T = TypeVar("T")


class Browser:
    """One headless Chromium: open a page at a width and colour scheme, wait, read, screenshot."""

    def __init__(self, driver: webdriver.Chrome, token: str) -> None:
        self.driver = driver
        self.token = token  # the MARKER value in its processes' environment

    def open(
        self, url: str, *, width: int, height: int = 800, scheme: Scheme = "light", mobile: bool = False
    ) -> None:
        """Load ``url`` in a viewport ``width`` CSS pixels wide, ``scheme`` as the visitor's
        colour preference. ``mobile`` emulates a phone: the layout width is then the page's
        ``<meta name="viewport">`` (980 px without one), so the check below also checks that."""
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )
        self.driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        self.driver.get(url)
        inner = self.script("return window.innerWidth")
        assert inner == width, f"{url}: window.innerWidth is {inner}, not the {width} px asked for"

    def script(self, source: str, *args: Any) -> Any:
        """``execute_script``: ``source`` is a function body; ``return`` gives the value back."""
        return self.driver.execute_script(source, *args)

    def text(self) -> str:
        """What a visitor reads: the rendered text of the page (``innerText``, no hidden parts)."""
        return str(self.script("return document.body.innerText"))

    def css(self, selector: str, prop: str) -> str:
        """The computed value of ``prop`` on the first element matching ``selector``."""
        value = self.script(
            "return getComputedStyle(document.querySelector(arguments[0])).getPropertyValue(arguments[1])",
            selector,
            prop,
        )
        return str(value)

    def find_all(self, selector: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait_until(
        self,
        condition: Callable[[Browser], T | None],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        message: str = "condition",
    ) -> T:
        """``condition(self)`` until it returns something truthy (that value), or fail with an
        ``AssertionError`` naming ``message`` once ``timeout`` seconds have passed."""
        try:
            value = WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(
                lambda _driver: condition(self)
            )
            return cast(T, value)  # until() returns only a truthy value
        except TimeoutException:
            raise AssertionError(
                f"{message}: not true after {timeout:g}s at {self.driver.current_url}"
            ) from None

    def wait_for_element(
        self, selector: str, *, timeout: float = DEFAULT_TIMEOUT, visible: bool = True
    ) -> WebElement:
        """The first element matching the CSS ``selector`` (and displayed, if ``visible``)."""

        def found(browser: Browser) -> WebElement | None:
            for element in browser.find_all(selector):
                if not visible or element.is_displayed():
                    return element
            return None

        what = f"a {'visible ' if visible else ''}element {selector!r}"
        return self.wait_until(found, timeout=timeout, message=what)

    def screenshot(self, directory: Path, name: str) -> Path:
        """A PNG of the whole page (not only the viewport) as ``directory/name``; its path."""
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


def marked_processes(token: str) -> list[int]:
    """PIDs of the running processes whose environment carries ``MARKER=token``."""
    needle = f"{MARKER}={token}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


def _wait_gone(token: str, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := marked_processes(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _reap(token: str) -> None:
    """Wait for the browser's processes to end; SIGKILL, by PID, any still running after that."""
    left = _wait_gone(token, QUIT_TIMEOUT)
    for pid in left:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if left:
        still = _wait_gone(token, QUIT_TIMEOUT)
        assert not still, f"chromium processes {still} outlived SIGKILL"


@contextmanager
def chromium(*, log_dir: Path | None = None) -> Iterator[Browser]:
    """A headless Chromium (a profile of its own, deleted after), quit on exit; no process of
    it is left running. ``log_dir`` keeps chromedriver's log (``chromedriver.log``)."""
    token = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="monitor-chromium-") as home:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in (*ARGUMENTS, f"--user-data-dir={home}/profile"):
            options.add_argument(argument)
        # The crash handler's database and the caches go under the temporary directory too.
        env = {
            **os.environ,
            MARKER: token,
            "XDG_CONFIG_HOME": f"{home}/config",
            "XDG_CACHE_HOME": f"{home}/cache",
        }
        log = str(log_dir / "chromedriver.log") if log_dir is not None else os.devnull
        service = Service(CHROMEDRIVER, env=env, log_output=log)
        try:
            driver = webdriver.Chrome(service=service, options=options)
            try:
                yield Browser(driver, token)
            finally:
                driver.quit()
        finally:
            _reap(token)


@pytest.fixture(name="browser")
def browser_fixture(tmp_path: Path) -> Iterator[Browser]:
    """A headless Chromium for one test; chromedriver's log in ``tmp_path``."""
    with chromium(log_dir=tmp_path) as browser:
        yield browser
