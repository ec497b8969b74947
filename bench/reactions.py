"""How soon the system reacts: to a change made through the API, and to a scheduler killed.

    python -m bench.reactions [--monitors 10000] [--repeat 5] [--lease 2] [--shared 40]
                              [--wait-quiet SECONDS] [--db-name NAME] [--redis-db N] [--json PATH]

The tests bound both only loosely, so that a loaded machine cannot fail them while a broken
path still does (tests/integration/test_reconcile_10k.py: 10 s; test_scheduler_cluster.py: ten
leases). The figures themselves are measured here, on a machine as quiet as one can get it:

* ``reconcile_s``: the real api and scheduler on the database ``monitor_bench_reactions``
  (Redis db 12), with ``--monitors`` hourly monitors loaded by COPY before the scheduler
  starts (it carries them all; the issue's case is 10,000). Through the API a monitor is
  created, its URL edited, paused, resumed and deleted, ``--repeat`` times; each figure is the
  time from the request to the scheduler's log line saying the change took effect
  (``monitor.scheduled`` or ``monitor.unscheduled``, by its ``timestamp``; the scheduler may
  act before the harness has read the answer). Target: under 2 s.
* ``takeover_after_kill_s``: two schedulers with ``MONITOR_LEASE_SECONDS=--lease`` share
  ``--shared`` monitors checked every second (the tables emptied first); once each runs a
  share, one is SIGKILLed, and the figure is the time from the kill to the start of the last
  first check of its share by the other, from the stored rows. ``--repeat`` pairs, each
  started afresh. Expected: about a lease, plus up to a renewal for the survivor to see it.

The target is an aiohttp server in the harness answering 200 on every path; every process is
started and stopped by its PID (bench/process.py). Results go to ``--json PATH``, else to
``bench/results/reactions-N.json`` (not committed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
from aiohttp import web

from bench import database, process
from bench.api import api_env, code_version, wait_quiet
from bench.nginx import free_port
from monitor import accounts
from monitor.scheduler.cluster import owner

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_DB = "monitor_bench_reactions"
BENCH_REDIS_DB = 12
TARGET_RECONCILE_S = 2.0


class Log:
    """A process's JSON log file, read afresh on each look."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def events(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        found = []
        for raw in self.path.read_text(errors="replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("event") == event:
                if all(line.get(k) == v for k, v in fields.items()):
                    found.append(line)
        return found

    async def wait(
        self, event: str, proc: subprocess.Popen[bytes], *, count: int = 1, within: float = 60, **fields: Any
    ) -> dict[str, Any]:
        """The ``count``-th line of ``event`` (with these fields), once logged."""
        await process.wait_for(
            lambda: len(self.events(event, **fields)) >= count, within=within, what=event, proc=proc
        )
        return self.events(event, **fields)[count - 1]


def at(line: Mapping[str, Any]) -> float:
    """A log line's time, epoch seconds."""
    return datetime.fromisoformat(str(line["timestamp"]).replace("Z", "+00:00")).timestamp()


def env_for(urls: database.Urls, api_port: int, **extra: str) -> dict[str, str]:
    """bench/api.py's settings (the services, JSON logs at info, limits out of the way), with
    loopback allowed, 1 s intervals and no probe listener (several schedulers run at once)."""
    env = api_env(urls, api_port)
    env.update(
        MONITOR_ALLOW_CIDRS="127.0.0.1/32", MONITOR_MIN_INTERVAL_SECONDS="1", MONITOR_SCHEDULER_HTTP_PORT="0"
    )
    env.update(extra)
    return env


async def start_target() -> tuple[web.AppRunner, str]:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/{path:.*}", ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


class Took:
    """How long after ``since`` (epoch s) the scheduler logged the ``count``-th ``event`` of
    one monitor."""

    def __init__(self, log: Log, proc: subprocess.Popen[bytes], monitor_id: int) -> None:
        self.log, self.proc, self.monitor_id = log, proc, monitor_id

    async def __call__(self, event: str, count: int, since: float) -> float:
        line = await self.log.wait(event, self.proc, count=count, monitor_id=self.monitor_id)
        return at(line) - since


async def both_share(conn: asyncpg.Connection, names: tuple[str, str]) -> bool:
    rows = await conn.fetch("SELECT name, monitors FROM scheduler_members")
    return {r["name"] for r in rows if r["monitors"]} == set(names)


def summary_s(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "median": round(statistics.median(samples), 3),
        "min": round(min(samples), 3),
        "max": round(max(samples), 3),
    }


async def measure_reconcile(
    args: argparse.Namespace, urls: database.Urls, target: str, tmp: Path
) -> dict[str, Any]:
    conn = await asyncpg.connect(urls.database)
    try:
        await database.reset(conn)
        await database.insert_monitors(
            conn, args.monitors, url=f"{target}/bulk", interval=3600, check_timeout=5
        )
        await conn.execute("INSERT INTO monitor_state (monitor_id) SELECT id FROM monitors")
        account = await conn.fetchval("SELECT id FROM accounts WHERE name = 'bench'")
        key = (await accounts.create_key(conn, account, "bench")).key
    finally:
        await conn.close()
    port = free_port()
    api_log, scheduler_log = Log(tmp / "api.log"), Log(tmp / "scheduler.log")
    api = scheduler = None
    figures: dict[str, list[float]] = {op: [] for op in ("create", "edit", "pause", "resume", "delete")}
    try:
        api = process.spawn(
            [sys.executable, "-m", "monitor", "api"],
            log=api_log.path,
            env=env_for(urls, port),
        )
        scheduler = process.spawn(
            [sys.executable, "-m", "monitor", "scheduler"], log=scheduler_log.path, env=env_for(urls, port)
        )
        await api_log.wait("api.started", api)
        await scheduler_log.wait("scheduler.reconciled", scheduler, within=120)
        quiet = await wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else None
        base = f"http://127.0.0.1:{port}/api/v1/monitors"
        headers = {"Authorization": f"Bearer {key}"}
        async with aiohttp.ClientSession(headers=headers, trust_env=False) as http:

            async def call(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[float, Any]:
                """(when the request was sent, the answer's body): the scheduler may act on the
                change before this harness has read the answer."""
                sent = time.time()
                async with http.request(method, url, json=body) as resp:
                    assert resp.status in (200, 201, 204), (method, url, resp.status, await resp.text())
                    answer = await resp.json() if resp.status != 204 else None
                return sent, answer

            for _ in range(args.repeat):
                sent, made = await call(
                    "POST", base, {"name": "reacting", "url": f"{target}/new", "interval_seconds": 1}
                )
                one = f"{base}/{made['id']}"
                took = Took(scheduler_log, scheduler, made["id"])
                figures["create"].append(await took("monitor.scheduled", 1, sent))
                sent, _ = await call("PATCH", one, {"url": f"{target}/edited"})
                figures["edit"].append(await took("monitor.scheduled", 2, sent))
                sent, _ = await call("PATCH", one, {"paused": True})
                figures["pause"].append(await took("monitor.unscheduled", 1, sent))
                sent, _ = await call("PATCH", one, {"paused": False})
                figures["resume"].append(await took("monitor.scheduled", 3, sent))
                sent, _ = await call("DELETE", one)
                figures["delete"].append(await took("monitor.unscheduled", 2, sent))
    finally:
        for each in (scheduler, api):
            if each is not None:
                process.stop(each, signal.SIGTERM, timeout=20)
    every = [s for samples in figures.values() for s in samples]
    return {
        "monitors": args.monitors,
        "reconcile_s": {op: summary_s(samples) for op, samples in figures.items()},
        "reconcile_s_max": round(max(every), 3),
        "under_target": max(every) < TARGET_RECONCILE_S,
        "quiet_at_start": quiet,
    }


async def measure_takeover(
    args: argparse.Namespace, urls: database.Urls, target: str, tmp: Path
) -> dict[str, Any]:
    taken: list[float] = []
    stored: list[float] = []
    conn = await asyncpg.connect(urls.database)
    try:
        for round_ in range(args.repeat):
            await database.reset(conn)
            await database.insert_monitors(
                conn, args.shared, url=f"{target}/shared", interval=1, check_timeout=1
            )
            await conn.execute("INSERT INTO monitor_state (monitor_id) SELECT id FROM monitors")
            ids = [r["id"] for r in await conn.fetch("SELECT id FROM monitors")]
            names = (f"react-{round_}-a", f"react-{round_}-b")
            members: list[tuple[subprocess.Popen[bytes], Log]] = []
            try:
                for name in names:
                    log = Log(tmp / f"{name}.log")
                    extra = {"MONITOR_SCHEDULER_NAME": name, "MONITOR_LEASE_SECONDS": str(args.lease)}
                    members.append(
                        (
                            process.spawn(
                                [sys.executable, "-m", "monitor", "scheduler"],
                                log=log.path,
                                env=env_for(urls, free_port(), **extra),
                            ),
                            log,
                        )
                    )
                for member, log in members:
                    await log.wait("scheduler.started", member)

                deadline = time.monotonic() + 60
                while not await both_share(conn, names):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the two schedulers did not both take a share in 60 s")
                    await asyncio.sleep(0.1)
                share = [m for m in ids if owner(m, names) == names[0]]
                victim = members[0][0]
                victim.send_signal(signal.SIGKILL)
                killed = time.time()
                victim.wait(10)
                firsts: list[asyncpg.Record] = []
                while len(firsts) < len(share):
                    if time.time() - killed > 120:
                        raise RuntimeError(f"the share of a killed member not taken over in 120 s: {firsts}")
                    await asyncio.sleep(0.1)
                    firsts = await conn.fetch(
                        """SELECT monitor_id, min(time) AS first FROM checks
                           WHERE monitor_id = ANY($1::bigint[]) AND time > to_timestamp($2)
                           GROUP BY monitor_id""",
                        share,
                        killed,
                    )
                stored.append(time.time() - killed)
                taken.append(max(r["first"].timestamp() for r in firsts) - killed)
            finally:
                for member, _ in reversed(members):
                    process.stop(member, signal.SIGTERM, timeout=20)
    finally:
        await conn.close()
    return {
        "lease_s": args.lease,
        "shared": args.shared,
        "takeover_after_kill_s": summary_s(taken),
        "stored_after_kill_s": summary_s(stored),
        "takeover_in_leases_max": round(max(taken) / args.lease, 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, args.redis_db)
    await database.create_and_migrate(urls)
    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-reactions-"))
    runner, target = await start_target()
    failed = True
    try:
        reconcile = await measure_reconcile(args, urls, target, tmp)
        takeover = await measure_takeover(args, urls, target, tmp)
        failed = False
    finally:
        await runner.cleanup()
        if failed:
            print(f"logs kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return {**reconcile, **takeover, "repeat": args.repeat, "code": code_version()}


def render(r: dict[str, Any]) -> str:
    lines = [
        f"reconcile with {r['monitors']:,} monitors loaded "
        f"(s from the request; median, min-max of {r['repeat']}):"
    ]
    for op, s in r["reconcile_s"].items():
        lines.append(f"  {op:<7} {s['median']:.3f}  ({s['min']:.3f}-{s['max']:.3f})")
    target = "met" if r["under_target"] else "NOT met"
    lines.append(
        f"  every change under {TARGET_RECONCILE_S:g} s: {target} (max {r['reconcile_s_max']:.3f} s)"
    )
    t, w = r["takeover_after_kill_s"], r["stored_after_kill_s"]
    lines.append(
        f"takeover after a SIGKILL, lease {r['lease_s']:g} s, {r['shared']} monitors: first checks "
        f"{t['median']:.2f} s after the kill (median; {t['min']:.2f}-{t['max']:.2f}, at most "
        f"{r['takeover_in_leases_max']:g} leases), all stored {w['median']:.2f} s after"
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.reactions", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add(
        "--monitors",
        type=int,
        default=10_000,
        help="hourly monitors the scheduler carries while changes come",
    )
    add("--repeat", type=int, default=5, help="changes of each kind, and kills")
    add("--lease", type=float, default=2.0, help="MONITOR_LEASE_SECONDS of the two schedulers")
    add("--shared", type=int, default=40, help="monitors (every 1 s) the two schedulers share")
    add("--wait-quiet", type=float, default=0, help="wait up to this long for idle cores before measuring")
    add("--db-name", default=BENCH_DB)
    add("--redis-db", type=int, default=BENCH_REDIS_DB)
    add("--json", type=Path, default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = args.json or RESULTS / f"reactions-{args.monitors}.json"
    return 0 if process.run_and_report(lambda: run(args), render, out) is not None else 130


if __name__ == "__main__":
    raise SystemExit(main())
