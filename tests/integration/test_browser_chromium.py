"""``Chromium`` against Debian's chromium and small aiohttp servers on 127.0.0.1: a run gives a
DevTools port and Playwright pages behind the run's vetting proxy; a run that passes its memory
cap or its timeout ends with the cause a check reports; and however a run ends (normally, by
the watchdog, cancelled from outside), no process of it and no profile is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import ssl
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import trustme
from aiohttp import web
from support.browser_run import group_alive, marked, needs_chromium
from support.waiting import wait_for

from monitor.browser import BrowserFailed
from monitor.browser.chromium import Chromium, ChromiumRun
from monitor.net import AddressPolicy, VettedResolver

pytestmark = [needs_chromium, pytest.mark.timeout(90), pytest.mark.asyncio(loop_scope="module")]

PAGE = "<!doctype html><title>hello</title><link rel=icon href='data:,'><h1>hello</h1>"
# Allocates about 100 MiB every 50 ms and keeps it: past any cap within seconds.
HOG = """<!doctype html><title>hog</title><link rel=icon href='data:,'><script>
const kept = [];
setInterval(() => { const a = new Float64Array(13 * 1024 * 1024); a.fill(Math.random()); kept.push(a); }, 50);
</script>"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site() -> AsyncIterator[str]:
    """A server on 127.0.0.1: ``/`` a small page, ``/hog`` a page that eats memory, ``/hang``
    one that never answers."""

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def hog(_request: web.Request) -> web.Response:
        return web.Response(text=HOG, content_type="text/html")

    async def hang(_request: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/hog", hog)
    app.router.add_get("/hang", hang)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Chromium]:
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]))
    browser = Chromium(resolver, memory_mb=1024)
    try:
        yield browser
    finally:
        await browser.close()
        await resolver.close()


@pytest.fixture
def runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this test's runs make their folders: other processes' runs share /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def assert_gone(run: ChromiumRun) -> None:
    assert group_alive(run.pid) == [], f"processes of the run's group still alive: {group_alive(run.pid)}"
    assert marked(run.marker) == [], f"marked processes still alive: {marked(run.marker)}"


