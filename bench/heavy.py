"""Heavy checks beside light ones: does a worker's browser slow the scheduler's http checks?

    python -m bench.heavy --http 10000 --interval 30 --heavy 20 --heavy-type pagespeed
                          --heavy-interval 300 --duration 300 [--baseline] [--rev REV] ...

Issue 30's question: a page-speed run costs seconds of CPU and hundreds of MiB, an http check
a fraction of a millisecond; heavy checks go to a queue of their own (``monitor worker``) so
that they cannot delay the fast ones. One run here: nginx and the benchmark database as
``bench.scheduler`` sets them up, ``--http`` plain http monitors (nginx's ``200 ok``) every
``--interval`` and ``--heavy`` monitors of ``--heavy-type`` (pagespeed or browser) every
``--heavy-interval`` against nginx's 100 KiB page; the real scheduler on ``--scheduler-core``,
one real worker on ``--worker-core`` (its Chromium and Lighthouse inherit the pinning and
run niced); after the warm-up, a window of whole heavy intervals is measured:

* the http monitors' lateness p50/p99/max, from their rows, as ``bench.scheduler`` reads it;
* the heavy monitors' checks, not-run results and errors;
* the worker's memory: the whole process tree's (worker, Lighthouse's node, every Chromium
  process) peak Pss and RSS, sampled every 0.5 s (Pss counts shared pages once, as the
  launcher's memory cap does), against ``MONITOR_WORKER_MEMORY_MB`` per run times the
  worker's concurrency.

``--baseline`` runs the same fleet first without the heavy monitors (no worker) and reports
the http lateness of both and their ratio: the issue's bound is p99 within 20 % of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench import database, proc, process
from bench.nginx import Nginx, free_port
from bench.scheduler import (
    RESULTS,
    SchedulerProcess,
    migrate,
    scheduler_env,
    settle,
    sleep_until,
    source_tree,
)

HEAVY_TYPES = ("pagespeed", "browser")
SAMPLE_SECONDS = 0.5


def heavy_settings(kind: str, url: str) -> dict[str, Any]:
    """A heavy monitor's ``monitors.settings`` as the api would store them (validated by the
    type's own model, so a run fails early when its fields change)."""
    from monitor.checks import REGISTRY

    check = REGISTRY.get(kind)
    body: dict[str, Any] = {"url": url}
    if kind == "pagespeed":
        body["profile"] = "desktop"
    settings = check.Settings.model_validate(body, context={"min_interval_seconds": 0})
    stored, _secrets = check.to_stored(settings)
    return stored


async def insert_heavy(
    conn: asyncpg.Connection, kind: str, count: int, url: str, interval: float, seconds: float
) -> None:
    account = await conn.fetchval("SELECT id FROM accounts WHERE name = 'bench'")
    settings = json.dumps(heavy_settings(kind, url))
    await conn.copy_records_to_table(
        "monitors",
        records=[
            (f"heavy-{i}", kind, url, interval, seconds, account, settings) for i in range(1, count + 1)
        ],
        columns=("name", "type", "url", "interval_seconds", "timeout_seconds", "account_id", "settings"),
    )


