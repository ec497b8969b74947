"""API benchmark: history and the monitor list of a 10,000-monitor account, through the real API.

    python -m bench.api [--monitors 10000] [--days 90] [--requests 200] [--walks 10] [--json PATH]
                        [--reuse] [--wait-quiet SECONDS] [--order time|monitor]

One run: the database ``monitor_bench_api`` on the run server (created with TimescaleDB and
migrated when missing; Redis db 4) is emptied and loaded by SQL (bench/api_data.py): one
account, N monitors, ``--days`` of hourly rollups each (written hour by hour, as the
scheduler writes them), three closed incidents per monitor, an ongoing one for 1 % of them,
a day's pause for 2 %, and raw checks where the API reads them (the partial hours at the
edges of the windows measured). ``--reuse`` keeps the data of an earlier run of the same
shape. Then the real ``python -m monitor api`` (pinned to core 0; quota and rate limit out of
the way) is measured over loopback, one request at a time on one keep-alive connection, with
the account's key:

* ``stats_1d_ms``: ``/api/v1/monitors/{id}/stats?bucket=1d&from=<days ago>``, ``uptime_ms``:
  ``/api/v1/monitors/{id}/uptime?window=<days>d``; ``--requests`` of each on random monitors,
  after ``--warmup`` unmeasured ones. Target: p95 under 10 ms.
* ``list_page_ms``: every page of ``/api/v1/monitors?limit=1000&include=uptime_30d``, walked
  ``--walks`` times (after one unmeasured walk); ``list_per_page_ms`` page by page,
  ``list_walk_ms`` the whole walk. Target: page p95 under 500 ms.

Latencies are client wall time (request sent to body read), nearest-rank percentiles.
``api_cpu_ms_per_*`` is the api process's CPU per request (/proc); ``core_busy_share`` is how
busy each core was while measuring (the api, PostgreSQL, this harness and anything else):
the machine is shared, and ``--wait-quiet`` waits for idle cores first. ``load_steps_s``
times each step of the load (``rollup_rows_per_s``: the rollup INSERTs alone), ``table_mib``
the tables' sizes with their indexes. Results go to ``--json PATH``, else to
``bench/results/api-N-D.json`` (not committed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from bench import api_data, database, proc, process
from bench.nginx import free_port

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_DB = "monitor_bench_api"
BENCH_REDIS_DB = 4
TARGETS_MS = {"stats": 10.0, "uptime": 10.0, "list_page": 500.0}


async def wait_quiet(within: float, threshold: float = 0.25) -> bool:
    """Wait (up to ``within`` s) until no core is busier than ``threshold`` over 2 s: the machine
    is shared, and a test suite running meanwhile would be measured as latency."""
    deadline = time.monotonic() + within
    while True:
        before = proc.CoreTimes.read()
        await asyncio.sleep(2)
        busy = proc.CoreTimes.read().busy_seconds_since(before)
        if max(busy) / 2 <= threshold:
            return True
        if time.monotonic() > deadline:
            print(f"warning: machine still busy (cores {busy} s of 2 s); measuring anyway", file=sys.stderr)
            return False


def api_env(urls: database.Urls, port: int) -> dict[str, str]:
    # The settings reject unknown MONITOR_* names: start from an environment without any.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env.update(
        MONITOR_DATABASE_URL=urls.database,
        MONITOR_REDIS_URL=urls.redis,
        MONITOR_SECRET_KEY=database.BENCH_SECRET_KEY,
        MONITOR_API_HOST="127.0.0.1",
        MONITOR_API_PORT=str(port),
        MONITOR_LOG_FORMAT="json",
        MONITOR_LOG_LEVEL="info",  # `api.started`, the readiness mark, is logged at info
        # Measured: the queries, not the limits.
        MONITOR_ACCOUNT_MONITOR_QUOTA="1000000",
        MONITOR_API_RATE_PER_SECOND="1000000",
        MONITOR_API_RATE_BURST="1000000",
    )
    return env


def _started(log: Path) -> bool:
    for raw in log.read_text(errors="replace").splitlines():
        try:
            if json.loads(raw).get("event") == "api.started":
                return True
        except (ValueError, AttributeError):
            continue
    return False


def rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def summary_ms(samples: list[float]) -> dict[str, float]:
    """p50, p95, p99, mean and max of latencies in seconds, as ms."""
    ordered = sorted(samples)

    def q(p: float) -> float:
        # Nearest rank: the smallest sample with at least p of them at or below it.
        return ordered[max(0, math.ceil(p * len(ordered)) - 1)]

    return {
        "n": len(ordered),
        "p50": round(1000 * q(0.50), 2),
        "p95": round(1000 * q(0.95), 2),
        "p99": round(1000 * q(0.99), 2),
        "mean": round(1000 * statistics.fmean(ordered), 2),
        "max": round(1000 * ordered[-1], 2),
    }


class Client:
    """One keep-alive connection; each call returns (seconds, JSON body) and fails on non-200."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url = base_url
        self.session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {key}"},
            connector=aiohttp.TCPConnector(limit=1),
            timeout=aiohttp.ClientTimeout(total=60),
            trust_env=False,
        )

    async def get(self, path: str, params: dict[str, str] | None = None) -> tuple[float, Any]:
        started = time.perf_counter()
        async with self.session.get(self.base_url + path, params=params) as response:
            body = await response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise RuntimeError(f"GET {path} {params} -> {response.status}: {body[:300]!r}")
        return elapsed, json.loads(body)

    async def close(self) -> None:
        await self.session.close()


