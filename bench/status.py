"""Status page and badge benchmark: requests a second, latency and database work of the public side.

    python -m bench.status [--monitors 20] [--groups 2] [--days 90] [--posts 0] [--tokens 20] [--rate 1000]
                           [--badge-rate 1000] [--duration 30] [--warmup 10] [--cache-seconds 10]
                           [--phases page,badge,both,page-max,badge-max] [--connections 64]
                           [--api-log-level info|warning] [--profile] [--wait-quiet S] [--rev COMMIT]
                           [--json PATH] [--keep]

One run: the database ``monitor_bench_status`` (Redis db 6) is emptied and loaded by SQL
(bench/status_data.py: one account, N monitors with ``--days`` of hourly and daily rollups,
incidents, the last hours' raw checks; one status page ``/status/bench`` over them in
``--groups`` groups). The real ``python -m monitor api`` runs pinned to core 0 with
``MONITOR_STATUS_CACHE_SECONDS`` = ``--cache-seconds``; wrk (bench/loadgen.py, one thread per
load) and this harness run on core 1; PostgreSQL is not pinned. Each phase is ``--warmup`` s of
its load, unmeasured, then ``--duration`` s measured:

* ``page``: ``GET /status/bench`` with ``Accept-Encoding: gzip`` (what browsers send), paced
  near ``--rate``; ``badge``: ``GET /badge/<token>/uptime/30d.svg`` over ``--tokens`` monitors'
  tokens round robin, paced near ``--badge-rate``; ``both``: the two at once;
* ``page-max``, ``badge-max``: each flat out on ``--connections`` keep-alive connections (the
  ceiling; wrk's latency there includes queueing: a closed loop, coordinated omission).

Pacing as bench/pings.py does it: each connection waits ``--pause-ms`` (100) after each answer,
with enough connections for the rate at 2 ms of latency, scaled by the rate the warm-up reached
(wrk's timer overshoots the pause by a few ms). wrk has no open loop, but with a hundred
connections each pausing 100 ms, a stall of the api delays only the connections whose requests
it holds: the others keep sending, so their requests' latency shows the stall (a paced phase
is still read with the rate achieved).

Database work is read from the api's own /metrics before and after each window:
``monitor_status_builds_total`` and ``monitor_status_queries_total`` by ``what`` (page,
directory, badge: monitor/status/service.py counts every statement of a build with asyncpg's
query logger), giving builds per cache period and statements per build. pg_stat_statements is not
preloaded on the shared server (restarting it is not ours to do); the database's own count of
transactions in the bench database over the run (``pg_stat_database``, read 11 s after the last
window so every backend has flushed) is the cross-check: each statement of a build is one, and so
is the pool's reset of the connection after each build (``database_transactions_other`` is the
rest: new connections' set-up, the first preparation of each statement on a connection).
``build`` is bench/status_build.py's: page builds by the api's own ``StatusDesk``, forgotten and
built again in a process of their own, with the longest stretch each holds the event loop.
``--rev COMMIT`` measures that commit's monitor/ and sql/ (others edit the work tree).
Results go to ``--json PATH``, else ``bench/results/status-N-cC.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
from prometheus_client.parser import text_string_to_metric_families

from bench import database, loadgen, proc, process, pyspy, status_data
from bench.nginx import free_port
from bench.pings import api_env, wait_healthy
from bench.scheduler import migrate, source_tree, wait_quiet

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_DB = "monitor_bench_status"
BENCH_REDIS_DB = 6
TARGET_RATE, TARGET_P99_MS = 1000, 50.0
PHASES = ("page", "badge", "both", "page-max", "badge-max")
WHATS = ("page", "directory", "badge")
PAGE = f"/status/{status_data.SLUG}"
GZIP = {"Accept-Encoding": "gzip, deflate, br"}


async def status_counters(session: aiohttp.ClientSession, base_url: str) -> dict[str, float]:
    """``{builds.page: n, queries.page: n, ...}`` from the api's /metrics."""
    async with session.get(base_url + "/metrics") as response:
        text = await response.text()
    out = {f"{k}.{w}": 0.0 for k in ("builds", "queries") for w in WHATS}
    for family in text_string_to_metric_families(text):
        kind = family.name.removeprefix("monitor_status_")
        if kind not in ("builds", "queries"):
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out[f"{kind}.{sample.labels['what']}"] = sample.value
    return out


