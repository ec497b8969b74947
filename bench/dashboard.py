"""Dashboard benchmark (issue 29): the overview at 10,000 monitors, served by the real api.

    python -m bench.dashboard [--monitors 10000] [--requests 200] [--browser N] [--json PATH]
                              [--wait-quiet SECONDS]

The database ``monitor_bench_dashboard`` (Redis db 11) is emptied and loaded by SQL
(bench/api_data.py): one account of ``--monitors`` monitors (one in a hundred down, tags
``team-0``..``team-9``) with state rows and a day of hourly rollups, so every row of a page has
its 24 h uptime and sparkline; monitor 1 has 90 days of rollups besides. An editor signs in
through the dashboard's own form (bench/signin.py's users). The real ``python -m monitor api``
runs pinned to core 0, this harness on core 1; one request at a time on one keep-alive
connection, ``--requests`` of each after a warm-up:

* ``first_page``: ``GET /`` (the whole page: counts, 50 rows with uptime and sparklines);
* ``search``: ``GET /?q=bench-999`` (name or URL substring over all monitors: 11 match);
* ``filtered``: ``GET /?state=up&tag=team-3&sort=name`` (a page of a filtered, sorted list);
* ``poll_unchanged``: the list's part with the ETag just read (``If-None-Match``): the 304
  the live view gets every 2 s while nothing moves;
* ``chart_90d_page``: the monitor page's chart over 90 days (``GET /monitors/1/chart.json?range=90d``,
  ``domain/charts.response_times``: what the page's chart draws);
* ``chart_90d_hourly`` / ``chart_90d_daily``: monitor 1's response times over 90 days from the
  rollups (``GET /api/v1/monitors/1/stats?bucket=1h|1d``, ``domain/history.stats``).

With ``--browser N``: Debian's headless Chromium (tests/support/browser.py) opens ``/`` N times
with the session's cookie, and ``time_to_interactive`` is ``performance.timing.domInteractive -
navigationStart`` of each load (target < 1 s).

Latencies are client wall time (sent to body read), nearest-rank percentiles. Targets (issue
29): first page p95 < 200 ms, search < 300 ms, 90-day chart < 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from bench import api_data, database, proc, process
from bench.api import _started, api_env, code_version, rfc3339, summary_ms, wait_quiet
from bench.nginx import free_port
from bench.signin import PASSWORD, make_users
from monitor.domain.session_ids import COOKIE

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
BENCH_DB = "monitor_bench_dashboard"
BENCH_REDIS_DB = 11
TARGETS_MS = {"first_page": 200.0, "time_to_interactive": 1000.0, "search": 300.0, "filtered": 300.0,
              "chart_90d_page": 300.0, "chart_90d_hourly": 300.0, "chart_90d_daily": 300.0}  # fmt: skip
SEARCH = "bench-999"
# Monitor 1's 89 days before the day every monitor has, from the day's own rows, shifted.
HISTORY = """
INSERT INTO checks_hourly
    (monitor_id, hour, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
SELECT 1, h.hour - make_interval(days => d), h.checks, h.checks_up, h.latency_n, h.latency_sum,
       h.latency_max, h.latency_hist
FROM checks_hourly h, generate_series(1, 89) d
WHERE h.monitor_id = 1 AND h.hour < $1::timestamptz - interval '1 hour'
ON CONFLICT DO NOTHING"""


async def load(urls: database.Urls, monitors: int) -> tuple[api_data.Loaded, str]:
    loaded = await api_data.load(
        urls.database, monitors=monitors, days=1, incidents=0, raw_edges=False, jobs=2, order="monitor",
        seed=1,
    )  # fmt: skip
    conn = await asyncpg.connect(urls.database)
    try:
        await conn.execute(HISTORY, loaded.now)
        born = loaded.now - timedelta(days=92)
        await conn.execute("UPDATE monitors SET created_at = $1 WHERE id = 1", born)
        await conn.execute("ANALYZE checks_hourly")
    finally:
        await conn.close()
    emails = await make_users(urls.database, loaded.account_id, 1)
    return loaded, emails[0]


class Browser:
    """A signed-in person's connection: the session cookie carried by hand (it is ``Secure``)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cookie = ""
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60), trust_env=False
        )

    async def sign_in(self, email: str) -> None:
        form = {"email": email, "password": PASSWORD}
        async with self.session.post(self.base_url + "/signin", data=form, allow_redirects=False) as r:
            await r.read()
            if r.status != 303 or COOKIE not in r.cookies:
                raise RuntimeError(f"sign-in failed: {r.status}")
            self.cookie = f"{COOKIE}={r.cookies[COOKIE].value}"

    async def get(
        self, path: str, headers: dict[str, str] | None = None, expect: tuple[int, ...] = (200,)
    ) -> tuple[float, Any]:
        started = time.perf_counter()
        async with self.session.get(
            self.base_url + path, headers={"Cookie": self.cookie, **(headers or {})}, allow_redirects=False
        ) as r:
            body = await r.read()
        elapsed = time.perf_counter() - started
        if r.status not in expect:
            raise RuntimeError(f"GET {path} -> {r.status}: {body[:300]!r}")
        return elapsed, r

    async def close(self) -> None:
        await self.session.close()