def devtools_version(port: int) -> dict[str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as answer:
        result: dict[str, str] = json.load(answer)
        return result


async def test_a_run_serves_pages_through_its_proxy_and_leaves_nothing(
    chromium: Chromium, site: str, runs_dir: Path
) -> None:
    async with chromium.run(60) as run:
        version = await asyncio.to_thread(devtools_version, run.devtools_port)
        assert "Chrome" in version["Browser"]
        page = await run.page()
        await page.goto(site + "/")
        assert await page.title() == "hello"
        # Loopback is not bypassed: 127.0.0.2 is denied by the policy, so the proxy refuses it.
        status = await page.evaluate(
            "u => fetch(u).then(r => 'fetched ' + r.status, e => 'failed')", "http://127.0.0.2:8080/x"
        )
        assert status == "failed"
        assert run.refusals == ["blocked: 127.0.0.2 (loopback 127.0.0.0/8) for http://127.0.0.2:8080/x"]
        assert run.peak_memory_mb > 0 or await wait_for(lambda: run.peak_memory_mb > 0)
    assert_gone(run)
    assert os.listdir(runs_dir) == []  # the run's folder (profile, home) is gone


def nice_levels(pgid: int) -> dict[str, int]:
    """Each thread of the group's processes and its nice level."""
    levels = {}
    for pid in group_alive(pgid):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                levels[f"{pid}/{task.name}"] = os.getpriority(os.PRIO_PROCESS, int(task.name))
    return levels


async def test_every_thread_of_the_browser_runs_niced(chromium: Chromium, site: str) -> None:
    """Chromium raises its UI threads' priority where it may (nice -8 as root): it may not."""
    floor = os.getpriority(os.PRIO_PROCESS, 0) + chromium.nice
    async with chromium.run(60) as run:
        page = await run.page()
        await page.goto(site + "/")
        levels = await asyncio.to_thread(nice_levels, run.pid)
    assert levels and {thread: level for thread, level in levels.items() if level < floor} == {}


async def test_the_browser_inherits_no_secret_of_the_worker(
    chromium: Chromium, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONITOR_SECRET_KEY", "not-for-the-browser")
    async with chromium.run(60) as run:
        environ = await asyncio.to_thread(Path(f"/proc/{run.pid}/environ").read_bytes)
    env = dict(item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item)
    assert b"not-for-the-browser" not in environ
    assert not [name for name in env if name.startswith(b"MONITOR_") and name != b"MONITOR_BROWSER_RUN"]
    assert b"/monitor-browser-" in env[b"HOME"]  # the run's throwaway folder, removed with it


async def test_a_browser_that_cannot_start_says_so(runs_dir: Path) -> None:
    resolver = VettedResolver(AddressPolicy([]))
    missing = Chromium(resolver, executable="/nonexistent/chromium")
    with pytest.raises(
        BrowserFailed, match=r"^cannot start /nonexistent/chromium: No such file or directory$"
    ):
        async with missing.run(30):
            raise AssertionError("unreachable")
    broken = Chromium(resolver, executable="/bin/false")
    with pytest.raises(BrowserFailed, match=r"^chromium exited with status 1 at start$"):
        async with broken.run(30):
            raise AssertionError("unreachable")
    assert os.listdir(runs_dir) == []  # the run's folder (profile, home) is gone
    await resolver.close()


async def test_two_runs_at_once_are_apart(chromium: Chromium, site: str) -> None:
    """A worker runs two checks at once on one Chromium object: two browsers, two proxies."""

    async def one(path: str) -> tuple[ChromiumRun, str, list[str]]:
        async with chromium.run(60) as run:
            page = await run.page()
            await page.goto(site + "/")
            await page.evaluate("u => fetch(u).catch(() => null)", f"http://127.0.0.2:8080{path}")
            await wait_for(lambda: run.refusals)
            return run, await page.title(), list(run.refusals)

    (first, title1, refused1), (second, title2, refused2) = await asyncio.gather(one("/a"), one("/b"))
    assert first.pid != second.pid and first.devtools_port != second.devtools_port
    assert (title1, title2) == ("hello", "hello")
    assert refused1 == ["blocked: 127.0.0.2 (loopback 127.0.0.0/8) for http://127.0.0.2:8080/a"]
    assert refused2 == ["blocked: 127.0.0.2 (loopback 127.0.0.0/8) for http://127.0.0.2:8080/b"]
    assert_gone(first)
    assert_gone(second)


async def test_an_https_page_comes_through_the_tunnel() -> None:
    """https is what most monitored sites serve: CONNECT, then TLS end to end."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]))
    # The test's CA is not in Chromium's store; the tunnel and the handshake are what is tested.
    trusting = Chromium(resolver, flags=["--ignore-certificate-errors"])
    try:
        async with trusting.run(60) as run:
            page_ = await run.page()
            await page_.goto(f"https://127.0.0.1:{runner.addresses[0][1]}/")
            assert await page_.title() == "hello"
            assert run.refusals == []
    finally:
        await trusting.close()
        await resolver.close()
        await runner.cleanup()


async def test_a_run_past_its_timeout_is_cut_off(chromium: Chromium, site: str) -> None:
    started = time.monotonic()
    with pytest.raises(BrowserFailed, match=r"^browser run cut off after 2 s$"):
        async with chromium.run(2) as run:
            page = await run.page()
            await page.goto(site + "/hang", timeout=60_000)
    assert time.monotonic() - started < 10
    assert_gone(run)


async def test_a_run_past_its_memory_cap_is_killed(site: str) -> None:
    resolver = VettedResolver(AddressPolicy(["127.0.0.1/32"]))
    hungry = Chromium(resolver, memory_mb=700)
    try:
        with pytest.raises(BrowserFailed, match=r"^browser used more than 700 MiB$"):
            async with hungry.run(60) as run:
                page = await run.page()
                await page.goto(site + "/hog")
                await asyncio.sleep(60)  # the watchdog cuts this short
        assert_gone(run)
        assert run.peak_memory_mb > 700
    finally:
        await hungry.close()
        await resolver.close()


async def test_a_run_cancelled_from_outside_leaves_nothing(
    chromium: Chromium, site: str, runs_dir: Path
) -> None:
    started: asyncio.Future[ChromiumRun] = asyncio.get_running_loop().create_future()

    async def check() -> None:
        async with chromium.run(60) as run:
            page = await run.page()
            await page.goto(site + "/")
            started.set_result(run)
            await asyncio.sleep(3600)

    task = asyncio.ensure_future(check())
    run = await asyncio.wait_for(asyncio.shield(started), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_gone(run)
    assert os.listdir(runs_dir) == []  # the run's folder (profile, home) is gone


OWNER = """
import asyncio
from monitor.net import AddressPolicy, VettedResolver
from monitor.browser.chromium import Chromium

async def main():
    async with Chromium(VettedResolver(AddressPolicy([]))).run(60) as run:
        await (await run.page()).set_content("<h1>x</h1>")
        print(run.pid, run.marker, flush=True)
        await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_a_worker_killed_takes_its_browser_with_it() -> None:
    """SIGKILL leaves the run no cleanup: the kernel's death signal ends the browser, and its
    children (crash handlers in groups of their own included) end with it."""
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, stdout=asyncio.subprocess.PIPE, start_new_session=True
    )
    try:
        async with asyncio.timeout(30):
            line = (await owner.stdout.readline()).decode()  # type: ignore[union-attr]
        pid_text, marker = line.split()
        assert marked(marker), "the run's processes carry its marker"
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        await owner.wait()
    await wait_for(lambda: not marked(marker) and not group_alive(int(pid_text)), timeout=10)
