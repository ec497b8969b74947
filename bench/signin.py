"""Sign-in benchmark (issue 28): what password sign-ins cost the real API, and what they do to
ordinary reads served by the same process on the same core.

    python -m bench.signin [--rate 20] [--duration 20] [--monitors 300] [--users 20]
                           [--json PATH] [--wait-quiet SECONDS]

The database ``monitor_bench_signin`` (Redis db 14) is emptied and loaded: one account with
``--monitors`` monitors and an API key (bench/api_data.py, one day of rollups), and ``--users``
members (editors) whose argon2id hashes are made by ``monitor.passwords`` with the parameters
the API verifies with. The real ``python -m monitor api`` runs pinned to core 0 (its hashing
threads too), this harness on core 1. Three phases of ``--duration`` seconds each:

* ``reads``: one request at a time on one keep-alive connection with the key, alternating
  ``GET /api/v1/monitors?limit=100`` and ``GET /api/v1/monitors/{id}`` (random monitor);
* ``signins``: ``POST /api/v1/session`` (e-mail and password, users in turn) open-loop at
  ``--rate`` a second: each is sent at its scheduled time on its own connection whether or not
  the earlier ones were answered, so a server that falls behind shows it as latency;
* ``both``: the two at once.

Latencies are client wall time (sent to body read), nearest-rank percentiles; ``lateness_ms``
is how late the harness sent sign-ins (its own delay, to be near 0). ``api_cpu_ms_per_signin``
is the api's CPU (/proc) in the ``signins`` phase per sign-in; ``api_cpu_share`` its CPU per
wall second in each phase. Results go to ``--json PATH``, else ``bench/results/signin.json``.

Measured here (bench/README.md, "Issue 28: sign-in"): 27.8 ms of api CPU per sign-in; at 20/s
the sign-in p50/p99 is 156/546 ms and the reads' p99 goes from 12-13 ms alone to 53-82 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
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

from bench import api_data, database, proc, process
from bench.api import Client, _started, api_env, code_version, summary_ms, wait_quiet
from bench.nginx import free_port
from monitor.passwords import Hasher

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_DB = "monitor_bench_signin"
BENCH_REDIS_DB = 14
PASSWORD = "Bench-Signin-Pass-4d2a9c71"
EMAIL = "bench-signin-{n}@example.com"


def schedule(rate: float, duration: float) -> list[float]:
    """Offsets (s from the start) at which an open-loop client sends: every 1/rate s."""
    count = int(rate * duration)
    return [n / rate for n in range(count)]


async def make_users(dsn: str, account_id: int, users: int) -> list[str]:
    """``users`` editors of the account with PASSWORD (one hash shared: verifying costs the same)."""
    hasher = Hasher(threads=1)
    try:
        hashed = await hasher.hash(PASSWORD)
    finally:
        hasher.close()
    emails = [EMAIL.format(n=n) for n in range(users)]
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute("DELETE FROM users WHERE email LIKE 'bench-signin-%'")
            for email in emails:
                user_id = await conn.fetchval(
                    "INSERT INTO users (email, password_hash) VALUES ($1, $2) RETURNING id", email, hashed
                )
                await conn.execute(
                    "INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'editor')",
                    account_id,
                    user_id,
                )
    finally:
        await conn.close()
    return emails


async def sign_ins(base_url: str, emails: list[str], rate: float, duration: float) -> dict[str, Any]:
    """Open loop: each sign-in at its time on its own connection; latencies and statuses."""
    samples: list[float] = []
    late: list[float] = []
    statuses: dict[str, int] = {}
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as http:

        async def one(n: int, due: float) -> None:
            late.append(time.perf_counter() - due)
            body = {"email": emails[n % len(emails)], "password": PASSWORD}
            started = time.perf_counter()
            async with http.post(base_url + "/api/v1/session", json=body) as response:
                await response.read()
            statuses[str(response.status)] = statuses.get(str(response.status), 0) + 1
            if response.status == 201:
                samples.append(time.perf_counter() - started)

        start = time.perf_counter()
        tasks = []
        for n, offset in enumerate(schedule(rate, duration)):
            delay = start + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(n, start + offset)))
        await asyncio.gather(*tasks)
    if not samples:
        raise RuntimeError(f"no sign-in succeeded: {statuses}")
    return {"latency_ms": summary_ms(samples), "lateness_ms": summary_ms(late), "statuses": statuses}


async def reads(client: Client, ids: list[int], duration: float, rng: random.Random) -> dict[str, Any]:
    """One read at a time for ``duration`` s: the list page and one monitor, in turn."""
    listing: list[float] = []
    single: list[float] = []
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        elapsed, body = await client.get("/api/v1/monitors", {"limit": "100"})
        assert len(body["items"]) == min(100, len(ids)), len(body["items"])
        listing.append(elapsed)
        elapsed, body = await client.get(f"/api/v1/monitors/{rng.choice(ids)}")
        single.append(elapsed)
    return {"list_100_ms": summary_ms(listing), "get_one_ms": summary_ms(single)}


async def phase(name: str, pid: int, work: Any) -> dict[str, Any]:
    cpu_before = proc.cpu(pid)
    cores_before = proc.CoreTimes.read()
    started = time.monotonic()
    out: dict[str, Any] = await work
    wall = time.monotonic() - started
    cpu = (proc.cpu(pid) - cpu_before).total
    busy = proc.CoreTimes.read().busy_seconds_since(cores_before)
    out.update(
        seconds=round(wall, 1),
        api_cpu_s=round(cpu, 2),
        api_cpu_share=round(cpu / wall, 2),
        core_busy_share=[round(b / wall, 2) for b in busy],
    )
    print(f"{name}: done in {wall:.1f} s", file=sys.stderr)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    urls = database.service_urls(args.db_name, BENCH_REDIS_DB)
    if args.harness_core is not None:
        os.sched_setaffinity(0, {args.harness_core})
    await database.create_and_migrate(urls)
    loaded = await api_data.load(
        urls.database, monitors=args.monitors, days=1, incidents=0, raw_edges=False, jobs=1, order="time",
        seed=1,
    )  # fmt: skip
    emails = await make_users(urls.database, loaded.account_id, args.users)

    tmp = Path(tempfile.mkdtemp(prefix="monitor-bench-signin-"))
    port = free_port()
    log = tmp / "api.log"
    env = api_env(urls, port)
    # Measured: the hashing, not the lockout (every sign-in here succeeds anyway).
    env.update(MONITOR_SIGNIN_ADDRESS_FREE_ATTEMPTS="100000", MONITOR_SIGNIN_FREE_ATTEMPTS="1000")
    api: subprocess.Popen[bytes] | None = None
    client: Client | None = None
    failed = True
    try:
        api = process.spawn([sys.executable, "-m", "monitor", "api"], log=log, env=env, core=args.api_core)
        await process.wait_for(lambda: _started(log), within=60, what="api", proc=api)
        base = f"http://127.0.0.1:{port}"
        client = Client(base, loaded.key)
        rng = random.Random(1)
        await reads(client, loaded.monitor_ids, 2, rng)  # warm-up
        await sign_ins(base, emails, args.rate, 2)
        quiet = await wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else None
        d = args.duration
        alone = await phase("reads", api.pid, reads(client, loaded.monitor_ids, d, rng))
        signing = await phase("signins", api.pid, sign_ins(base, emails, args.rate, d))

        async def both() -> dict[str, Any]:
            read, sign = await asyncio.gather(
                reads(client, loaded.monitor_ids, d, rng), sign_ins(base, emails, args.rate, d)
            )
            return {"reads": read, "signins": sign}

        together = await phase("both", api.pid, both())
        rss = proc.rss_kib(api.pid)
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
    signed = sum(signing["statuses"].values())
    return {
        "rate_per_s": args.rate,
        "duration_s": args.duration,
        "monitors": args.monitors,
        "users": args.users,
        "reads_alone": alone,
        "signins_alone": signing,
        "both": together,
        "api_cpu_ms_per_signin": round(1000 * signing["api_cpu_s"] / signed, 1),
        "api_rss_mib": round(rss / 1024, 1),
        "load_average": round(proc.load_average(), 2),
        "quiet_at_start": quiet,
        "api_core": args.api_core,
        "code": code_version(),
    }


def render(r: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, Any]) -> str:
        figures = f"p50 {s['p50']:>8.2f}  p99 {s['p99']:>8.2f}  max {s['max']:>8.2f} ms"
        return f"  {name:<34} {figures}  (n={s['n']})"

    a, s, b = r["reads_alone"], r["signins_alone"], r["both"]
    return "\n".join(
        [
            f"signin: {r['rate_per_s']:g}/s open-loop, {r['duration_s']:g} s a phase, "
            f"api on core {r['api_core']}",
            line("list ?limit=100, alone", a["list_100_ms"]),
            line("get one monitor, alone", a["get_one_ms"]),
            line("sign-in, alone", s["latency_ms"]),
            line("list ?limit=100, with sign-ins", b["reads"]["list_100_ms"]),
            line("get one monitor, with sign-ins", b["reads"]["get_one_ms"]),
            line("sign-in, with reads", b["signins"]["latency_ms"]),
            f"  api CPU per sign-in {r['api_cpu_ms_per_signin']} ms; "
            f"api CPU share: reads {a['api_cpu_share']}, "
            f"sign-ins {s['api_cpu_share']}, both {b['api_cpu_share']}; statuses {s['statuses']} / "
            f"{b['signins']['statuses']}; harness lateness p99 {b['signins']['lateness_ms']['p99']} ms",
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.signin", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--rate", type=float, default=20.0, help="sign-ins a second, open-loop")
    add("--duration", type=float, default=20.0, help="seconds of each of the three phases")
    add("--monitors", type=int, default=300, help="monitors of the account read")
    add("--users", type=int, default=20, help="users signing in, in turn")
    process.add_api_run_args(add, BENCH_DB)
    args = p.parse_args(argv)
    if args.rate <= 0 or args.duration <= 0 or args.monitors < 1 or args.users < 1:
        p.error("--rate, --duration, --monitors and --users must be positive")
    if args.api_core is not None and args.api_core < 0:
        args.api_core = None
    if args.harness_core is not None and args.harness_core < 0:
        args.harness_core = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = process.run_and_report(lambda: run(args), render, args.json or RESULTS / "signin.json")
    return 130 if result is None else 0


if __name__ == "__main__":
    sys.exit(main())