def tree(root: int) -> list[int]:
    """``root`` and every process descended from it, now."""
    children: dict[int, list[int]] = {}
    for pid, task in proc.processes().items():
        children.setdefault(task.ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(Pss, RSS) summed over ``pids``, KiB; processes that ended meanwhile count nothing."""
    pss = rss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1])
        except OSError:
            continue
    return pss, rss


@dataclass
class MemorySampler:
    """Peak memory of a process tree, sampled until stopped."""

    root: int
    peak_pss_kib: int = 0
    peak_rss_kib: int = 0
    peak_processes: int = 0
    samples: int = 0
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            pids = await asyncio.to_thread(tree, self.root)
            pss, rss = await asyncio.to_thread(memory_kib, pids)
            self.peak_pss_kib = max(self.peak_pss_kib, pss)
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.peak_processes = max(self.peak_processes, len(pids))
            self.samples += 1
            await asyncio.sleep(SAMPLE_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def heavy_figures(conn: asyncpg.Connection, start: float, end: float) -> dict[str, Any]:
    """The heavy monitors' checks in the window (by due time), how many were not run or failed."""
    row = await conn.fetchrow(
        f"""SELECT count(*) AS checks, count(*) FILTER (WHERE NOT w.ok) AS failed,
                   count(*) FILTER (WHERE w.error LIKE 'not run%') AS not_run,
                   mode() WITHIN GROUP (ORDER BY w.error) AS top_error,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY w.latency_ms) AS duration_p50
            FROM ({database._WINDOW}) w JOIN monitors m ON m.id = w.monitor_id
            WHERE m.type <> 'http'""",
        start,
        end,
    )
    return dict(row) if row is not None else {}


async def one_run(args: argparse.Namespace, heavy: int) -> dict[str, Any]:
    """One fleet: ``args.http`` http monitors and ``heavy`` heavy ones; the figures of its window."""
    urls = database.service_urls(args.db_name, args.redis_db)
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-heavy-"))
    src, code = await asyncio.to_thread(source_tree, args.rev, tmp)
    env = scheduler_env(urls, args, src)
    env["MONITOR_WORKER_HTTP_PORT"] = str(free_port())
    env["MONITOR_WORKER_CONCURRENCY"] = str(args.worker_concurrency)
    env["MONITOR_WORKER_MEMORY_MB"] = str(args.worker_memory_mb)
    await database.create(urls, sorted(p.name for p in (src / "sql").glob("*.sql")))
    await asyncio.to_thread(migrate, env, src)
    conn = await asyncpg.connect(urls.database)
    nginx = Nginx(tmp / "nginx", core=args.target_core)
    sched = SchedulerProcess(env, tmp / "scheduler.log", args.scheduler_core, src)
    worker: subprocess.Popen[bytes] | None = None
    sampler: MemorySampler | None = None
    try:
        await nginx.start()
        await database.reset(conn)
        await database.insert_monitors(
            conn, args.http, url=nginx.url, interval=args.interval, check_timeout=args.timeout
        )
        if heavy:
            await insert_heavy(
                conn, args.heavy_type, heavy, nginx.page_url, args.heavy_interval, args.heavy_timeout
            )
        await sched.start(args.start_timeout)
        if heavy:
            worker_log = tmp / "worker.log"
            worker = process.spawn(
                [sys.executable, "-m", "monitor", "worker"],
                log=worker_log,
                env=env,
                core=args.worker_core,
                cwd=src,
            )
            await process.wait_for(
                lambda: "worker.ready" in worker_log.read_text(errors="replace"),
                within=args.start_timeout,
                what="worker",
                proc=worker,
            )
            sampler = MemorySampler(worker.pid)
            sampler.start()
        window = max(1, round(args.duration / args.heavy_interval)) * args.heavy_interval
        start = math.ceil(sched.ready_at + args.warmup)
        end = start + window
        print(
            f"{'heavy' if heavy else 'baseline'} run: measuring {window:g} s from {time.ctime(start)}",
            file=sys.stderr,
        )
        await sleep_until(end)
        await settle(conn, start, end, patience=max(args.timeout, args.heavy_timeout) + 20)
        by_type = await database.window_by_type(conn, start, end)
        figures: dict[str, Any] = {
            "http": by_type.get("http"),
            "window_s": window,
            "code": code,
        }
        if heavy:
            assert sampler is not None
            await sampler.stop()
            figures["heavy"] = {
                "type": args.heavy_type,
                "monitors": heavy,
                "expected_checks": heavy * round(window / args.heavy_interval),
                **await heavy_figures(conn, start, end),
                "worker_tree_peak_pss_mib": round(sampler.peak_pss_kib / 1024, 1),
                "worker_tree_peak_rss_mib": round(sampler.peak_rss_kib / 1024, 1),
                "worker_tree_peak_processes": sampler.peak_processes,
                "cap_mib": args.worker_memory_mb * args.worker_concurrency,
            }
        return figures
    finally:
        if sampler is not None:
            await sampler.stop()
        if worker is not None:
            process.stop(worker)
        sched.stop()
        nginx.stop()
        await conn.close()
        if args.keep:
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "http_monitors": args.http,
        "interval_s": args.interval,
        "heavy_monitors": args.heavy,
        "heavy_type": args.heavy_type,
        "heavy_interval_s": args.heavy_interval,
    }
    if args.baseline:
        result["baseline"] = await one_run(args, 0)
    result["with_heavy"] = await one_run(args, args.heavy)
    base, loaded = (result.get("baseline") or {}).get("http"), result["with_heavy"].get("http")
    if base and loaded and base["lateness_ms_p99"]:
        result["http_p99_ratio"] = round(loaded["lateness_ms_p99"] / base["lateness_ms_p99"], 3)
    return result


