"""Several schedulers on one database (issue 16): ``python -m bench.scheduler --schedulers K``.

K ``monitor scheduler`` processes, each pinned to its own core (``--scheduler-cores``, default
0..K-1), each with its own ``MONITOR_SCHEDULER_NAME`` (``bench-0``...) and metrics port, divide
N monitors by rendezvous hashing (monitor/scheduler/cluster.py). All are started together and
the window opens ``--warmup`` seconds after the last one logged ``scheduler.started``.

Figures are for the whole cluster, then per member:

- checks per second and lateness p50/p99 from the stored rows (``checks.lateness_ms``), as with
  one scheduler; per member from the rows of the monitors it owns (the owner recomputed with
  ``cluster.owner`` over the members' names);
- the schedulers' own lateness histograms (``/metrics``), window deltas merged, as a check on
  the rows: the share of checks later than 100 ms, and the bucket holding the p99;
- CPU of every process on the machine over the window, by group: the schedulers, nginx,
  PostgreSQL's backends of the bench database, the rest of PostgreSQL (shared background
  processes and other databases' backends), this harness, kernel threads, and everything else
  (``foreign``: other sessions' work), besides interrupts and the busy time of processes that
  ended in the window. ``contended`` is ``foreign`` plus those ended processes above 5 % of one
  core: on a machine with as many cores as schedulers, the target and the database necessarily
  share the schedulers' cores, so the one-scheduler test of "other work on its core" cannot
  apply. They are not small: on the 2-core development machine nginx, PostgreSQL and the
  interrupts of the loopback traffic took 0.12 of a core per 1,000 checks/s besides the
  schedulers' 0.14 (bench/README.md, "Issue 16"), so two schedulers ran out of cores first.
- per member: its monitors (its gauge at the window's end), checks, CPU per 1,000 of its
  checks, loop blocks, lease losses and membership changes during the window.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench import database, proc
from bench import scheduler as single
from bench.cluster_figures import (
    COUNTERS,
    bucket_of,
    by_member,
    cpu_by_group,
    group_of,
    merge_lateness,
    owners,
    scrape,
    share_above,
    top_foreign,
)
from bench.nginx import Nginx, free_port


@dataclass
class Member:
    name: str
    core: int | None
    port: int
    process: single.SchedulerProcess


def cores_for(args: argparse.Namespace) -> list[int | None]:
    """Each member's core: ``--scheduler-cores`` (``none``: unpinned), else 0..K-1."""
    if args.scheduler_cores == "none":
        return [None] * args.schedulers
    if args.scheduler_cores:
        cores: list[int | None] = [int(c) for c in args.scheduler_cores.split(",")]
    else:
        cores = [i % (os.cpu_count() or 1) for i in range(args.schedulers)]
    if len(cores) != args.schedulers:
        raise SystemExit(f"--scheduler-cores names {len(cores)} cores for {args.schedulers} schedulers")
    return cores


