"""Configuration as code at scale: ``python -m bench.apply --monitors 10000``.

Issue 31 asks for ``monitor apply --dry-run`` of a 10,000-monitor directory in under 10 s and the
apply in under 60 s. This writes such a directory (``--monitors`` monitors, 60 % http, 25 % tcp,
15 % heartbeat, in files of 1,000; 20 Slack channels, their URL a ``${VAR}`` reference, two per
monitor; one http monitor in ten depending on a tcp one; a maintenance window over 500 monitors;
a status page of 10 groups of 100), then times, each as the real command in a process of its
own (``python -m monitor ...``, so start-up and imports count, as a user waits for them):

1. ``judge``: reading the files and judging every object (``reading`` + ``applying.judge``),
2. ``dry_run``: ``monitor apply --dry-run`` on the empty account,
3. ``apply``: ``monitor apply`` on the empty account (every object created),
4. ``again``: the same apply again ("no changes"),
5. ``change``: an apply of the files with 10 % of the monitors' ``interval_seconds`` changed,
6. ``export``: ``monitor export`` of the account,

each with its seconds, objects per second and the process's peak RSS (``wait4``'s
``ru_maxrss``). The results are checked (the monitors exist, the second apply says "no changes",
the changed ones are changed). The account ``bench-apply`` is made for the run and dropped after
it (everything of it cascades). Targets are loopback addresses, allowed by
``MONITOR_ALLOW_CIDRS=127.0.0.0/8``, so no name is resolved and nothing is dialled.

Uses ``MONITOR_DATABASE_URL`` (migrated by the code under test first). ``--rev COMMIT`` measures
that commit's ``monitor/`` (``git archive``, as ``bench.scheduler`` does). Figures, 10,000
monitors on 2 cores shared with other sessions (load 2.5-3.5), wall / CPU seconds: the apply on
an empty account took 154.1 s / 30.9 s made one create at a time (main, cc1cdb1), 11.0 s / 8.2 s
with ``monitors.create_many`` and the dependencies set together (a68d034); there, the dry run
6.2 s / 5.2 s, a no-change apply 8.3 s / 7.7 s, export 8.0 s / 6.1 s (bench/README.md, "Issue
31: monitor apply of 10,000 monitors", also at load 5-7).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import yaml

from bench.database import BENCH_SECRET_KEY
from bench.scheduler import migrate, source_tree
from monitor import db as monitor_db

ACCOUNT = "bench-apply"
CHANNELS = 20
PER_FILE = 1000
SLACK_VAR = "BENCH_APPLY_SLACK_URL"
PAGE_GROUPS, GROUP_SIZE = 10, 100
WINDOW_MONITORS = 500

# Reads and judges the files in the code under test, as `monitor apply` does before it plans.
JUDGE_CHILD = r"""
import asyncio, json, os, sys, time
from pathlib import Path
from monitor.ascode import applying
from monitor.ascode.reading import Secrets, file_texts, local_file, read_texts
from monitor.cli_support import load_settings, with_deps

async def work(deps):
    started = time.perf_counter()
    doc = read_texts(file_texts([Path(sys.argv[1])]), Secrets(os.environ, local_file))
    read = time.perf_counter()
    desired = await applying.judge(deps, doc)
    done = time.perf_counter()
    objects = sum(len(v) for v in desired.values())
    return {"read_s": read - started, "judge_s": done - read, "objects": objects}

