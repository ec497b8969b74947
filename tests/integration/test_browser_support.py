"""``support.browser`` against a tiny page on 127.0.0.1: the viewport is as wide as asked, dark
mode is what the page's ``prefers-color-scheme`` rule sees, screenshots cover the whole page,
nothing but loopback is reachable, and no Chromium process outlives the browser.

Selenium blocks: each look at the page runs in a thread, while the page's server answers on the
test's event loop.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from selenium.common.exceptions import WebDriverException
from support.browser import Browser, Scheme, browser_fixture, chromium, marked_processes  # noqa: F401

pytestmark = pytest.mark.timeout(60)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>smoke</title><link rel="icon" href="data:,">
<style>
  body { margin: 0; background: rgb(255, 255, 255); color: rgb(17, 17, 17); }
  .tall { height: 2000px; }
  @media (prefers-color-scheme: dark) { body { background: rgb(16, 20, 24); color: rgb(230, 230, 230); } }
</style></head>
<body><h1>Smoke</h1><div class="tall"></div>
<script>setTimeout(() => { const p = document.createElement("p"); p.className = "late";
  p.textContent = "late"; document.body.prepend(p); }, 300);</script>
</body></html>"""


@pytest.fixture
async def page() -> AsyncIterator[tuple[str, list[str]]]:
    """The page's URL on 127.0.0.1, and the paths it was asked for."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.Response(text=PAGE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/", seen
    finally:
        await runner.cleanup()


def png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])  # IHDR, right after the signature
    return width, height


# (width, scheme, mobile, body background)
LOOKS = [
    (360, "light", True, "rgb(255, 255, 255)"),
    (360, "dark", True, "rgb(16, 20, 24)"),
    (1280, "light", False, "rgb(255, 255, 255)"),
    (1280, "dark", False, "rgb(16, 20, 24)"),
]


@pytest.mark.parametrize(
    ("width", "scheme", "mobile", "background"), LOOKS, ids=[f"{w}-{s}" for w, s, *_ in LOOKS]
)
async def test_width_and_colour_scheme(
    browser: Browser,
    page: tuple[str, list[str]],
    tmp_path: Path,
    width: int,
    scheme: Scheme,
    mobile: bool,
    background: str,
) -> None:
    url, seen = page

    def look() -> tuple[int, str, str, Path]:
        browser.open(url, width=width, scheme=scheme, mobile=mobile)  # asserts innerWidth == width
        late = browser.wait_for_element(".late").text
        shot = browser.screenshot(tmp_path, f"{width}-{scheme}.png")
        return browser.script("return window.innerWidth"), browser.css("body", "background-color"), late, shot

    inner, colour, late, shot = await asyncio.to_thread(look)
    assert (inner, colour, late) == (width, background, "late")
    assert seen == ["/"]
    shot_width, shot_height = png_size(shot)
    assert shot_width == width and shot_height >= 2000, (shot_width, shot_height)


async def test_a_missing_element_fails_naming_it(browser: Browser, page: tuple[str, list[str]]) -> None:
    def look() -> None:
        browser.open(page[0], width=1280)
        browser.wait_for_element(".never", timeout=0.5)

    with pytest.raises(AssertionError, match=r"a visible element '\.never': not true after 0\.5s"):
        await asyncio.to_thread(look)


# Addresses no test may reach: TEST-NET-1 (RFC 5737) and a reserved name (RFC 6761); were the
# guard broken, the attempt would still go nowhere.
@pytest.mark.parametrize("url", ["http://192.0.2.1/", "http://status.example.test/"])
async def test_only_loopback_is_reachable(browser: Browser, page: tuple[str, list[str]], url: str) -> None:
    def look(where: str) -> str:
        try:
            browser.open(where, width=1280)
        except WebDriverException as exc:
            return exc.msg or ""
        return "loaded"

    assert "ERR_PROXY_CONNECTION_FAILED" in await asyncio.to_thread(look, url)
    local = page[0].replace("127.0.0.1", "localhost")
    assert await asyncio.to_thread(look, local) == "loaded"
    assert page[1] == ["/"]


async def test_no_chromium_process_outlives_the_browser(page: tuple[str, list[str]]) -> None:
    def run() -> tuple[list[int], str]:
        with chromium() as browser:
            browser.open(page[0], width=1280)
            running = marked_processes(browser.token)
        return running, browser.token

    running, token = await asyncio.to_thread(run)
    assert len(running) >= 3, running  # chromedriver, the browser, a renderer at least
    assert marked_processes(token) == []