async def run(args: argparse.Namespace) -> dict[str, Any]:
    n, interval, k = args.monitors, args.interval, args.schedulers
    window, per_monitor = single.window_length(args.duration, interval)
    urls = database.service_urls(args.db_name, args.redis_db)
    if args.target_core is not None:
        os.sched_setaffinity(0, {args.target_core})
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-cluster-"))
    try:
        src, code = await asyncio.to_thread(single.source_tree, args.rev, tmp)
        env = single.scheduler_env(urls, args, src)
        await database.create(urls, sorted(p.name for p in (src / "sql").glob("*.sql")))
        await asyncio.to_thread(single.migrate, env, src)
        conn = await asyncpg.connect(urls.database)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    nginx = Nginx(tmp / "nginx", core=args.target_core)
    members: list[Member] = []
    for i, core in enumerate(cores_for(args)):
        port = free_port()
        member_env = {**env, "MONITOR_SCHEDULER_NAME": f"bench-{i}", "MONITOR_SCHEDULER_HTTP_PORT": str(port)}
        if args.lease is not None:
            member_env["MONITOR_LEASE_SECONDS"] = str(args.lease)
        sched = single.SchedulerProcess(member_env, tmp / f"scheduler-{i}.log", core, src)
        members.append(Member(f"bench-{i}", core, port, sched))
    load_before = proc.load_average()
    failed = True
    try:
        if args.wait_quiet > 0:
            await single.wait_quiet(args.wait_quiet)
            load_before = proc.load_average()
        await nginx.start()
        await database.reset(conn)
        url, settings = single.monitor_target(args.scenario, nginx)
        await database.insert_monitors(
            conn, n, url=url, interval=interval, check_timeout=args.timeout, settings=settings
        )
        await asyncio.gather(*(m.process.start(args.start_timeout) for m in members))
        ready = max(m.process.ready_at for m in members)
        window_start = math.ceil((ready + args.warmup) * 1000) / 1000
        window_end = window_start + window
        print(
            f"{k} schedulers ready ("
            + ", ".join(f"{m.name} pid {m.process.pid} core {m.core}" for m in members)
            + f"); measuring {window:g} s from {datetime.fromtimestamp(window_start).isoformat()}",
            file=sys.stderr,
        )
        pids = {m.name: m.process.pid for m in members}
        schedulers, nginx_pid = set(pids.values()), nginx.pid

        def group(pid: int, task: proc.Task) -> str:
            return group_of(
                pid, task, schedulers=schedulers, nginx=nginx_pid, harness=os.getpid(),
                database_name=args.db_name,
            )  # fmt: skip

        await single.sleep_until(window_start)
        tasks_start, cores_start, irq_start = (
            proc.processes(),
            proc.CoreTimes.read(),
            proc.interrupt_seconds(),
        )
        scrapes_start = [scrape(m.port) for m in members]
        nginx_start = nginx.counters()
        await single.sleep_until(window_end)
        tasks_end, cores_end, irq_end = proc.processes(), proc.CoreTimes.read(), proc.interrupt_seconds()
        scrapes_end = [scrape(m.port) for m in members]
        nginx_end = nginx.counters()
        rss = {m.name: proc.rss_kib(m.process.pid) for m in members}
        cluster_rows = await conn.fetch("SELECT name, monitors, checks_per_s FROM scheduler_members")

        await single.settle(conn, window_start, window_end, patience=args.timeout + 15)
        stats = await database.window_stats(conn, window_start, window_end, per_monitor)
        owned = owners(range(1, n + 1), [m.name for m in members])
        rows_by_member = await by_member(conn, window_start, window_end, owned)
        failed = False
    finally:
        stopped = [m.process.stop() for m in members]
        nginx.stop()
        await conn.close()
        logs = {m.name: m.process.lines() if m.process.log.exists() else [] for m in members}
        if args.keep or failed:
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    busy = cores_end.busy_seconds_since(cores_start)
    groups = cpu_by_group(tasks_start, tasks_end, group)
    cpu_of = {m.name: tasks_end[pids[m.name]].cpu_s - tasks_start[pids[m.name]].cpu_s for m in members}
    lateness = merge_lateness(list(zip(scrapes_start, scrapes_end, strict=True)))
    reported = {r["name"]: r for r in cluster_rows}
    per_member = []
    for m, before, after in zip(members, scrapes_start, scrapes_end, strict=True):
        delta = {key: after.counters.get(key, 0.0) - before.counters.get(key, 0.0) for key in COUNTERS}
        own = rows_by_member.get(m.name, {})
        samples = [
            line
            for line in logs[m.name]
            if line.get("level") in ("warning", "error")
            and line.get("event") not in ("ssrf.allow_cidrs", "check.skipped", "event_loop.blocked")
        ][:5]
        warnings = sorted(
            {str(line.get("event")) for line in logs[m.name] if line.get("level") in ("warning", "error")}
            - {"ssrf.allow_cidrs"}
        )
        cpu = cpu_of[m.name]
        per_1000 = 1000 * cpu / own["checks"] if own.get("checks") else None
        per_member.append(
            {
                "name": m.name,
                "core": m.core,
                "monitors_owned": len(owned[m.name]),
                "monitors_running": after.monitors,
                "buffered_rows_start_end": [before.buffered, after.buffered],
                "monitors_reported": reported.get(m.name, {}).get("monitors"),
                "checks": own.get("checks", 0),
                "checks_per_s": single._round(own.get("checks", 0) / window),
                "lateness_ms_p50": own.get("lateness_ms_p50"),
                "lateness_ms_p99": own.get("lateness_ms_p99"),
                "lateness_ms_max": own.get("lateness_ms_max"),
                "cpu_s": single._round(cpu),
                "cpu_core_share": single._round(cpu / window),
                "cpu_s_per_1000_checks": single._round(per_1000),
                "own_core_other_busy_s": single._round(busy[m.core] - cpu) if m.core is not None else None,
                "rss_mib": single._round(rss[m.name] / 1024),
                "window_counters": {key: round(v) for key, v in delta.items()},
                "log_warnings": warnings,
                "warning_samples": samples,
                "stopped_clean": stopped[members.index(m)],
            }
        )
    attributed = sum(groups.values())
    interrupts = irq_end - irq_start
    # Busy time no process accounts for, less interrupts: processes that ended in the window.
    ended = max(0.0, sum(busy) - attributed - interrupts)
    requests = nginx_end.requests - nginx_start.requests - 1
    sched_cpu = sum(cpu_of.values())
    return {
        "scenario": args.scenario,
        "schedulers": k,
        "placement": {
            "schedulers": [m.core for m in members],
            "nginx_and_harness": args.target_core,
            "postgres": None,
        },
        "monitors": n,
        "interval_s": interval,
        "checks_per_s": single._round(stats.checks / window),
        "expected_checks_per_s": single._round(n / interval),
        "lateness_ms_p50": single._round(stats.lateness_p50),
        "lateness_ms_p99": single._round(stats.lateness_p99),
        "lateness_ms_p999": single._round(stats.lateness_p999),
        "lateness_ms_max": single._round(stats.lateness_max),
        "histogram_lateness_p99_bucket_s": bucket_of(lateness, 0.99),
        "histogram_share_over_100ms": single._round(share_above(lateness, 0.1), 5),
        "histogram_checks": max(lateness.values(), default=0),
        "checks_per_monitor_min": stats.per_monitor_min,
        "checks_per_monitor_max": stats.per_monitor_max,
        "checks_per_monitor_expected": per_monitor,
        "monitors_off_expected_count": stats.monitors_off_expected,
        "errors": stats.errors,
        "error_samples": stats.error_samples,
        "schedulers_cpu_s_per_1000_checks": single._round(
            1000 * sched_cpu / stats.checks if stats.checks else None
        ),
        "schedulers_cpu_core_share": single._round(sched_cpu / window),
        "cpu_s_by_group": groups,
        "cpu_core_share_by_group": {g: single._round(v / window) for g, v in groups.items()},
        "cpu_unattributed_s": single._round(sum(busy) - attributed),
        "cpu_interrupts_s": single._round(interrupts),
        "cpu_ended_processes_s": single._round(ended),
        "core_busy_s": [single._round(b) for b in busy],
        "cores_idle_share": single._round(1 - sum(busy) / (window * len(busy))),
        "contended": groups.get("foreign", 0.0) + ended > 0.05 * window,
        "foreign_top": top_foreign(tasks_start, tasks_end, group),
        "nginx_requests_per_s": single._round(requests / window),
        "members": per_member,
        "window_s": window,
        "warmup_s": args.warmup,
        "checks_in_window": stats.checks,
        "load_average_before": single._round(load_before, 2),
        "lease_s": args.lease,
        "timeout_s": args.timeout,
        "code": code,
    }