print(json.dumps(asyncio.run(with_deps(load_settings("database_url", "secret_key"), work))))
"""


def _monitor(i: int, n: int, changed: bool) -> tuple[str, dict[str, Any]]:
    """The ``i``-th monitor of ``n``: its key and its object in the file."""
    host = f"127.0.{i // 250 % 250}.{i % 250 + 1}"
    channels = [f"ch-{i % CHANNELS}", f"ch-{(i + 7) % CHANNELS}"]
    interval = 120 if changed else 60
    kind = i % 20
    if kind < 12:
        obj: dict[str, Any] = {
            "url": f"http://{host}:8080/health/{i}",
            "interval_seconds": interval,
            "tags": ["web", f"team-{i % 8}"],
            "channels": channels,
        }
        if kind == 0:
            obj["depends_on"] = [f"tcp-{(i + 12) % n}"] if (i + 12) % 20 < 17 else []
        if kind == 1:
            obj["assertions"] = [{"type": "keyword", "keyword": "ok"}]
        return f"http-{i}", {k: v for k, v in obj.items() if v != []}
    if kind < 17:
        obj = {"type": "tcp", "host": host, "port": 1000 + i % 60000, "interval_seconds": interval}
        return f"tcp-{i}", obj | {"channels": channels[:1], "tags": ["net"]}
    obj = {"type": "heartbeat", "interval_seconds": interval * 60, "grace_seconds": 300}
    return f"beat-{i}", obj | {"channels": channels[1:]}


def write_documents(where: Path, n: int, changed_every: int = 0) -> int:
    """The files of ``n`` monitors in ``where``; every ``changed_every``-th monitor with another
    interval. How many objects the files hold."""
    where.mkdir(parents=True, exist_ok=True)
    for old in where.glob("*.yaml"):
        old.unlink()
    channels = {f"ch-{c}": {"kind": "slack", "config": {"url": f"${{{SLACK_VAR}}}"}} for c in range(CHANNELS)}
    keys = []
    for first in range(0, n, PER_FILE):
        monitors = {}
        for i in range(first, min(n, first + PER_FILE)):
            key, obj = _monitor(i, n, changed_every > 0 and i % changed_every == 0)
            monitors[key] = obj
            keys.append(key)
        _write(where / f"monitors-{first // PER_FILE:03d}.yaml", {"monitors": monitors})
    window = {
        "recurring": {"rrule": "FREQ=WEEKLY;BYDAY=SU", "starts_at": "2026-01-04T02:00",
                      "duration_minutes": 60, "timezone": "Europe/Berlin"},
        "monitors": keys[:WINDOW_MONITORS],
    }  # fmt: skip
    groups = [
        {"name": f"Group {g}", "monitors": keys[g * GROUP_SIZE : (g + 1) * GROUP_SIZE]}
        for g in range(PAGE_GROUPS)
        if keys[g * GROUP_SIZE : (g + 1) * GROUP_SIZE]
    ]
    page = {"slug": "bench-apply", "title": "Bench status", "groups": groups}
    _write(where / "channels.yaml", {"version": 1, "channels": channels})
    _write(where / "other.yaml", {"maintenance": {"sunday": window}, "status_pages": {"public": page}})
    return n + CHANNELS + 2


def _write(path: Path, document: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(document, sort_keys=False, width=10_000), encoding="utf-8")


def _timed(argv: list[str], src: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run ``argv`` in ``src``: (seconds, CPU seconds, peak RSS in KiB, stdout); an error naming
    the command when it fails. Reaped by ``wait4``, whose usage has the child's CPU and peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=src, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:5])} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout


def _figures(seconds: float, cpu: float, peak_kib: int, objects: int) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 2),
        "objects_per_s": round(objects / seconds),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


async def _account(conn: asyncpg.Connection) -> None:
    await conn.execute("DELETE FROM accounts WHERE name = $1", ACCOUNT)
    await conn.execute("INSERT INTO accounts (name) VALUES ($1)", ACCOUNT)


async def _count(dsn: str, sql: str) -> int:
    conn = await monitor_db.connect(dsn)
    try:
        return int(await conn.fetchval(sql, ACCOUNT))
    finally:
        await conn.close()


MONITORS_SQL = "SELECT count(*) FROM monitors m JOIN accounts a ON a.id = m.account_id WHERE a.name = $1"
CHANGED_SQL = MONITORS_SQL + " AND m.interval_seconds IN (120, 7200)"


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    dsn = os.environ["MONITOR_DATABASE_URL"]
    src, code = source_tree(args.rev, tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_")}
    env.update(
        MONITOR_DATABASE_URL=dsn,
        MONITOR_SECRET_KEY=BENCH_SECRET_KEY,
        MONITOR_ALLOW_CIDRS="127.0.0.0/8",
        MONITOR_LOG_LEVEL="warning",
        PYTHONPATH=str(src),
    )
    env[SLACK_VAR] = "https://hooks.slack.com/services/T0/B0/bench"
    migrate(env, src)
    docs = tmp / "docs"
    objects = write_documents(docs, args.monitors)
    monitor = [sys.executable, "-m", "monitor"]
    apply = [*monitor, "apply", "-f", str(docs), "--account", ACCOUNT]
    phases: dict[str, dict[str, Any]] = {}

    def phase(name: str, argv: list[str], handled: int, *, profile: bool = False) -> str:
        if profile and args.profile is not None:
            argv = [sys.executable, "-m", "cProfile", "-o", str(args.profile), *argv[1:]]
        try:
            seconds, cpu, peak, out = _timed(argv, src, env)
        except RuntimeError as exc:  # reported, and the next phases still measured
            phases[name] = {"failed": str(exc).strip().splitlines()[-1][:200]}
            print(f"{name}: {exc}", file=sys.stderr)
            return ""
        phases[name] = _figures(seconds, cpu, peak, handled)
        print(f"{name}: {seconds:.2f} s", file=sys.stderr)
        return out

    def wrong(name: str, problem: str) -> None:
        phases[name]["wrong"] = problem
        print(f"{name}: {problem}", file=sys.stderr)

    asyncio.run(_with_conn(dsn, _account))
    try:
        seconds, cpu, peak, out = _timed([sys.executable, "-c", JUDGE_CHILD, str(docs)], src, env)
        judged = json.loads(out.strip().splitlines()[-1])
        if judged["objects"] != objects:
            raise RuntimeError(f"judged {judged['objects']} objects of {objects}")
        phases["judge"] = _figures(seconds, cpu, peak, objects) | {
            "read_s": round(judged["read_s"], 2),
            "judge_s": round(judged["judge_s"], 2),
        }
        phase("dry_run", [*apply, "--dry-run"], objects)
        out = phase("apply", apply, objects, profile=True)
        made = asyncio.run(_count(dsn, MONITORS_SQL))
        if made != args.monitors or f"{objects} created" not in out:
            wrong("apply", f"made {made} monitors of {args.monitors}")
        out = phase("again", apply, objects)
        if "no changes" not in out:
            wrong("again", "not 'no changes'")
        write_documents(docs, args.monitors, changed_every=10)
        changes = len(range(0, args.monitors, 10))
        phase("change", apply, objects)
        phases["change"]["changes"] = changes
        if (changed := asyncio.run(_count(dsn, CHANGED_SQL))) != changes:
            wrong("change", f"{changed} monitors changed, not {changes}")
        phase("export", [*monitor, "export", "--account", ACCOUNT, "-o", str(tmp / "export.yaml")], objects)
    finally:
        asyncio.run(_with_conn(dsn, _drop))
    return {"code": code, "monitors": args.monitors, "objects": objects, "phases": phases}


async def _drop(conn: asyncpg.Connection) -> None:
    await conn.execute("DELETE FROM accounts WHERE name = $1", ACCOUNT)


async def _with_conn(dsn: str, work: Any) -> None:
    conn = await monitor_db.connect(dsn)
    try:
        await work(conn)
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.apply", description=__doc__.split("\n")[0])
    parser.add_argument("--monitors", type=int, default=10_000, help="monitors in the files")
    parser.add_argument("--rev", default=None, help="measure this commit's monitor/ (default: the work tree)")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="profile the apply phase with cProfile into this file (pstats)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if not os.environ.get("MONITOR_DATABASE_URL"):
        parser.error("MONITOR_DATABASE_URL is not set (the database to measure on)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    try:
        result = run(args, tmp)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"{result['code']}: {result['monitors']} monitors, {result['objects']} objects")
    for name, figures in result["phases"].items():
        print(f"  {name:8} " + " ".join(f"{k}={v}" for k, v in figures.items()))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