async def measure_history(
    client: Client, ids: list[int], args: argparse.Namespace, rng: random.Random, pid: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("stats", "uptime"):
        picks = [rng.choice(ids) for _ in range(args.warmup + args.requests)]
        samples: list[float] = []
        cpu_before = proc.cpu(pid)
        for n, monitor_id in enumerate(picks):
            now = datetime.now(UTC)
            if name == "stats":
                path = f"/api/v1/monitors/{monitor_id}/stats"
                params = {"bucket": "1d", "from": rfc3339(now - timedelta(days=args.days))}
            else:
                path, params = f"/api/v1/monitors/{monitor_id}/uptime", {"window": f"{args.days}d"}
            if n == args.warmup:
                samples.clear()
                cpu_before = proc.cpu(pid)
            elapsed, body = await client.get(path, params)
            samples.append(elapsed)
            if name == "stats":
                assert len(body["items"]) >= args.days, (monitor_id, len(body["items"]))
            else:
                assert body["checks"] > 0 and body["uptime_percent"] is not None, body
        cpu = (proc.cpu(pid) - cpu_before).total
        out[name] = {**summary_ms(samples), "api_cpu_ms_per_request": round(1000 * cpu / len(samples), 2)}
    return out


async def measure_list(client: Client, args: argparse.Namespace, monitors: int, pid: int) -> dict[str, Any]:
    per_page: list[list[float]] = []
    walks: list[float] = []
    cpu_before = proc.cpu(pid)
    for walk in range(args.list_warmup + args.walks):
        if walk == args.list_warmup:
            per_page, walks = [], []
            cpu_before = proc.cpu(pid)
        cursor: str | None = None
        page = 0
        seen = 0
        started = time.perf_counter()
        while True:
            params = {"limit": str(args.page_size), "include": "uptime_30d"}
            if cursor:
                params["cursor"] = cursor
            elapsed, body = await client.get("/api/v1/monitors", params)
            if len(per_page) <= page:
                per_page.append([])
            per_page[page].append(elapsed)
            items = body["items"]
            assert all(i["uptime_30d"]["checks"] > 0 for i in items), "a monitor without 30-day figures"
            seen += len(items)
            page += 1
            cursor = body["next_cursor"]
            if cursor is None:
                break
        walks.append(time.perf_counter() - started)
        assert seen == monitors, (seen, monitors)
    cpu = (proc.cpu(pid) - cpu_before).total
    pages = [s for samples in per_page for s in samples]
    return {
        "page": {**summary_ms(pages), "api_cpu_ms_per_page": round(1000 * cpu / len(pages), 1)},
        "per_page": [summary_ms(samples) for samples in per_page],
        "walk": summary_ms(walks),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, BENCH_REDIS_DB)
    if args.harness_core is not None:
        os.sched_setaffinity(0, {args.harness_core})
    await database.create_and_migrate(urls)
    started = time.monotonic()
    loaded = None
    if args.reuse:
        loaded = await api_data.existing(urls.database, monitors=args.monitors, days=args.days)
        print("reusing the data loaded before" if loaded else "nothing to reuse: loading", file=sys.stderr)
    if loaded is None:
        loaded = await api_data.load(
            urls.database,
            monitors=args.monitors,
            days=args.days,
            incidents=args.incidents,
            raw_edges=args.raw_edges,
            jobs=args.load_jobs,
            order=args.order,
            seed=args.seed,
        )
        load_s: float | None = time.monotonic() - started
        print(f"loaded in {load_s:.1f} s: {loaded.rows} ({loaded.seconds})", file=sys.stderr)
    else:
        load_s = None
    conn = await asyncpg.connect(urls.database)
    try:
        sizes = await api_data.sizes(conn)
    finally:
        await conn.close()

    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-api-"))
    port = free_port()
    log = tmp / "api.log"
    api: subprocess.Popen[bytes] | None = None
    client: Client | None = None
    failed = True
    try:
        api = process.spawn(
            [sys.executable, "-m", "monitor", "api"], log=log, env=api_env(urls, port), core=args.api_core
        )
        await process.wait_for(lambda: _started(log), within=60, what="api", proc=api)
        client = Client(f"http://127.0.0.1:{port}", loaded.key)
        quiet = await wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else None
        cores_before = proc.CoreTimes.read()
        measured = time.monotonic()
        rng = random.Random(args.seed)
        history = await measure_history(client, loaded.monitor_ids, args, rng, api.pid)
        listing = await measure_list(client, args, len(loaded.monitor_ids), api.pid)
        rss = proc.rss_kib(api.pid)
        busy = proc.CoreTimes.read().busy_seconds_since(cores_before)
        measured_s = time.monotonic() - measured
        failed = False
    finally:
        if client is not None:
            await client.close()
        if api is not None:
            process.stop(api, signal.SIGTERM, timeout=15)
        if failed:
            print(f"api log kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    met = {
        "stats_p95_under_10ms": history["stats"]["p95"] < TARGETS_MS["stats"],
        "uptime_p95_under_10ms": history["uptime"]["p95"] < TARGETS_MS["uptime"],
        "list_page_p95_under_500ms": listing["page"]["p95"] < TARGETS_MS["list_page"],
    }
    return {
        "monitors": args.monitors,
        "days": args.days,
        "page_size": args.page_size,
        "stats_1d_ms": history["stats"],
        "uptime_ms": history["uptime"],
        "list_page_ms": listing["page"],
        "list_per_page_ms": listing["per_page"],
        "list_walk_ms": listing["walk"],
        "targets_met": met,
        "load_s": None if load_s is None else round(load_s, 1),
        "data_age_h": round((datetime.now(UTC) - loaded.now).total_seconds() / 3600, 2),
        "load_steps_s": loaded.seconds,
        "rows": loaded.rows,
        "rollup_rows_per_s": (
            round(loaded.rows["checks_hourly"] / loaded.seconds["rollups_insert"])
            if "rollups_insert" in loaded.seconds
            else None
        ),
        "table_mib": sizes,
        "api_rss_mib": round(rss / 1024, 1),
        "measured_s": round(measured_s, 1),
        # Share of each core busy while measuring (the api, PostgreSQL, this harness, and anything
        # else on the machine), and whether the machine was quiet when measuring began.
        "core_busy_share": [round(b / measured_s, 2) for b in busy],
        "load_average": round(proc.load_average(), 2),
        "quiet_at_start": quiet,
        "rollup_order": args.order if load_s is not None else "reused",
        "api_core": args.api_core,
        "code": code_version(),
    }


def code_version() -> str:
    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(database.REPO), *argv], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--", "monitor", "sql")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def render(r: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, Any], target: float | None = None) -> str:
        mark = (
            ""
            if target is None
            else ("  ok" if s["p95"] < target else f"  MISSED (target p95 < {target:g} ms)")
        )
        return (
            f"  {name:<28} p50 {s['p50']:>8.2f}  p95 {s['p95']:>8.2f}  p99 {s['p99']:>8.2f}  "
            f"max {s['max']:>8.2f} ms  (n={s['n']}){mark}"
        )

    loaded = (
        f"loaded in {r['load_s']:g} s, rollups at {r['rollup_rows_per_s']:,} rows/s"
        if r["load_s"] is not None
        else f"reused, {r['data_age_h']:g} h old"
    )
    head = (
        f"api: {r['monitors']} monitors x {r['days']} days of hourly rollups "
        f"({r['rows']['checks_hourly']:,} rows, {r['table_mib']['checks_hourly']:,.0f} MiB; {loaded})"
    )
    rows = [
        line(f"stats bucket=1d, {r['days']}d", r["stats_1d_ms"], TARGETS_MS["stats"]),
        line(f"uptime window={r['days']}d", r["uptime_ms"], TARGETS_MS["uptime"]),
        line(f"list page ({r['page_size']}, uptime_30d)", r["list_page_ms"], TARGETS_MS["list_page"]),
        line("list walk (all pages)", r["list_walk_ms"]),
        "  per page p95: " + ", ".join(f"{p['p95']:.0f}" for p in r["list_per_page_ms"]) + " ms",
        f"  api CPU per request: stats {r['stats_1d_ms']['api_cpu_ms_per_request']} ms, "
        f"uptime {r['uptime_ms']['api_cpu_ms_per_request']} ms, "
        f"list page {r['list_page_ms']['api_cpu_ms_per_page']} ms",
        f"  load steps (s): {r['load_steps_s']}",
    ]
    return "\n".join([head, *rows])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.api", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, default=10_000, help="monitors of the one account")
    add("--days", type=int, default=90, help="days of hourly rollups per monitor (and the measured span)")
    add("--requests", type=int, default=200, help="measured stats and uptime requests, each")
    add("--warmup", type=int, default=20, help="unmeasured stats and uptime requests first, each")
    add("--walks", type=int, default=10, help="measured walks through every page of the list")
    add("--list-warmup", type=int, default=1, help="unmeasured walks first")
    add("--page-size", type=int, default=1000, help="the list's limit")
    add("--incidents", type=int, default=3, help="closed incidents per monitor")
    add("--no-raw-edges", dest="raw_edges", action="store_false", help="no raw checks at the window edges")
    add("--load-jobs", type=int, default=2, help="connections loading the rollups at once")
    add(
        "--order",
        choices=sorted(api_data.ORDERS),
        default="time",
        help="rollup rows written hour by hour (as the scheduler does) or monitor by monitor",
    )
    add("--seed", type=int, default=1)
    add("--reuse", action="store_true", help="keep the data of an earlier run of the same shape")
    process.add_api_run_args(add, BENCH_DB)
    args = p.parse_args(argv)
    if args.monitors < 1 or args.days < 1 or args.requests < 1 or args.walks < 1:
        p.error("--monitors, --days, --requests and --walks must be at least 1")
    if args.api_core is not None and args.api_core < 0:
        args.api_core = None
    if args.harness_core is not None and args.harness_core < 0:
        args.harness_core = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = process.run_and_report(
        lambda: run(args), render, args.json or RESULTS / f"api-{args.monitors}-{args.days}.json"
    )
    if result is None:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
