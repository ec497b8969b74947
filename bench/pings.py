"""Ping endpoint benchmark: how many heartbeat pings a second the real api answers on one core.

    python -m bench.pings [--monitors 5000] [--duration 30] [--warmup 10] [--connections N]
                          [--rate PINGS_PER_S] [--body BYTES] [--api-log-level info|warning]
                          [--profile] [--wait-quiet S] [--rev COMMIT] [--json PATH] [--keep]

One run: the database ``monitor_bench_pings`` (Redis db 5) is reset and loaded with N heartbeat
monitors (every 60 s, 300 s of grace: none misses during a run) with tokens from
``checks.heartbeat.new_token``. The real ``python -m monitor api`` is pinned to core 0; the load
generator, this harness and the real scheduler (which turns the ``pings`` rows into results
and deletes them) share core 1; PostgreSQL and Redis are not pinned. The generator walks the N
ping URLs round robin, so each token sees ``rate / N`` pings a second: under its limit (1/s,
burst 30) as long as the rate stays under N a second; the 429s are counted if not.

The generator is ``wrk`` (Debian's package; bench/loadgen.py), one thread:

* without ``--rate``: ``--connections`` (64) keep-alive connections, as fast as the api
  answers: the sustained maximum;
* ``--rate R``: paced near R pings a second (each of the connections, R / 10 by default, waits
  ``connections / R`` s after each answer): the latency and the api's share of its core at that
  load. ``pings_per_s`` is the rate achieved (a little under R: the pause adds to the latency).

``--warmup`` seconds of the same load come first, unmeasured (token cache, pool, buffers). After
the window the harness waits for the scheduler to empty the ``pings`` table (``drain_s``) and
compares the results written (rows of ``checks``) with the pings answered 200 over the whole run
(``lost``: answered 200 but no result, should be 0; ``results_unanswered``: the pings wrk had in
flight when it stopped, written but not counted by it). ``api_cpu_ms_per_ping`` is the api's CPU
(utime + stime, /proc) over the window per answered request; ``contended`` marks a window where
something else (PostgreSQL, mostly) used more than 5 % of the api's core. bench/README.md has
the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

from bench import database, loadgen, proc, process, pyspy
from bench.nginx import free_port
from bench.scheduler import SchedulerProcess, migrate, scheduler_env, source_tree

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_DB = "monitor_bench_pings"
BENCH_REDIS_DB = 5
TARGET_PINGS_PER_S = 2000


async def insert_heartbeats(conn: asyncpg.Connection, count: int) -> list[str]:
    """``count`` heartbeat monitors of one account (every 60 s, 300 s grace); their tokens."""
    from monitor.checks.heartbeat import new_token

    account = await conn.fetchval("INSERT INTO accounts (name) VALUES ('bench') RETURNING id")
    tokens = [new_token() for _ in range(count)]
    await conn.copy_records_to_table(
        "monitors",
        records=((f"job-{i}", "heartbeat", "", 60.0, 10.0, 1, account, t) for i, t in enumerate(tokens, 1)),
        columns=(
            "name",
            "type",
            "url",
            "interval_seconds",
            "timeout_seconds",
            "confirm_after",
            "account_id",
            "ping_token",
        ),
    )
    return tokens


def api_env(urls: database.Urls, port: int, log_level: str) -> dict[str, str]:
    # The settings reject unknown MONITOR_* names: start from an environment without any.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env.update(
        MONITOR_DATABASE_URL=urls.database,
        MONITOR_REDIS_URL=urls.redis,
        MONITOR_SECRET_KEY=database.BENCH_SECRET_KEY,
        MONITOR_API_HOST="127.0.0.1",
        MONITOR_API_PORT=str(port),
        MONITOR_LOG_FORMAT="json",
        MONITOR_LOG_LEVEL=log_level,  # info: one access line per ping, as an operator runs it
    )
    return env


async def wait_healthy(base_url: str, api: subprocess.Popen[bytes], within: float) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(trust_env=False) as session:
        while True:
            if api.poll() is not None:
                raise RuntimeError(f"api: exited with status {api.returncode} during start-up")
            try:
                async with session.get(base_url + "/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"api: not answering /healthz after {within:g} s")
            await asyncio.sleep(0.1)


async def backends(conn: asyncpg.Connection) -> list[int]:
    """PIDs of the PostgreSQL backends serving the bench database (the api's and the scheduler's
    pools), not this harness's own."""
    rows = await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    return [r["pid"] for r in rows]