async def measure(browser: Browser, key_session: aiohttp.ClientSession, base: str, loaded: api_data.Loaded,
                  n: int) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    pages = {"first_page": "/", "search": f"/?q={SEARCH}", "filtered": "/?state=up&tag=team-3&sort=name",
             "chart_90d_page": "/monitors/1/chart.json?range=90d"}  # fmt: skip
    for name, path in pages.items():
        out[name] = summary_ms([(await browser.get(path))[0] for _ in range(n)])
    _, first = await browser.get("/", {"HX-Request": "true"})
    etag = first.headers["ETag"]
    polls = []
    for _ in range(n):
        # A 200 when the 15-second bucket of the "last check" texts turns: take its new ETag.
        elapsed, answer = await browser.get("/", {"HX-Request": "true", "If-None-Match": etag}, (200, 304))
        if answer.status == 304:
            polls.append(elapsed)
        etag = answer.headers["ETag"]
    out["poll_unchanged"] = summary_ms(polls)
    end = loaded.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    span = {"from": rfc3339(end - timedelta(days=90)), "to": rfc3339(end)}
    for bucket in ("1h", "1d"):
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            async with key_session.get(
                f"{base}/api/v1/monitors/1/stats", params={"bucket": bucket, **span}
            ) as r:
                body = await r.json()
            samples.append(time.perf_counter() - started)
            if r.status != 200:
                raise RuntimeError(f"stats {bucket} -> {r.status}: {body}")
        out[f"chart_90d_{'hourly' if bucket == '1h' else 'daily'}"] = summary_ms(samples)
        out[f"chart_90d_{'hourly' if bucket == '1h' else 'daily'}"]["buckets"] = len(body["items"])
    return out


def interactive(base: str, cookie: str, loads: int) -> dict[str, Any]:
    """``loads`` loads of the overview in headless Chromium: domInteractive - navigationStart."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.browser import chromium  # the test suite's, only when asked

    name, value = cookie.split("=", 1)
    samples = []
    with chromium() as browser:
        browser.open(base + "/signin", width=1280)
        browser.driver.add_cookie(
            {"name": name, "value": value, "path": "/", "secure": True, "httpOnly": True}
        )
        for _ in range(loads):
            browser.open(base + "/", width=1280)
            if not browser.find_all("table.monitors"):
                raise RuntimeError("the overview did not load in the browser (signed out?)")
            ms = browser.script("var t = performance.timing; return t.domInteractive - t.navigationStart")
            samples.append(ms / 1000)
    return summary_ms(samples)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, BENCH_REDIS_DB)
    if args.harness_core is not None:
        os.sched_setaffinity(0, {args.harness_core})
    await database.create_and_migrate(urls)
    started = time.monotonic()
    loaded, email = await load(urls, args.monitors)
    load_s = round(time.monotonic() - started, 1)
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-dashboard-"))
    port = free_port()
    log = tmp / "api.log"
    api: subprocess.Popen[bytes] | None = None
    browser: Browser | None = None
    keyed: aiohttp.ClientSession | None = None
    failed = True
    try:
        api = process.spawn(
            [sys.executable, "-m", "monitor", "api"], log=log, env=api_env(urls, port), core=args.api_core
        )
        await process.wait_for(lambda: _started(log), within=60, what="api", proc=api)
        base = f"http://127.0.0.1:{port}"
        browser = Browser(base)
        await browser.sign_in(email)
        keyed = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {loaded.key}"}, connector=aiohttp.TCPConnector(limit=1),
            trust_env=False,
        )  # fmt: skip
        await measure(browser, keyed, base, loaded, 5)  # warm-up
        quiet = await wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else None
        cpu_before = proc.cpu(api.pid)
        figures = await measure(browser, keyed, base, loaded, args.requests)
        cpu = (proc.cpu(api.pid) - cpu_before).total
        if args.browser:
            figures["time_to_interactive"] = await asyncio.to_thread(
                interactive, base, browser.cookie, args.browser
            )
        failed = False
    finally:
        if browser is not None:
            await browser.close()
        if keyed is not None:
            await keyed.close()
        if api is not None:
            process.stop(api, signal.SIGTERM, timeout=15)
        if failed:
            print(f"api log kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return {
        "monitors": args.monitors,
        "requests": args.requests,
        "figures": figures,
        "targets_p95_ms": TARGETS_MS,
        "met": {k: figures[k]["p95"] < t for k, t in TARGETS_MS.items() if k in figures},
        "api_cpu_s": round(cpu, 2),
        "load_s": load_s,
        "load_average": round(proc.load_average(), 2),
        "quiet_at_start": quiet,
        "api_core": args.api_core,
        "code": code_version(),
    }


def render(r: dict[str, Any]) -> str:
    lines = [f"dashboard: {r['monitors']} monitors, {r['requests']} of each, api on core {r['api_core']}"]
    for name, s in r["figures"].items():
        target = r["targets_p95_ms"].get(name)
        met = "met" if r["met"].get(name) else "NOT met"
        verdict = "" if target is None else f"  target p95 < {target:g} ms: {met}"
        figures = f"p50 {s['p50']:>8.2f}  p95 {s['p95']:>8.2f}  max {s['max']:>8.2f} ms"
        lines.append(f"  {name:<18} {figures}{verdict}")
    lines.append(f"  load {r['load_s']} s; load average {r['load_average']}; code {r['code']}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, default=10_000, help="monitors of the account")
    add("--requests", type=int, default=200, help="requests of each kind measured")
    add("--browser", type=int, default=0, help="also load the overview this many times in headless Chromium")
    process.add_api_run_args(add, BENCH_DB)
    args = p.parse_args(argv)
    if args.monitors < 1000 or args.requests < 1:
        p.error("--monitors must be at least 1000 (the search term needs them) and --requests positive")
    args.api_core = None if args.api_core < 0 else args.api_core
    args.harness_core = None if args.harness_core < 0 else args.harness_core
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = process.run_and_report(lambda: run(args), render, args.json or RESULTS / "dashboard.json")
    return 130 if result is None else 0


if __name__ == "__main__":
    sys.exit(main())