async def transactions(admin: asyncpg.Connection, name: str) -> int:
    return int(
        await admin.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", name
        )
    )


def build_times(dsn: str, builds: int, src: Path, core: int | None) -> dict[str, Any]:
    """bench/status_build.py in a process of its own, running the code under test."""
    env = {**os.environ, "PYTHONPATH": str(database.REPO)}
    argv = [*(["taskset", "-c", str(core)] if core is not None else [])]
    argv += [sys.executable, "-m", "bench.status_build", dsn, status_data.SLUG, str(builds)]
    done = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"bench.status_build failed: {(done.stderr or done.stdout)[-1500:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def loads_of(phase: str, args: argparse.Namespace, badge_paths: list[str]) -> list[dict[str, Any]]:
    """The wrk runs of a phase: name, paths, headers, connections, pause."""
    page = {"name": "page", "paths": [PAGE], "headers": GZIP, "rate": args.rate}
    badge = {"name": "badge", "paths": badge_paths, "headers": {}, "rate": args.badge_rate}
    chosen = {"page": [page], "badge": [badge], "both": [page, badge]}.get(phase)
    if chosen is not None:  # paced: enough connections for the rate at 2 ms of latency
        return [
            {**x, "connections": math.ceil(x["rate"] * (args.pause_ms + 2) / 1000), "pause_ms": args.pause_ms}
            for x in chosen
        ]
    flat = page if phase == "page-max" else badge
    return [{**flat, "rate": None, "connections": args.connections, "pause_ms": 0}]


async def drive(
    base_url: str, loads: list[dict[str, Any]], seconds: float, tmp: Path, core: int | None
) -> list[dict[str, Any]]:
    async def one(load: dict[str, Any]) -> dict[str, Any]:
        workdir = tmp / load["name"]
        workdir.mkdir(exist_ok=True)
        return await asyncio.to_thread(
            loadgen.run_wrk,
            base_url,
            load["paths"],
            seconds=seconds,
            connections=load["connections"],
            workdir=workdir,
            core=core,
            pause_ms=load["pause_ms"],
            headers=load["headers"],
        )

    return list(await asyncio.gather(*(one(x) for x in loads)))