def render(r: dict[str, Any]) -> str:
    def late(fig: dict[str, Any] | None) -> str:
        if not fig:
            return "no http checks in the window"
        return (
            f"{fig['checks']} checks, {fig['errors']} errors, lateness p50/p99/max "
            f"{fig['lateness_ms_p50']} / {fig['lateness_ms_p99']} / {fig['lateness_ms_max']} ms"
        )

    lines = [
        f"heavy checks beside light ones: {r['http_monitors']} http every {r['interval_s']:g} s, "
        f"{r['heavy_monitors']} {r['heavy_type']} every {r['heavy_interval_s']:g} s"
    ]
    if "baseline" in r:
        lines.append(f"  without heavy  {late(r['baseline']['http'])}")
    lines.append(f"  with heavy     {late(r['with_heavy']['http'])}")
    if "http_p99_ratio" in r:
        lines.append(f"  http p99 with/without: {r['http_p99_ratio']:.3f} (bound: 1.2)")
    h = r["with_heavy"].get("heavy")
    if h:
        lines.append(
            f"  {h['type']}: {h['checks']} of {h['expected_checks']} checks, {h['not_run']} not run, "
            f"{h['failed']} failed{' (' + str(h['top_error']) + ')' if h['failed'] else ''}, "
            f"run p50 {h['duration_p50']} ms"
        )
        lines.append(
            f"  worker tree peak: Pss {h['worker_tree_peak_pss_mib']} MiB, "
            f"RSS {h['worker_tree_peak_rss_mib']} MiB, "
            f"{h['worker_tree_peak_processes']} processes (cap {h['cap_mib']} MiB: concurrency x per-run cap)"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.heavy", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--http", type=int, default=10_000, help="plain http monitors (default 10000)")
    add("--interval", type=float, default=30.0, help="their interval, s (default 30)")
    add("--heavy", type=int, default=20, help="heavy monitors (default 20)")
    add("--heavy-type", default="pagespeed", choices=HEAVY_TYPES)
    add("--heavy-interval", type=float, default=300.0, help="their interval, s (default 300)")
    add("--heavy-timeout", type=float, default=90.0, help="their timeout, s (default 90)")
    add("--duration", type=float, default=300.0, help="window, s (whole heavy intervals; default 300)")
    add("--warmup", type=float, default=40.0, help="before the window, s (default 40)")
    add("--baseline", action="store_true", help="first run the fleet without heavy monitors")
    add("--timeout", type=float, default=5.0, help="the http monitors' timeout, s")
    add("--worker-concurrency", type=int, default=2)
    add("--worker-memory-mb", type=int, default=1024)
    add("--scheduler-core", type=int, default=0)
    add("--worker-core", type=int, default=1)
    add("--target-core", type=int, default=1, help="nginx's core")
    add("--start-timeout", type=float, default=300.0)
    add("--redis-db", type=int, default=database.BENCH_REDIS_DB)
    add("--db-name", default=database.BENCH_DB)
    add("--rev", default=None, help="measure this commit's monitor/ and sql/ (default: the work tree)")
    add("--keep", action="store_true", help="keep the temporary directory with the logs")
    args = p.parse_args(argv)
    # What bench.scheduler's scheduler_env reads.
    args.log_level, args.concurrency, args.set = "info", None, []
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = RESULTS / f"heavy-{args.http}-{args.heavy}-{args.heavy_type}.json"
    return 0 if process.run_and_report(lambda: run(args), render, out) is not None else 130


if __name__ == "__main__":
    sys.exit(main())