def cpu_of(pids: list[int]) -> dict[int, float]:
    out: dict[int, float] = {}
    for pid in pids:
        try:
            out[pid] = proc.cpu(pid).total
        except OSError:
            continue  # gone meanwhile
    return out


async def backlog(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM pings"))


async def watch_backlog(conn: asyncpg.Connection, samples: list[int], every: float = 1.0) -> None:
    """Append the ``pings`` table's row count every ``every`` s until cancelled."""
    while True:
        samples.append(await backlog(conn))
        await asyncio.sleep(every)


async def drain(conn: asyncpg.Connection, within: float) -> tuple[float | None, int]:
    """Seconds until the ``pings`` table is empty (None: not within ``within``), and what is left."""
    started = time.monotonic()
    while True:
        left = await backlog(conn)
        if left == 0:
            return time.monotonic() - started, 0
        if time.monotonic() - started > within:
            return None, left
        await asyncio.sleep(0.2)


async def generate(
    args: argparse.Namespace, base_url: str, paths: list[str], seconds: float, tmp: Path
) -> dict[str, Any]:
    return await asyncio.to_thread(
        loadgen.run_wrk,
        base_url,
        paths,
        seconds=seconds,
        connections=args.connections,
        workdir=tmp,
        core=args.load_core,
        method="POST" if args.body else "GET",
        body_bytes=args.body,
        pause_ms=round(1000 * args.connections / args.rate) if args.rate else 0,
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, BENCH_REDIS_DB)
    if args.load_core is not None:
        os.sched_setaffinity(0, {args.load_core})
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-pings-"))
    src, code = await asyncio.to_thread(source_tree, args.rev, tmp)
    sched_env = scheduler_env(urls, args, src)
    await database.create(urls, sorted(p.name for p in (src / "sql").glob("*.sql")))
    await asyncio.to_thread(migrate, sched_env, src)
    conn = await asyncpg.connect(urls.database)
    sched = SchedulerProcess(sched_env, tmp / "scheduler.log", args.load_core, src)
    api: subprocess.Popen[bytes] | None = None
    sampler: subprocess.Popen[bytes] | None = None
    watcher: asyncio.Task[None] | None = None
    failed = True
    try:
        await database.reset(conn)
        tokens = await insert_heartbeats(conn, args.monitors)
        paths = [f"/ping/{t}" for t in tokens]
        if args.scheduler:
            await sched.start(args.start_timeout)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        api = process.spawn(
            [sys.executable, "-m", "monitor", "api"],
            log=tmp / "api.log",
            env=api_env(urls, port, args.api_log_level),
            core=args.api_core,
            cwd=src,
        )
        await wait_healthy(base_url, api, args.start_timeout)
        warm = await generate(args, base_url, paths, args.warmup, tmp) if args.warmup > 0 else None
        if args.wait_quiet > 0:
            from bench.scheduler import wait_quiet

            await wait_quiet(args.wait_quiet)

        db_pids = await backends(conn)  # before the watcher: one query at a time on conn
        samples: list[int] = []
        watcher = asyncio.create_task(watch_backlog(conn, samples))
        api_before, cores_before = proc.cpu(api.pid), proc.CoreTimes.read()
        sched_before = proc.cpu(sched.pid) if args.scheduler else None
        db_before = cpu_of(db_pids)
        if args.profile:
            sampler = pyspy.record(api.pid, args.duration, tmp / "pyspy.txt", core=args.load_core)
        measured = await generate(args, base_url, paths, args.duration, tmp)
        api_used, cores_used = (
            proc.cpu(api.pid) - api_before,
            proc.CoreTimes.read().busy_seconds_since(cores_before),
        )
        sched_used = proc.cpu(sched.pid) - sched_before if sched_before is not None else None
        db_after = cpu_of(list(db_before))
        db_used = sum(db_after[pid] - db_before[pid] for pid in db_after)
        rss = proc.rss_kib(api.pid)
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher  # let go of conn; an error of its own would be raised here
        backlog_end = await backlog(conn)
        drain_s, left = await drain(conn, args.drain_timeout) if args.scheduler else (None, backlog_end)
        results = int(await conn.fetchval("SELECT count(*) FROM checks"))
        profiled: dict[str, object] | None = None
        if sampler is not None:
            sampler.wait(30)
            sampler = None
            summary = pyspy.summarise(tmp / "pyspy.txt")
            print(pyspy.render(summary), file=sys.stderr)
            profiled = summary.as_dict()
            if args.profile_out:
                shutil.copy(tmp / "pyspy.txt", args.profile_out)
        failed = False
    finally:
        if watcher is not None:
            watcher.cancel()
        if sampler is not None:
            process.stop(sampler, signal.SIGINT, timeout=10)
        if api is not None:
            process.stop(api, signal.SIGTERM, timeout=15)
        sched.stop()
        await conn.close()
        if args.keep or failed:
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    seconds = measured["seconds"]
    answered = sum(n for s, n in measured["statuses"].items() if s.isdigit())
    ok = measured["statuses"].get("200", 0)
    acknowledged = ok + (warm["statuses"].get("200", 0) if warm else 0)
    api_core = args.api_core if args.api_core is not None else 0
    return {
        "mode": f"wrk, {args.connections} connections"
        + (f", paced at {args.rate:g}/s" if args.rate else ", as fast as answered"),
        "rate_asked": args.rate or None,
        "monitors": args.monitors,
        "pings_per_s": round(ok / seconds, 1),
        "requests_per_s": round(measured["requests"] / seconds, 1),
        "statuses": measured["statuses"],
        "socket_errors": measured["errors"],
        "latency_ms": measured["latency_ms"],
        "generator_lag_ms_max": measured.get("lag_ms_max"),
        "api_cpu_s": round(api_used.total, 2),
        "api_cpu_ms_per_ping": round(1000 * api_used.total / answered, 3) if answered else None,
        "api_cpu_s_per_1000_pings": round(1000 * api_used.total / answered, 3) if answered else None,
        "api_core_share": round(api_used.total / seconds, 3),
        "api_cpu_system_s": round(api_used.system, 2),
        "api_rss_mib": round(rss / 1024, 1),
        "scheduler_cpu_s_per_1000_pings": (
            round(1000 * sched_used.total / ok, 3) if sched_used is not None and ok else None
        ),
        # The bench database's backends that lived through the window (WAL writer and the like
        # not included): the database's share of a ping.
        "database_cpu_s_per_1000_pings": round(1000 * db_used / ok, 3) if ok else None,
        "pings_backlog_max": max(samples, default=0),
        "pings_backlog_at_end": backlog_end,
        "drain_s": round(drain_s, 1) if drain_s is not None else None,
        "pings_left": left,
        "pings_acknowledged": acknowledged,
        "results_written": results,
        "lost": max(0, acknowledged - results) if args.scheduler and left == 0 else None,
        "results_unanswered": max(0, results - acknowledged),
        "target_met": ok / seconds >= TARGET_PINGS_PER_S and api_used.total / seconds < 1.0,
        "window_s": round(seconds, 2),
        "warmup_s": args.warmup,
        "body_bytes": args.body,
        "core_busy_s": [round(b, 2) for b in cores_used],
        "api_core_other_busy_s": round(cores_used[api_core] - api_used.total, 2),
        "contended": cores_used[api_core] - api_used.total > 0.05 * seconds,
        "api_log_level": args.api_log_level,
        "code": code,
        "profile": profiled,
    }


def render(r: dict[str, Any]) -> str:
    lat = r["latency_ms"]
    statuses = ", ".join(f"{s}: {n:,}" for s, n in r["statuses"].items())
    if r["socket_errors"]:
        statuses += f"; socket errors {r['socket_errors']}"
    rows = [
        ("pings/s (200)", f"{r['pings_per_s']:,.1f}  (target {TARGET_PINGS_PER_S:,} on one core)"),
        ("statuses", statuses),
        ("latency p50/p90/p99/p99.9", f"{lat['p50']} / {lat['p90']} / {lat['p99']} / {lat['p999']} ms"),
        (
            "api CPU",
            f"{r['api_cpu_ms_per_ping']} ms per request, {100 * r['api_core_share']:.1f} % of its core "
            f"({r['api_cpu_system_s']} s in the kernel); RSS {r['api_rss_mib']} MiB",
        ),
        (
            "scheduler / database CPU",
            f"{r['scheduler_cpu_s_per_1000_pings']} / {r['database_cpu_s_per_1000_pings']} s per 1000 pings",
        ),
        (
            "pings table",
            f"at most {r['pings_backlog_max']:,} rows, {r['pings_backlog_at_end']:,} at the end, "
            f"empty {r['drain_s']} s later ({r['pings_left']} left)",
        ),
        (
            "results",
            f"{r['results_written']:,} for {r['pings_acknowledged']:,} pings answered 200 "
            f"(lost {r['lost']}; {r['results_unanswered']} in flight at wrk's stop)",
        ),
        ("other work on api core", f"{r['api_core_other_busy_s']} CPU-s in {r['window_s']} s"),
    ]
    width = max(len(name) for name, _ in rows)
    head = (
        f"pings: {r['monitors']:,} heartbeat monitors, {r['mode']}, "
        f"{r['window_s']:g} s after {r['warmup_s']:g} s warm-up ({r['code']})"
    )
    body = [f"  {name:<{width}}  {value}" for name, value in rows]
    if r["contended"]:
        body.append("  note: other processes (PostgreSQL among them) used the api's core")
    return "\n".join([head, *body])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pings", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, default=5000, help="heartbeat monitors (ping URLs walked round robin)")
    add("--duration", type=float, default=30.0, help="measured window, s")
    add("--warmup", type=float, default=10.0, help="unmeasured load first, s")
    add("--connections", type=int, default=None, help="wrk's connections (64; with --rate, rate / 10)")
    add("--rate", type=float, default=0.0, help="pace the load near this many pings/s (default: flat out)")
    add("--body", type=int, default=0, help="POST a body of this many bytes (default: GET)")
    add("--no-scheduler", dest="scheduler", action="store_false", help="no scheduler: the pings table grows")
    add("--api-log-level", default="info", choices=["info", "warning"], help="info logs a line per ping")
    add("--api-core", type=int, default=0)
    add("--load-core", type=int, default=1, help="the generator, the scheduler, py-spy and this harness")
    add("--profile", action="store_true", help="sample the api with py-spy over the window")
    add("--profile-out", type=Path, default=None, help="keep py-spy's collapsed stacks here")
    add("--drain-timeout", type=float, default=120.0, help="wait this long for the pings table to empty, s")
    add("--start-timeout", type=float, default=120.0)
    add("--rev", default=None, help="measure this commit's monitor/ and sql/ (default: the work tree)")
    add("--db-name", default=BENCH_DB)
    add("--wait-quiet", type=float, default=0, help="first wait up to this long for idle cores, s")
    add("--keep", action="store_true", help="keep the temporary directory with the logs")
    add("--json", type=Path, default=None, help="write the result here (default bench/results/)")
    args = p.parse_args(argv)
    if args.connections is None:
        args.connections = max(1, math.ceil(args.rate / 10)) if args.rate else 64
    if args.monitors < 1 or args.duration <= 0 or args.connections < 1 or args.rate < 0:
        p.error("--monitors and --connections must be at least 1, --duration positive")
    if args.body and not 0 < args.body <= 64 * 1024:
        p.error("--body: 1 to 65536 bytes")
    args.profile = args.profile or args.profile_out is not None
    for name in ("api_core", "load_core"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            setattr(args, name, None)
    # What bench.scheduler.scheduler_env reads.
    args.log_level, args.concurrency, args.set = "info", None, []
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = f"pings-{args.monitors}-" + (f"rate{args.rate:g}" if args.rate else f"c{args.connections}")
    result = process.run_and_report(lambda: run(args), render, args.json or RESULTS / f"{name}.json")
    return 130 if result is None else 0


if __name__ == "__main__":
    sys.exit(main())
