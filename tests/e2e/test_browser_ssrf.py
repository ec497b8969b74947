"""The SSRF guard of browser checks through the real processes: a ``monitor scheduler`` and a
``monitor worker`` whose allow-list is 127.0.0.1 alone (as an operator trying it locally would
set it), and two browser monitors of pages served on 127.0.0.1:

* a page that embeds an ``<img>``, a ``<script>`` and an ``<iframe>`` of loopback canaries
  (127.0.0.2, 127.0.0.3), ``fetch()``es the metadata address and opens a WebSocket to a
  canary: the page serves its visitors, so the check is up, and each refusal is named in the
  check's ``details.refusals``;
* a page that redirects its document to a canary: the check is refused, naming it.

No canary is ever reached (listeners on 127.0.0.2 and 127.0.0.3 record every connection).
``tests/integration/test_ssrf_browser.py`` holds the full corpus against the launcher alone
(meta refresh, scripted redirects, a name that rebinds, ``*.localhost``, WebRTC).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg
import pytest
from aiohttp import web
from support import ProcessFactory, wait_for
from support.browser_run import needs_chromium

from monitor.checks import REGISTRY

pytestmark = [
    pytest.mark.e2e,
    needs_chromium,
    pytest.mark.timeout(180),
]
CANARIES = ("127.0.0.2", "127.0.0.3")
ONLY_THE_PAGE = {"MONITOR_ALLOW_CIDRS": "127.0.0.1/32"}


class Canaries:
    """TCP listeners on 127.0.0.2 and 127.0.0.3, one port; every connection recorded."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.port = 0
        self._servers: list[asyncio.Server] = []

    async def start(self) -> None:
        for host in CANARIES:
            server = await asyncio.start_server(self._accept, host, self.port)
            self.port = server.sockets[0].getsockname()[1]
            self._servers.append(server)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.hits.append(str(writer.get_extra_info("sockname")))
        writer.close()

    async def close(self) -> None:
        for server in self._servers:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()


@pytest.fixture
async def canaries() -> AsyncIterator[Canaries]:
    found = Canaries()
    await found.start()
    try:
        yield found
    finally:
        await found.close()


@pytest.fixture
async def site(canaries: Canaries) -> AsyncIterator[str]:
    port = canaries.port
    page = f"""<!doctype html><title>Embeds</title><link rel="icon" href="data:,">
<h1>Embeds</h1>
<img src="http://127.0.0.2:{port}/pixel.png" alt="">
<script src="http://127.0.0.3:{port}/tracker.js"></script>
<iframe src="http://127.0.0.2:{port}/frame" title="frame"></iframe>
<script src="/page.js"></script>"""
    script = f"""fetch("http://169.254.169.254/latest/meta-data/").catch(() => {{}});
try {{ new WebSocket("ws://127.0.0.3:{port}/socket"); }} catch (e) {{}}"""

    async def home(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    async def page_js(request: web.Request) -> web.Response:
        return web.Response(text=script, content_type="application/javascript")

    async def away(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://127.0.0.2:{port}/admin")

    app = web.Application()
    app.router.add_get("/", home)
    app.router.add_get("/page.js", page_js)
    app.router.add_get("/away", away)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_no_canary_is_reached_through_a_browser_check_and_each_refusal_is_named(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, canaries: Canaries, site: str
) -> None:
    check = REGISTRY.get("browser")
    ids = {}
    for name, url in (("embeds", f"{site}/"), ("redirected", f"{site}/away")):
        settings, _ = check.to_stored(check.Settings.model_validate({"url": url, "steps": []}))
        # Written straight to the tables: the type's 300 s minimum interval would make the test wait
        # (a timeout with room for a first run on a loaded machine: Chromium and Playwright start).
        monitor = await monitor_factory(
            name=name, type="browser", url=url, settings=settings,
            interval_seconds=20, timeout_seconds=18, confirm_after=1,
        )  # fmt: skip
        ids[name] = monitor["id"]
    await procs.start("scheduler", env=ONLY_THE_PAGE)
    await procs.start("worker", env=ONLY_THE_PAGE)

    async def first(mid: int) -> asyncpg.Record | None:
        return await db.fetchrow(
            "SELECT ok, error, details FROM checks WHERE monitor_id = $1 ORDER BY time LIMIT 1", mid
        )

    embeds = await wait_for(lambda: first(ids["embeds"]), timeout=90, message="a check of the embedding page")
    redirected = await wait_for(lambda: first(ids["redirected"]), timeout=90, message="a redirect check")

    # The page served its visitors: up, with what it tried to reach refused and named.
    assert embeds["ok"], embeds["error"]
    refusals = "\n".join(embeds["details"]["refusals"])
    for target in ("127.0.0.2", "127.0.0.3", "169.254.169.254"):
        assert f"blocked: {target}" in refusals, refusals
    # Its document went to a canary: refused, naming where.
    assert not redirected["ok"]
    assert "blocked: 127.0.0.2" in redirected["error"], redirected["error"]
    assert canaries.hits == [], canaries.hits