async def phase(
    name: str, args: argparse.Namespace, env: dict[str, Any], session: aiohttp.ClientSession
) -> dict[str, Any]:
    base_url, api, tmp = env["base_url"], env["api"], env["tmp"]
    loads = loads_of(name, args, env["badge_paths"])
    if args.wait_quiet > 0:
        await wait_quiet(args.wait_quiet)
    if args.warmup > 0:
        warm = await drive(base_url, loads, args.warmup, tmp, args.load_core)
        for load, m in zip(loads, warm, strict=True):
            achieved = m["requests"] / m["seconds"]
            if load["rate"] and 0 < achieved < load["rate"]:  # the pause's overshoot: more connections
                load["connections"] = math.ceil(load["connections"] * min(1.5, load["rate"] / achieved))
    before = await status_counters(session, base_url)
    cpu_before, cores_before = proc.cpu(api.pid), proc.CoreTimes.read()
    sampler = (
        pyspy.record(api.pid, args.duration, tmp / f"pyspy-{name}.txt", core=args.load_core)
        if args.profile
        else None
    )
    started = time.monotonic()
    measured = await drive(base_url, loads, args.duration, tmp, args.load_core)
    elapsed = time.monotonic() - started
    used, cores = proc.cpu(api.pid) - cpu_before, proc.CoreTimes.read().busy_seconds_since(cores_before)
    after = await status_counters(session, base_url)
    profiled = None
    if sampler is not None:
        sampler.wait(30)
        summary = pyspy.summarise(tmp / f"pyspy-{name}.txt")
        print(f"{name}: " + pyspy.render(summary), file=sys.stderr)
        profiled = summary.as_dict()
    delta = {k: after[k] - before[k] for k in after}
    periods = elapsed / args.cache_seconds
    requests = sum(m["requests"] for m in measured)
    core = args.api_core if args.api_core is not None else 0
    out: dict[str, Any] = {"loads": {}}
    for load, m in zip(loads, measured, strict=True):
        non_2xx = sum(n for s, n in m["statuses"].items() if not s.startswith("2"))
        rate = m["requests"] / m["seconds"]
        out["loads"][load["name"]] = {
            "rate_asked": load["rate"],
            "connections": load["connections"],
            "pause_ms": load["pause_ms"],
            "requests_per_s": round(rate, 1),
            "latency_ms": m["latency_ms"],
            "statuses": m["statuses"],
            "non_2xx": non_2xx,
            "socket_errors": m["errors"],
            "bytes_per_response": round(m["bytes"] / m["requests"]) if m["requests"] else None,
            "met": (
                rate >= 0.99 * load["rate"] and m["latency_ms"]["p99"] < TARGET_P99_MS and non_2xx == 0
                if load["rate"]
                else None
            ),
        }
    tokens = len(env["badge_paths"]) if any(x["name"] == "badge" for x in loads) else 0
    out.update(
        window_s=round(elapsed, 2),
        cache_periods=round(periods, 2),
        builds={w: int(delta[f"builds.{w}"]) for w in WHATS},
        statements={w: int(delta[f"queries.{w}"]) for w in WHATS},
        page_builds_per_period=round(delta["builds.page"] / periods, 2),
        badge_builds_per_token_per_period=round(delta["builds.badge"] / periods / tokens, 2)
        if tokens
        else None,
        statements_per_period=round(sum(delta[f"queries.{w}"] for w in WHATS) / periods, 1),
        statements_per_build={
            w: round(delta[f"queries.{w}"] / delta[f"builds.{w}"], 1) for w in WHATS if delta[f"builds.{w}"]
        },
        api_cpu_s=round(used.total, 2),
        api_core_share=round(used.total / elapsed, 3),
        api_cpu_ms_per_request=round(1000 * used.total / requests, 3) if requests else None,
        api_cpu_system_s=round(used.system, 2),
        core_busy_s=[round(b, 2) for b in cores],
        api_core_other_busy_s=round(cores[core] - used.total, 2),
        contended=cores[core] - used.total > 0.05 * elapsed,
        profile=profiled,
    )
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, BENCH_REDIS_DB)
    if args.load_core is not None:
        os.sched_setaffinity(0, {args.load_core})
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-status-"))
    src, code = await asyncio.to_thread(source_tree, args.rev, tmp)
    port = free_port()
    api_environment = api_env(urls, port, args.api_log_level)
    api_environment["MONITOR_STATUS_CACHE_SECONDS"] = f"{args.cache_seconds:g}"
    await database.create(urls, sorted(p.name for p in (src / "sql").glob("*.sql")))
    await asyncio.to_thread(migrate, api_environment, src)
    conn = await asyncpg.connect(urls.database)
    try:
        started = time.monotonic()
        loaded = await status_data.load(
            conn,
            monitors=args.monitors,
            groups=args.groups,
            days=args.days,
            raw_hours=args.raw_hours,
            seed=1,
            posts=args.posts,
        )
        load_s = time.monotonic() - started
    finally:
        await conn.close()
    built = await asyncio.to_thread(build_times, urls.database, args.builds, src, args.api_core)
    api: subprocess.Popen[bytes] | None = None
    admin = await asyncpg.connect(urls.admin)
    failed = True
    results: dict[str, Any] = {}
    try:
        base_url = f"http://127.0.0.1:{port}"
        api = process.spawn(
            [sys.executable, "-m", "monitor", "api"],
            log=tmp / "api.log",
            env=api_environment,
            core=args.api_core,
            cwd=src,
        )
        await wait_healthy(base_url, api, args.start_timeout)
        badge_paths = [f"/badge/{t}/{args.badge}.svg" for t in loaded.badge_tokens[: args.tokens]]
        env = {"base_url": base_url, "api": api, "tmp": tmp, "badge_paths": badge_paths}
        async with aiohttp.ClientSession(trust_env=False, auto_decompress=False) as session:
            for path, headers in ((PAGE, GZIP), (badge_paths[0], {})):  # both answer before any load
                async with session.get(base_url + path, headers=headers) as response:
                    if response.status != 200:
                        raise RuntimeError(f"GET {path}: {response.status} {(await response.text())[:300]}")
                    if path == PAGE and response.headers.get("Content-Encoding") != "gzip":
                        raise RuntimeError(f"GET {PAGE} with gzip accepted: not gzipped")
            xact_before, counters_before = (
                await transactions(admin, args.db_name),
                await status_counters(session, base_url),
            )
            for name in args.phases:
                print(
                    f"phase {name}: {args.warmup:g} s warm-up, {args.duration:g} s measured", file=sys.stderr
                )
                results[name] = await phase(name, args, env, session)
            await asyncio.sleep(11)  # every backend flushes its statistics within 10 s of idling
            counters_after = await status_counters(session, base_url)
            xact = await transactions(admin, args.db_name) - xact_before
        rss = proc.rss_kib(api.pid)
        failed = False
    finally:
        if api is not None:
            process.stop(api, signal.SIGTERM, timeout=15)
        await admin.close()
        if args.keep or failed:
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    statements, builds = (
        sum(counters_after[f"{k}.{w}"] - counters_before[f"{k}.{w}"] for w in WHATS)
        for k in ("queries", "builds")
    )
    return {
        "monitors": args.monitors,
        "groups": args.groups,
        "days": args.days,
        "posts": args.posts,
        "badge_tokens": len(badge_paths),
        "badge": args.badge,
        "cache_seconds": args.cache_seconds,
        "api_log_level": args.api_log_level,
        "phases": results,
        "build": built,
        "statements_counted": int(statements),
        "builds_counted": int(builds),
        "database_transactions": xact,
        # Each statement is a transaction, and so is the pool's reset of a connection released
        # after a build; the rest is new connections' set-up and first preparation of statements.
        "database_transactions_other": xact - int(statements) - int(builds),
        "api_rss_mib": round(rss / 1024, 1),
        "rows": loaded.rows,
        "load_s": round(load_s, 2),
        "warmup_s": args.warmup,
        "code": code,
    }


