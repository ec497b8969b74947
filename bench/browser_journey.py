"""What one browser journey costs: CPU seconds and memory of a run, as a worker runs it.

``python -m bench.browser_journey [--runs 5]`` serves a three-page shop on 127.0.0.1 (a button,
a form, a thank-you page), runs the seven-step journey of tests/integration/test_browser_journeys.py
``--runs`` times through ``BrowserCheck.execute`` on the worker's ``Chromium`` (vetting proxy in
front, loopback allowed), and prints per run: wall time, Chromium's CPU (every process of the
run, reaped: ``RUSAGE_CHILDREN``), the Playwright driver's (a Node process kept across runs), the
worker process's own, and the run's peak memory (the Pss of its processes together, as the
launcher's watchdog reads it against the cap). The first run includes the driver's start.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import resource
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from monitor.browser.chromium import Chromium
from monitor.checks import REGISTRY
from monitor.checks.base import CheckContext
from monitor.models import MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session

PAGES = {
    "/": '<!doctype html><title>Shop</title><h1>Shop</h1>'
    '<form action="/checkout"><button id="buy">Buy</button></form>',
    "/checkout": '<!doctype html><title>Checkout</title><form action="/done"><input id="email" name="email">'
    '<input id="password" name="password" type="password"><button id="pay">Pay</button></form>',
    "/done": '<!doctype html><title>Done</title><p id="message">Thank you</p>',
}  # fmt: skip
STEPS = [
    {"action": "click", "selector": "#buy"},
    {"action": "expect_url", "contains": "/checkout"},
    {"action": "fill", "selector": "#email", "value": "ann@example.com"},
    {"action": "fill", "selector": "#password", "value": "bench-pass"},
    {"action": "click", "selector": "text=Pay"},
    {"action": "expect_text", "text": "Thank you", "selector": "#message"},
    {"action": "expect_url", "contains": "/done"},
]


class Recording(Chromium):
    """The worker's Chromium, keeping each run for its figures."""

    runs: list[Any]

    @asynccontextmanager
    async def run(self, timeout: float) -> AsyncIterator[Any]:  # type: ignore[override]  # noqa: ASYNC109
        async with super().run(timeout) as run:
            self.runs.append(run)
            yield run


def cpu_of(pid: int) -> float:
    """A live process's CPU seconds (user and system) from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def driver_pid() -> int | None:
    """The Playwright driver (node) among this process's children."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = open(f"/proc/{name}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and "(node" in stat:
                return int(name)
    return None


async def main(runs: int) -> None:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGES[request.path], content_type="text/html")

    app = web.Application()
    for path in PAGES:
        app.router.add_get(path, page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    policy = AddressPolicy(["127.0.0.0/8"])
    resolver = VettedResolver(policy)
    session = make_session(resolver)
    browser = Recording(resolver)
    browser.runs = []
    check = REGISTRY.get("browser")
    stored, secrets = check.to_stored(check.Settings.model_validate({"url": url, "steps": STEPS}))
    options = check.options(stored, secrets)
    spec = MonitorSpec(id=1, name="bench", type="browser", url=url, interval_seconds=300,
                       timeout_seconds=60, confirm_after=1, paused=False, options=options)  # fmt: skip
    ctx = CheckContext(session, policy, browser=browser)
    print("run  ok  wall_s  chromium_cpu_s  driver_cpu_s  worker_cpu_s  peak_pss_mib")
    try:
        for n in range(1, runs + 1):
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            own = resource.getrusage(resource.RUSAGE_SELF)
            driver = driver_pid()
            driver_before = cpu_of(driver) if driver else 0.0
            began = time.monotonic()
            result = await check.run(spec, ctx, dt.datetime.now(dt.UTC))
            wall = time.monotonic() - began
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            own_after = resource.getrusage(resource.RUSAGE_SELF)
            driver = driver or driver_pid()
            chromium = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
            mine = own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime
            spent = (cpu_of(driver) - driver_before) if driver else 0.0
            peak = browser.runs[-1].peak_memory_mb
            print(f"{n:>3}  {'up' if result.ok else 'DOWN'}  {wall:6.2f}  {chromium:14.2f}  {spent:12.2f}  "
                  f"{mine:12.2f}  {peak:12.0f}" + ("" if result.ok else f"  {result.error}"))  # fmt: skip
    finally:
        await browser.close()
        await session.close()
        await resolver.close()
        await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
