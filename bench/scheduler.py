"""Scheduler benchmark: the real ``monitor scheduler`` on one core against a local nginx.

    python -m bench.scheduler --monitors N --interval SECONDS --duration SECONDS
                              [--scenario status|keyword] [--warmup SECONDS] [--json PATH] [--profile] ...

One run: nginx on the target core; the benchmark database reset and N monitors inserted;
(an empty scheduler started and stopped first, for the baseline RSS); the scheduler started
on its own core; after the warm-up, a window of ``--duration`` seconds (rounded to whole
intervals) is measured; then everything started is stopped by PID. bench/README.md
describes each figure.

Scenarios (``--scenario``): ``status`` (the default), every monitor a plain GET of nginx's
``200 ok`` judged by its status; ``keyword``, every monitor a GET of a static 100 KiB page with
a keyword assertion whose keyword sits at the page's end, so each check reads and searches it all;
``mix``, monitors of the types ``--mix`` names (default: http, tcp, dns, tls, ping and heartbeat
in equal shares) against local servers on loopback (bench/fleet.py), with figures per type.

``--schedulers K`` runs K schedulers on one database instead, each on its own core, and
reports for the cluster and each member (bench/schedulers.py).
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
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench import database, fleet, proc, process, pyspy
from bench.nginx import PAGE_BYTES, PAGE_KEYWORD, Nginx, free_port

RESULTS = Path(__file__).resolve().parent / "results"
# Why info and not warning: `scheduler.started`, the readiness mark, is logged at info.
# With every check succeeding the scheduler logs nothing per check at info either.
DEFAULT_LOG_LEVEL = "info"
SCENARIOS = {
    "status": "GET of `200 ok`, judged by its status",
    "keyword": f"GET of a {PAGE_BYTES // 1024} KiB page, keyword assertion on its last bytes",
    "mix": "monitors of several types against local servers on loopback (bench/fleet.py)",
}


def monitor_target(scenario: str, nginx: Nginx) -> tuple[str, dict[str, Any] | None]:
    """Every monitor's URL and ``monitors.settings`` in ``scenario`` (None: the column's default)."""
    if scenario == "keyword":
        return nginx.page_url, {"assertions": [{"type": "keyword", "keyword": PAGE_KEYWORD}]}
    return nginx.url, None


@dataclass
class SchedulerProcess:
    """``python -m monitor scheduler`` pinned to one core, its log parsed as JSON lines."""

    env: dict[str, str]
    log: Path
    core: int | None
    src: Path  # the tree whose monitor/ is run: the work tree, or a --rev exported from git
    proc: subprocess.Popen[bytes] | None = None
    spawned_at: float = 0.0
    ready_at: float = 0.0
    events: Counter[str] = field(default_factory=Counter)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, within: float) -> None:
        argv = [sys.executable, "-m", "monitor", "scheduler"]
        self.spawned_at = time.time()
        self.proc = process.spawn(argv, log=self.log, env=self.env, core=self.core, cwd=self.src)
        try:
            await process.wait_for(self._started, within=within, what="scheduler", proc=self.proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; its log ends with:\n{self.tail()}") from None
        self.ready_at = time.time()

    def _started(self) -> bool:
        # Each poll reads the log from the start; it is a few lines long at this point.
        return any(line.get("event") == "scheduler.started" for line in self.lines())

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log.read_text(errors="replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                line = {"event": "non-json output", "level": "error", "text": raw[:300]}
            out.append(line if isinstance(line, dict) else {"event": "non-json output", "text": raw})
        return out

    def tail(self, n: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> bool:
        if self.proc is None:
            return True
        clean = process.stop(self.proc, signal.SIGTERM, timeout=30)
        self.proc = None
        return clean


def scheduler_env(urls: database.Urls, args: argparse.Namespace, src: Path) -> dict[str, str]:
    # The settings reject unknown MONITOR_* names: start from an environment without any.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env.update(
        MONITOR_DATABASE_URL=urls.database,
        MONITOR_REDIS_URL=urls.redis,
        # Loopback is reachable only because it is allow-listed, as an operator would do it.
        MONITOR_ALLOW_CIDRS="127.0.0.1/32",
        MONITOR_MIN_INTERVAL_SECONDS="1",
        MONITOR_LOG_FORMAT="json",
        MONITOR_LOG_LEVEL=args.log_level,
    )
    # The settings refuse unknown names, and older trees lack these.
    config = (src / "monitor" / "config.py").read_text()
    if "scheduler_http_port:" in config:
        # Its health/metrics listener must not collide with a scheduler already running here.
        env["MONITOR_SCHEDULER_HTTP_PORT"] = str(free_port())
    if "secret_key:" in config:
        env["MONITOR_SECRET_KEY"] = database.BENCH_SECRET_KEY
    if "spool_dir:" in config:
        # The spool of results (on by default) in the machine's temporary directory, not the home's.
        env["MONITOR_SPOOL_DIR"] = str(Path(tempfile.gettempdir()) / "monitor-bench-spool")
    if args.concurrency is not None:
        env["MONITOR_CHECK_CONCURRENCY"] = str(args.concurrency)
    for item in args.set:
        name, _, value = item.partition("=")
        env[name if name.startswith("MONITOR_") else f"MONITOR_{name.upper()}"] = value
    return env


def window_length(duration: float, interval: float) -> tuple[float, int | None]:
    """The measured window and the exact checks per monitor in it (None if not computable).

    Any window that is a whole number of intervals long holds exactly that number of ticks
    of every monitor, wherever its offset, so a duration of at least one interval is rounded
    to the nearest whole number of intervals.
    """
    if duration < interval:
        return duration, None
    count = max(1, round(duration / interval))
    return count * interval, count


async def sleep_until(wall: float) -> None:
    await asyncio.sleep(max(0.0, wall - time.time()))


async def settle(conn: asyncpg.Connection, start: float, end: float, patience: float) -> int:
    """Wait until the checks scheduled in the window have all landed (their count holds still
    over two polls a second apart), at most ``patience`` seconds past the window."""
    deadline = end + patience
    await sleep_until(end + 1.5)  # the writer flushes every second
    previous = -1
    while True:
        current = await database.count_due(conn, start, end)
        if current == previous or time.time() > deadline:
            return current
        previous = current
        await asyncio.sleep(1.0)


async def wait_quiet(within: float, threshold: float = 0.25) -> bool:
    """Wait (up to ``within`` s) until no core is busier than ``threshold`` over 2 s.

    The machine is shared: a test suite running meanwhile would be measured as lateness.
    """
    deadline = time.time() + within
    told = False
    while True:
        before = proc.CoreTimes.read()
        await asyncio.sleep(2)
        busy = proc.CoreTimes.read().busy_seconds_since(before)
        if max(busy) / 2 <= threshold:
            return True
        if time.time() > deadline:
            print(f"warning: machine still busy (cores {busy} s of 2 s); measuring anyway", file=sys.stderr)
            return False
        if not told:
            print("waiting for a quiet machine (other processes use the cores)", file=sys.stderr)
            told = True


@dataclass(frozen=True)
class Baseline:
    rss_kib: int
    cpu_per_s: float | None  # the empty scheduler's own CPU (timers, loops), CPU-s per second


async def measure_empty(
    env: dict[str, str], log: Path, core: int | None, src: Path, within: float, seconds: float = 5.0
) -> Baseline:
    """RSS and idle CPU of a scheduler with no monitors, over ``seconds`` (``--empty-seconds``)
    from 2 s after it started."""
    empty = SchedulerProcess(env, log, core, src)
    try:
        await empty.start(within)
        await asyncio.sleep(2)  # past start-up: the writer, relay and reconcile loops have run
        before = proc.cpu(empty.pid)
        await asyncio.sleep(seconds)
        return Baseline(proc.rss_kib(empty.pid), (proc.cpu(empty.pid) - before).total / seconds)
    finally:
        empty.stop()


def source_tree(rev: str | None, tmp: Path) -> tuple[Path, str]:
    """Where to run monitor/ from, and which code that is.

    Without ``rev``: the work tree as it is (``+dirty`` when monitor/ or sql/ has uncommitted
    changes). With it: that commit's monitor/ and sql/, exported into ``tmp``, so a run
    measures a fixed version while others edit the tree.
    """
    repo = str(database.REPO)

    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", repo, *argv], capture_output=True, text=True, check=True).stdout

    if rev is None:
        try:
            head = git("rev-parse", "--short", "HEAD").strip()
            dirty = git("status", "--porcelain", "--", "monitor", "sql").strip()
        except (OSError, subprocess.CalledProcessError):
            return database.REPO, "unknown"
        return database.REPO, head + ("+dirty" if dirty else "")
    commit = git("rev-parse", "--short", f"{rev}^{{commit}}").strip()
    src = tmp / "src"
    src.mkdir()
    archive = subprocess.run(
        ["git", "-C", repo, "archive", commit, "monitor", "sql"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    return src, commit


def migrate(env: dict[str, str], src: Path) -> None:
    """Apply the migrations of the code under test, with its own runner."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "migrate"], cwd=src, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"monitor migrate failed: {(done.stderr or done.stdout)[-1500:]}")


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _log_time(line: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(line["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return None


async def run(args: argparse.Namespace) -> dict[str, Any]:
    n, interval = args.monitors, args.interval
    window, per_monitor = window_length(args.duration, interval)
    if window != args.duration:
        print(f"note: window {window:g} s (a whole number of {interval:g} s intervals)", file=sys.stderr)
    urls = database.service_urls(args.db_name, args.redis_db)
    # The harness itself stays off the scheduler's core.
    if args.target_core is not None:
        os.sched_setaffinity(0, {args.target_core})
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-"))
    try:
        src, code = await asyncio.to_thread(source_tree, args.rev, tmp)
        env = scheduler_env(urls, args, src)
        await database.create(urls, sorted(p.name for p in (src / "sql").glob("*.sql")))
        await asyncio.to_thread(migrate, env, src)
        conn = await asyncpg.connect(urls.database)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    nginx = Nginx(tmp / "nginx", core=args.target_core)
    sched = SchedulerProcess(env, tmp / "scheduler.log", args.scheduler_core, src)
    sampler: subprocess.Popen[bytes] | None = None
    servers = fleet.LocalServers(tmp / "fleet") if args.scenario == "mix" else None
    pinger: fleet.Pinger | None = None
    by_type: dict[str, dict[str, Any]] | None = None
    load_before = proc.load_average()
    failed = True
    try:
        if args.wait_quiet > 0:
            await wait_quiet(args.wait_quiet)
            load_before = proc.load_average()
        await nginx.start()
        if servers is not None:
            await servers.start()
            env["MONITOR_CA_FILE"] = str(servers.ca_file)  # the tls targets' CA
        await database.reset(conn)
        baseline = Baseline(args.empty_rss_kib, None) if args.empty_rss_kib is not None else None
        if baseline is None:
            baseline = await measure_empty(
                env,
                tmp / "scheduler-empty.log",
                args.scheduler_core,
                src,
                args.start_timeout,
                args.empty_seconds,
            )
        inserted = time.monotonic()
        settings: dict[str, Any] | None = None
        if servers is not None:
            counts = await fleet.insert(
                conn, args.mix, n, servers, http_url=nginx.url, interval=interval, check_timeout=args.timeout
            )
        else:
            url, settings = monitor_target(args.scenario, nginx)
            await database.insert_monitors(
                conn, n, url=url, interval=interval, check_timeout=args.timeout, settings=settings
            )
            counts = {args.scenario: n}
        insert_s = time.monotonic() - inserted

        await sched.start(args.start_timeout)
        pid = sched.pid
        if counts.get("heartbeat"):
            pinger = fleet.Pinger(urls.database, interval)
            await pinger.start()
        loop = "uvloop" if proc.maps_mention(pid, "uvloop") else "asyncio"
        window_start = math.ceil((sched.ready_at + args.warmup) * 1000) / 1000
        window_end = window_start + window
        print(
            f"scheduler pid {pid} ready {sched.ready_at - sched.spawned_at:.1f} s after start ({loop}); "
            f"measuring {window:g} s from {datetime.fromtimestamp(window_start).isoformat()}",
            file=sys.stderr,
        )

        await sleep_until(window_start)
        cpu_start, cores_start = proc.cpu(pid), proc.CoreTimes.read()
        threads_start = proc.thread_cpu(pid)
        nginx_start = nginx.counters()
        rows_start = await database.count_rows(conn)
        if args.profile:
            sampler = pyspy.record(
                pid, window, tmp / "pyspy.txt", core=args.target_core, native=args.profile_native
            )

        await sleep_until(window_end)
        cpu_end, cores_end = proc.cpu(pid), proc.CoreTimes.read()
        threads_end = proc.thread_cpu(pid)
        rss = proc.rss_kib(pid)
        nginx_end = nginx.counters()
        rows_end = await database.count_rows(conn)

        await settle(conn, window_start, window_end, patience=args.timeout + 15)
        stats = await database.window_stats(conn, window_start, window_end, per_monitor)
        # With assertions, the rows must show they were judged, or the run measured a status check.
        judged = await database.count_judged(conn, window_start, window_end) if settings else None
        if servers is not None:
            by_type = await database.window_by_type(conn, window_start, window_end)
        first = await database.first_checks(conn, sched.spawned_at)
        profiled: dict[str, object] | None = None
        if sampler is not None:
            sampler.wait(30)
            sampler = None
            try:
                summary = pyspy.summarise(tmp / "pyspy.txt")
            except RuntimeError as exc:  # the figures stand without a profile
                print(f"warning: {exc}", file=sys.stderr)
                profiled = {"error": str(exc)}
            else:
                print(pyspy.render(summary), file=sys.stderr)
                profiled = summary.as_dict()
                if args.profile_out:
                    shutil.copy(tmp / "pyspy.txt", args.profile_out)
        failed = False
    finally:
        if sampler is not None:
            process.stop(sampler, signal.SIGINT, timeout=10)
        if pinger is not None:
            await pinger.stop()
        stopped_clean = sched.stop()
        nginx.stop()
        if servers is not None:
            await servers.stop()
        await conn.close()
        lines = sched.lines() if sched.log.exists() else []
        if args.keep or failed:  # a failed run keeps its logs for the post-mortem
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    events = Counter(
        str(line.get("event")) for line in lines if line.get("level") in ("warning", "error", "critical")
    )
    skipped_in_window = sum(
        1
        for line in lines
        if line.get("event") == "check.skipped" and window_start <= (_log_time(line) or 0) < window_end + 1
    )
    # The first few warnings as logged, minus the expected one about the allow-list.
    warning_samples = [
        line
        for line in lines
        if line.get("level") in ("warning", "error", "critical") and line.get("event") != "ssrf.allow_cidrs"
    ][:10]
    stopped = next((line for line in lines if line.get("event") == "scheduler.stopped"), {})

    used = cpu_end - cpu_start
    cpu = used.total
    core_busy = cores_end.busy_seconds_since(cores_start)
    sched_core = args.scheduler_core if args.scheduler_core is not None else 0
    requests = nginx_end.requests - nginx_start.requests - 1  # less our own stub_status request
    accepts = nginx_end.accepts - nginx_start.accepts - 1
    expected_total = n / interval
    result: dict[str, Any] = {
        "scenario": args.scenario,
        "monitors": n,
        "interval_s": interval,
        "checks_per_s": _round(stats.checks / window),
        "expected_checks_per_s": _round(expected_total),
        "cpu_s_per_1000_checks": _round(1000 * cpu / stats.checks if stats.checks else None),
        "rss_mib": _round(rss / 1024),
        "rss_kib_per_monitor": _round((rss - baseline.rss_kib) / n if n else None),
        "lateness_ms_p50": _round(stats.lateness_p50),
        "lateness_ms_p99": _round(stats.lateness_p99),
        "lateness_ms_p999": _round(stats.lateness_p999),
        "checks_per_monitor_min": stats.per_monitor_min,
        "checks_per_monitor_max": stats.per_monitor_max,
        "checks_per_monitor_expected": per_monitor if per_monitor is not None else _round(window / interval),
        "rows_written_per_s": _round((rows_end - rows_start) / window),
        "new_conns_per_check": _round(accepts / requests if requests > 0 else None),
        # Extras.
        "scenario_detail": SCENARIOS[args.scenario],
        "monitors_by_type": counts,
        "by_type": by_type,
        "checks_judged": judged,
        "window_s": window,
        "warmup_s": args.warmup,
        "checks_in_window": stats.checks,
        "monitors_off_expected_count": stats.monitors_off_expected,
        "lateness_ms_max": _round(stats.lateness_max),
        "cpu_s": _round(cpu),
        "cpu_core_share": _round(cpu / window),
        # Kernel time is mostly the sockets: connect, the handshake on loopback, close.
        "cpu_user_s": _round(used.user),
        "cpu_system_s": _round(used.system),
        # CPU by thread name; libuv's getaddrinfo pool and the like are invisible to py-spy.
        "cpu_s_by_thread": proc.thread_cpu_delta(threads_start, threads_end),
        "rss_empty_mib": _round(baseline.rss_kib / 1024),
        "empty_cpu_s_per_s": _round(baseline.cpu_per_s),
        "first_check_max_delay_s": _round(first.max_delay_s),
        "first_check_max_delay_after_ready_s": _round(
            None if first.max_delay_s is None else first.max_delay_s - (sched.ready_at - sched.spawned_at)
        ),
        "monitors_never_checked": first.never_checked,
        "ready_after_s": _round(sched.ready_at - sched.spawned_at),
        "skipped": events.get("check.skipped", 0),
        "skipped_in_window": skipped_in_window,
        "errors": stats.errors,
        "error_samples": stats.error_samples,
        "log_warnings": dict(events),
        "warning_samples": warning_samples,
        "nginx_requests_per_s": _round(requests / window),
        "scheduler_core_other_busy_s": _round(core_busy[sched_core] - cpu),
        # More than 5 % of the scheduler's core used by others: lateness is not ours alone.
        "contended": core_busy[sched_core] - cpu > 0.05 * window,
        "core_busy_s": [_round(b) for b in core_busy],
        "load_average_before": _round(load_before, 2),
        "loop": loop,
        "concurrency": args.concurrency,
        "timeout_s": args.timeout,
        "insert_s": _round(insert_s),
        "stopped_clean": stopped_clean and bool(stopped.get("clean", False)),
        "code": code,
        "profile": profiled,
    }
    return result


def render(r: dict[str, Any]) -> str:
    def num(value: Any, spec: str = ".2f") -> str:
        return "n/a" if value is None else format(value, spec)

    first = (
        f"latest {num(r['first_check_max_delay_s'], '.1f')} s after start, "
        f"{num(r['first_check_max_delay_after_ready_s'], '.1f')} s after ready "
        f"(interval {r['interval_s']:g} s)"
        if r["first_check_max_delay_s"] is not None
        else f"{r['monitors_never_checked']} monitors not checked yet"
    )
    rows = [
        ("checks/s", f"{num(r['checks_per_s'])}  (expected {num(r['expected_checks_per_s'])})"),
        (
            "checks per monitor",
            f"{r['checks_per_monitor_min']}..{r['checks_per_monitor_max']}  "
            f"(expected {r['checks_per_monitor_expected']}; {r['monitors_off_expected_count']} monitors off)",
        ),
        (
            "CPU-s per 1000 checks",
            f"{num(r['cpu_s_per_1000_checks'], '.3f')}  "
            f"({num(r['cpu_s'])} CPU-s in {r['window_s']:g} s"
            f" = {num(100 * r['cpu_core_share'], '.1f')}% of a core; "
            f"{num(r['cpu_system_s'])} s in the kernel)",
        ),
        (
            "RSS",
            f"{num(r['rss_mib'], '.1f')} MiB  (empty {num(r['rss_empty_mib'], '.1f')} MiB; "
            f"{num(r['rss_kib_per_monitor'], '.2f')} KiB per monitor)",
        ),
        (
            "lateness p50/p99/p99.9",
            f"{num(r['lateness_ms_p50'])} / {num(r['lateness_ms_p99'])} / {num(r['lateness_ms_p999'])} ms"
            f"  (max {num(r['lateness_ms_max'])})",
        ),
        ("rows written/s", num(r["rows_written_per_s"])),
        ("new TCP conns per check", num(r["new_conns_per_check"], ".3f")),
        ("first checks", first),
        ("skipped / errors", f"{r['skipped']} (in window {r['skipped_in_window']}) / {r['errors']}"),
        ("other work on sched core", f"{num(r['scheduler_core_other_busy_s'])} CPU-s in window"),
    ]
    for kind, t in (r.get("by_type") or {}).items():
        late = (
            f"lateness p50/p99 {num(t['lateness_ms_p50'])} / {num(t['lateness_ms_p99'])} ms"
            if t["lateness_ms_p50"] is not None
            else "(pings: no lateness)"
        )
        rows.append(
            (
                f"  {kind}",
                f"{t['checks']} checks, {t['errors']} errors, {late}, "
                f"latency p50/p99 {num(t['latency_ms_p50'])} / {num(t['latency_ms_p99'])} ms"
                + (f"; {t['top_error']}" if t["errors"] else ""),
            )
        )
    if r["checks_judged"] is not None:
        rows.append(("assertions judged", f"{r['checks_judged']} of {r['checks_in_window']} window checks"))
    head = (
        f"scheduler, scenario {r['scenario']} ({r['scenario_detail']}"
        + (f"; {r['monitors_by_type']}" if r["scenario"] == "mix" else "")
        + "): "
        f"{r['monitors']} monitors every {r['interval_s']:g} s, {r['window_s']:g} s window "
        f"after {r['warmup_s']:g} s warm-up ({r['loop']}, ready in {num(r['ready_after_s'], '.1f')} s)"
    )
    width = max(len(name) for name, _ in rows)
    body = [f"  {name:<{width}}  {value}" for name, value in rows]
    if r["contended"]:
        body.append("  WARNING: other processes used the scheduler's core; lateness figures are suspect")
    if r["error_samples"]:
        body.append("  error samples: " + "; ".join(f"{e} x{c}" for e, c in r["error_samples"]))
    if r["log_warnings"]:
        body.append("  log warnings: " + ", ".join(f"{e} x{c}" for e, c in r["log_warnings"].items()))
    if not r["checks_in_window"]:
        # Checks ran (or not) but no row landed: the figures above measure nothing.
        body.append("  ERROR: no check of the window reached the checks table; the scheduler logged:")
        body.extend(f"    {json.dumps(line)[:300]}" for line in r["warning_samples"][:3])
    elif r["checks_judged"] is not None and r["checks_judged"] < r["checks_in_window"]:
        body.append("  WARNING: some window checks record no assertion outcome: not all were judged")
    return "\n".join([head, *body])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scheduler", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--monitors", type=int, required=True, help="number of monitors")
    add("--interval", type=float, required=True, help="check interval of every monitor, s")
    add(
        "--scenario", default="status", choices=list(SCENARIOS), help="what each check does (default: status)"
    )
    add(
        "--mix",
        default="all",
        help="scenario mix: types and weights, e.g. http,tcp or http=2,dns=1 (all: six)",
    )
    add("--duration", type=float, required=True, help="measured window, s (whole intervals)")
    add("--warmup", type=float, default=None, help="before the window, s (5 + 1 interval, max 65)")
    add("--json", type=Path, default=None, help="write the result here (default bench/results/)")
    add("--timeout", type=float, default=5.0, help="each monitor's check timeout, s")
    add("--concurrency", type=int, default=None, help="MONITOR_CHECK_CONCURRENCY (default: its default)")
    add("--set", action="append", default=[], metavar="NAME=VALUE", help="another scheduler setting")
    add("--empty-rss-kib", type=int, default=None, help="baseline RSS; skips the empty-scheduler pass")
    add("--empty-seconds", type=float, default=5.0, help="how long the empty scheduler's idle CPU is read")
    add("--profile", action="store_true", help="sample the window with py-spy and summarise")
    add("--profile-out", type=Path, default=None, help="keep py-spy's collapsed stacks here")
    add("--profile-native", action="store_true", help="include C frames (py-spy --native; costlier)")
    add("--log-level", default=DEFAULT_LOG_LEVEL, choices=["debug", "info"], help="scheduler log level")
    add("--scheduler-core", type=int, default=0)
    add(
        "--target-core",
        type=_core,
        default=None,
        help="nginx, py-spy and this harness (none: unpinned; default 1, unpinned with --schedulers)",
    )
    add("--schedulers", type=int, default=None, help="K schedulers on one database (bench/schedulers.py)")
    add("--scheduler-cores", default=None, help="with --schedulers: cores, e.g. 0,1 (default 0..K-1)")
    add("--lease", type=float, default=None, help="with --schedulers: MONITOR_LEASE_SECONDS")
    add("--redis-db", type=int, default=database.BENCH_REDIS_DB, help="Redis db of the run")
    add("--start-timeout", type=float, default=300.0, help="wait for scheduler.started, s")
    add("--rev", default=None, help="measure this commit's monitor/ and sql/ (default: the work tree)")
    add("--db-name", default=database.BENCH_DB)
    add("--wait-quiet", type=float, default=0, help="first wait up to this long for idle cores, s")
    add("--keep", action="store_true", help="keep the temporary directory with the logs")
    args = p.parse_args(argv)
    if args.monitors < 1 or args.interval <= 0 or args.duration <= 0:
        p.error("--monitors must be at least 1, --interval and --duration positive")
    try:
        args.mix = fleet.parse_mix(args.mix)
    except ValueError as exc:
        p.error(f"--mix: {exc}")
    if args.warmup is None:
        args.warmup = 5 + min(args.interval, 60)
    if args.schedulers is not None and (args.schedulers < 1 or args.scenario == "mix" or args.profile):
        p.error("--schedulers: K >= 1, and neither the mix scenario nor --profile")
    if args.target_core is None:
        args.target_core = None if args.schedulers is not None else 1
    elif args.target_core < 0:
        args.target_core = None
    if args.profile_out is not None or args.profile_native:
        args.profile = True
    return args


def _core(text: str) -> int:
    return -1 if text == "none" else int(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.schedulers is not None:
        from bench import schedulers  # it builds on this module

        out = RESULTS / f"schedulers-{args.schedulers}-{args.scenario}-{args.monitors}-{args.interval:g}.json"
        done = process.run_and_report(lambda: schedulers.run(args), schedulers.render, args.json or out)
        return 130 if done is None else 0
    name = "scheduler" if args.scenario == "status" else f"scheduler-{args.scenario}"
    if args.scenario == "mix" and len(args.mix) < len(fleet.TYPES):
        name += "-" + "-".join(args.mix)
    result = process.run_and_report(
        lambda: run(args), render, args.json or RESULTS / f"{name}-{args.monitors}-{args.interval:g}.json"
    )
    if result is None:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