def render(r: dict[str, Any]) -> str:
    b = r["build"]
    lines = [
        f"status: a page of {r['monitors']} monitors in {r['groups']} groups, {r['days']} days; badge "
        f"{r['badge']} over {r['badge_tokens']} tokens; cache {r['cache_seconds']:g} s; api log "
        f"{r['api_log_level']} ({r['code']})",
        f"  page build: {b['build_ms_p50']} ms p50, {b['build_ms_max']} ms max, holding the loop up to "
        f"{b['loop_stall_ms_max']} ms at a stretch; {b['statements_per_page_build']:g} statements; "
        f"HTML {b['html_bytes']:,} B, gzip {b['html_gzip_bytes']:,} B",
    ]
    for name, p in r["phases"].items():
        for load, x in p["loads"].items():
            lat = x["latency_ms"]
            bad = f"non-2xx {x['non_2xx']}" + (
                f", socket errors {x['socket_errors']}" if x["socket_errors"] else ""
            )
            asked = (
                f"asked {x['rate_asked']:g}/s" if x["rate_asked"] else f"flat out, {x['connections']} conns"
            )
            verdict = "" if x["met"] is None else ("  MET" if x["met"] else "  NOT MET")
            lines.append(
                f"  {name:<9} {load:<5} {x['requests_per_s']:>8,.1f}/s ({asked}); p50/p99/max "
                f"{lat['p50']} / {lat['p99']} / {lat['max']} ms; {bad}{verdict}"
            )
        per_build = ", ".join(f"{w} {n:g}" for w, n in p["statements_per_build"].items())
        lines.append(
            f"  {'':<9} api {100 * p['api_core_share']:.0f} % of its core, "
            f"{p['api_cpu_ms_per_request']} ms CPU/request; {p['cache_periods']:g} periods: builds "
            f"{p['builds']} ({p['page_builds_per_period']:g} page builds per period), "
            f"{p['statements_per_period']:g} statements per period (per build: {per_build})"
            + ("; CONTENDED" if p["contended"] else "")
        )
    lines.append(
        f"  whole run: {r['builds_counted']:,} builds, {r['statements_counted']:,} statements counted by the "
        f"api; {r['database_transactions']:,} transactions in the bench database (statements + one reset "
        f"per build + {r['database_transactions_other']:,} others)"
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.status", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, default=20, help="monitors on the page")
    add("--groups", type=int, default=2, help="groups of the page (even ones by id, odd ones by tag)")
    add("--days", type=int, default=90, help="days of rollups")
    add("--raw-hours", type=int, default=26, help="hours of raw check rows")
    add("--posts", type=int, default=0, help="incident posts on the page (one open, the rest over 365 days)")
    add("--tokens", type=int, default=20, help="badge tokens walked round robin (at most --monitors)")
    add("--badge", default="uptime/30d", help="badge path after the token, without .svg")
    add("--rate", type=float, default=TARGET_RATE, help="page requests/s of the paced phases")
    add("--badge-rate", type=float, default=TARGET_RATE, help="badge requests/s of the paced phases")
    add("--pause-ms", type=int, default=100, help="pause of each paced connection after an answer")
    add("--connections", type=int, default=64, help="connections of the flat-out phases")
    add("--phases", default=",".join(PHASES), help=f"which, in order (of {', '.join(PHASES)})")
    add("--duration", type=float, default=30.0, help="measured window of each phase, s")
    add("--warmup", type=float, default=10.0, help="unmeasured load before each window, s")
    add("--cache-seconds", type=float, default=10.0, help="MONITOR_STATUS_CACHE_SECONDS of the api")
    add("--builds", type=int, default=20, help="page builds timed (bench/status_build.py)")
    add("--api-log-level", default="info", choices=["info", "warning"], help="info logs a line per request")
    add("--api-core", type=int, default=0)
    add("--load-core", type=int, default=1, help="wrk, py-spy and this harness")
    add("--profile", action="store_true", help="sample the api with py-spy over each window")
    add("--start-timeout", type=float, default=60.0)
    add("--rev", default=None, help="measure this commit's monitor/ and sql/ (default: the work tree)")
    add("--db-name", default=BENCH_DB)
    add(
        "--wait-quiet", type=float, default=0, help="before each phase wait up to this long for idle cores, s"
    )
    add("--keep", action="store_true", help="keep the temporary directory with the logs")
    add("--json", type=Path, default=None, help="write the result here (default bench/results/)")
    args = p.parse_args(argv)
    args.phases = [x.strip() for x in args.phases.split(",") if x.strip()]
    if unknown := set(args.phases) - set(PHASES):
        p.error(f"--phases: unknown {', '.join(sorted(unknown))}")
    if not 1 <= args.tokens <= args.monitors or args.groups < 1 or args.duration <= 0:
        p.error("--tokens 1..--monitors, --groups at least 1, --duration positive")
    for name in ("api_core", "load_core"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            setattr(args, name, None)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = f"status-{args.monitors}-c{args.cache_seconds:g}" + (
        "-warning" if args.api_log_level == "warning" else ""
    )
    result = process.run_and_report(lambda: run(args), render, args.json or RESULTS / f"{name}.json")
    return 130 if result is None else 0


if __name__ == "__main__":
    sys.exit(main())