def render(r: dict[str, Any]) -> str:
    def num(value: Any, spec: str = ".2f") -> str:
        return "n/a" if value is None else format(value, spec)

    def pct(value: Any) -> str:
        return "n/a" if value is None else f"{100 * value:.0f}%"

    target = r["placement"]["nginx_and_harness"]

    lines = [
        f"{r['schedulers']} schedulers (cores {r['placement']['schedulers']}; nginx and harness on "
        f"{target if target is not None else 'any core'}"
        f"; PostgreSQL unpinned), scenario {r['scenario']}: {r['monitors']} monitors every "
        f"{r['interval_s']:g} s, {r['window_s']:g} s window after {r['warmup_s']:g} s warm-up",
        f"  checks/s                {num(r['checks_per_s'])}  (expected {num(r['expected_checks_per_s'])}; "
        f"per monitor {r['checks_per_monitor_min']}..{r['checks_per_monitor_max']}, "
        f"{r['monitors_off_expected_count']} off)",
        f"  lateness p50/p99/p99.9  {num(r['lateness_ms_p50'])} / {num(r['lateness_ms_p99'])} / "
        f"{num(r['lateness_ms_p999'])} ms (max {num(r['lateness_ms_max'])}); histograms: "
        f"{num(100 * (r['histogram_share_over_100ms'] or 0), '.3f')}% over 100 ms, "
        f"p99 in the bucket <= {r['histogram_lateness_p99_bucket_s']} s",
        f"  schedulers' CPU         {num(r['schedulers_cpu_s_per_1000_checks'], '.3f')} CPU-s per 1,000"
        f" checks, {pct(r['schedulers_cpu_core_share'])} of a core in all",
        "  CPU by group (cores)    "
        + ", ".join(f"{g} {v:.2f}" for g, v in r["cpu_core_share_by_group"].items())
        + f"; interrupts {num(r['cpu_interrupts_s'] / r['window_s'])}"
        + f"; ended processes {num(r['cpu_ended_processes_s'] / r['window_s'])}"
        + f"; idle {pct(r['cores_idle_share'])}",
        f"  errors                  {r['errors']}"
        + (" (" + "; ".join(f"{e} x{c}" for e, c in r["error_samples"]) + ")" if r["error_samples"] else ""),
    ]
    for m in r["members"]:
        c = m["window_counters"]
        lines.append(
            f"  {m['name']} core {m['core']}: {m['monitors_owned']} monitors owned "
            f"({m['monitors_running']:.0f} running), {num(m['checks_per_s'])} checks/s, "
            f"p50/p99 {num(m['lateness_ms_p50'])} / {num(m['lateness_ms_p99'])} ms, "
            f"{num(m['cpu_s_per_1000_checks'], '.3f')} CPU-s/1000 ({pct(m['cpu_core_share'])} of a core; "
            f"others {num(m['own_core_other_busy_s'])} s on its core); loop blocked {c['loop_blocked']}, "
            f"skipped {c['skipped']}, lease lost {c['lease_lost']}, changes {c['membership_changes']}"
            + (f"; warnings {', '.join(m['log_warnings'])}" if m["log_warnings"] else "")
        )
    if r["contended"]:
        lines.append("  WARNING: other sessions' processes used the cores; figures are suspect:")
        lines.extend(f"    {cpu:.2f} CPU-s  {cmd}" for cmd, cpu in r["foreign_top"])
    return "\n".join(lines)
