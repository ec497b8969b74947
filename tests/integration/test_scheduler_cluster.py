"""Two schedulers share the monitors: each checks its share, a killed one's share moves to the
other within its lease, a stopped one hands its share over at once, and no tick is checked
twice (from the stored rows: consecutive checks of a monitor are an interval apart)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

import asyncpg
from support import ProcessFactory, TargetServer, clean_environ, wait_for

from monitor.scheduler.cluster import owner

LEASE = "2"
CLUSTER_ENV = {"MONITOR_LEASE_SECONDS": LEASE, "MONITOR_MIN_INTERVAL_SECONDS": "1"}


async def _checked_since(db: asyncpg.Connection, ids: list[int], since: float) -> set[int]:
    rows = await db.fetch(
        """SELECT DISTINCT monitor_id FROM checks
           WHERE monitor_id = ANY($1::bigint[]) AND time > to_timestamp($2)""",
        ids,
        since,
    )
    return {r["monitor_id"] for r in rows}


async def _one_row_per_tick(db: asyncpg.Connection, ids: list[int]) -> None:
    gaps = await db.fetch(
        """SELECT monitor_id, time, time - lag(time) OVER (PARTITION BY monitor_id ORDER BY time) AS gap
           FROM checks WHERE monitor_id = ANY($1::bigint[])""",
        ids,
    )
    doubled = [
        (g["monitor_id"], g["time"]) for g in gaps if g["gap"] is not None and g["gap"].total_seconds() < 0.5
    ]
    assert not doubled, f"ticks checked twice: {doubled[:5]}"


async def test_two_schedulers_share_and_take_over(
    db: asyncpg.Connection, migrated: str, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    ids = [(await monitor_factory(url=target.url(f"/m{n}"), interval_seconds=1.0))["id"] for n in range(40)]
    a = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-a"})
    b = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-b"})
    # Both run a share: a handed b's over, and each member's row says how many it runs.
    await wait_for(lambda: a.events("cluster.handed_over"), timeout=20, message=lambda: a.tail())
    members = await wait_for(lambda: _shares(db, {"sched-a", "sched-b"}, 40), timeout=20)
    shared_at = time.time()
    await wait_for(
        lambda: _all_checked(db, ids, shared_at),
        timeout=15,
        message="every monitor checked with two members",
    )
    assert {m["name"] for m in members} == {"sched-a", "sched-b"}
    status = await _cluster_status(migrated)
    assert [(m["name"], m["state"]) for m in status] == [("sched-a", "live"), ("sched-b", "live")], status
    assert sum(m["monitors"] for m in status) == 40 and all(m["lease_left_s"] > 0 for m in status)

    # SIGKILL a: its share moves to b once its lease lapsed. How soon is a figure of
    # bench/reactions.py (takeover_after_kill_s, about a lease and a renewal); the bound here
    # is ten leases, room for a loaded machine, short of the 30 s of a periodic reconcile.
    a.send_signal(signal.SIGKILL)
    killed = time.time()
    await wait_for(lambda: _all_checked(db, ids, killed + float(LEASE)), timeout=30, message=lambda: b.tail())
    assert time.time() - killed < 10 * float(LEASE)

    # A new member started, then stopped by SIGTERM: it hands its share back at once.
    c = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-c"})
    await wait_for(lambda: _shares(db, {"sched-b", "sched-c"}, 40), timeout=20, message=lambda: c.tail())
    assert await c.terminate() == 0, c.tail()
    stopped = time.time()
    await wait_for(lambda: _all_checked(db, ids, stopped + 0.2), timeout=10, message=lambda: b.tail())
    await _one_row_per_tick(db, ids)
    assert not b.tracebacks() and not c.tracebacks()
    assert await db.fetchval("SELECT count(*) FROM scheduler_members WHERE name = 'sched-c'") == 0


async def _all_checked(db: asyncpg.Connection, ids: list[int], since: float) -> bool:
    return await _checked_since(db, ids, since) == set(ids)


async def _shares(db: asyncpg.Connection, names: set[str], total: int) -> list[asyncpg.Record]:
    """The members' rows once exactly ``names`` run ``total`` monitors between them, each some."""
    rows = await db.fetch("SELECT name, monitors FROM scheduler_members ORDER BY name")
    ok = {r["name"] for r in rows} == names and all(r["monitors"] for r in rows)
    return rows if ok and sum(r["monitors"] for r in rows) == total else []


async def _cluster_status(dsn: str) -> list[dict[str, Any]]:
    """``monitor cluster status --json``, as an operator runs it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "cluster", "status", "--json",
        env=clean_environ() | {"MONITOR_DATABASE_URL": dsn},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    members: list[dict[str, Any]] = json.loads(out)
    return members


async def test_a_dependency_holds_across_schedulers(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    """The router runs on one scheduler and the site that depends on it on the other: when both
    fail, the site's down is held by the router's, as it is on one scheduler."""
    router = await monitor_factory(name="Router", url=target.url("/router"), interval_seconds=1.0)
    site = None
    for n in range(50):  # a site that the other member runs
        row = await monitor_factory(
            name=f"Site {n}", url=target.url("/site"), interval_seconds=1.0, depends_on=[router["id"]],
            confirm_after=3,
        )  # fmt: skip
        if owner(row["id"], ["sched-a", "sched-b"]) != owner(router["id"], ["sched-a", "sched-b"]):
            site = row
            break
        await db.execute("UPDATE monitors SET paused = true WHERE id = $1", row["id"])
    assert site is not None
    await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-a"})
    await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-b"})
    await wait_for(lambda: _shares(db, {"sched-a", "sched-b"}, 2), timeout=20)
    shared_at = time.time()
    await wait_for(lambda: _all_checked(db, [router["id"], site["id"]], shared_at), timeout=10)
    target.set(500)

    async def site_held() -> asyncpg.Record | None:
        row = await db.fetchrow(
            "SELECT status, told, held FROM monitor_state WHERE monitor_id = $1", site["id"]
        )
        return row if row is not None and row["status"] == "down" else None

    held = await wait_for(site_held, timeout=20, message="the site confirmed down")
    assert held["told"] == "up" and held["held"] == "Router was down", dict(held)
    assert await db.fetchval("SELECT told FROM monitor_state WHERE monitor_id = $1", router["id"]) == "down"


JOIN_INTERVAL = 2.0
JOIN_MONITORS = 180
# As a remote site answers: the others wait for the checks they have in flight before they ack,
# so the handover takes a few tenths of a second, and a tenth or so of the 60 monitors that move
# have a tick due in it (passed over on main in nearly every run).
JOIN_TARGET_DELAY = 0.2


async def _gaps(db: asyncpg.Connection, ids: list[int], since: float) -> list[tuple[int, float]]:
    """(monitor, seconds) between consecutive stored checks of each monitor after ``since``."""
    rows = await db.fetch(
        """SELECT monitor_id, extract(epoch FROM time - lag(time) OVER w)::float8 AS gap
           FROM checks WHERE monitor_id = ANY($1::bigint[]) AND time > to_timestamp($2)
           WINDOW w AS (PARTITION BY monitor_id ORDER BY time)""",
        ids,
        since,
    )
    return [(r["monitor_id"], r["gap"]) for r in rows if r["gap"] is not None]


async def test_a_joining_scheduler_passes_over_no_tick(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    """Two schedulers run 180 monitors; a third joins and takes a third of them. Every monitor's
    stored checks stay one interval apart through the handover: the ticks that came due while
    the others stopped, wrote and acked are checked by the newcomer (a little late), not passed
    over, and none is checked twice."""
    target.set(delay=JOIN_TARGET_DELAY)
    ids = [
        (await monitor_factory(url=target.url(f"/j{n}"), interval_seconds=JOIN_INTERVAL))["id"]
        for n in range(JOIN_MONITORS)
    ]
    await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-a"})
    await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-b"})
    await wait_for(lambda: _shares(db, {"sched-a", "sched-b"}, JOIN_MONITORS), timeout=20)
    steady = time.time()
    await wait_for(lambda: _all_checked(db, ids, steady + JOIN_INTERVAL), timeout=15)
    c = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-c"})
    three = {"sched-a", "sched-b", "sched-c"}
    await wait_for(lambda: _shares(db, three, JOIN_MONITORS), timeout=20, message=c.tail)
    moved = [m for m in ids if owner(m, sorted(three)) == "sched-c"]
    assert len(moved) > JOIN_MONITORS / 4
    after = time.time()
    await wait_for(lambda: _all_checked(db, ids, after + 2 * JOIN_INTERVAL), timeout=15)
    gaps = await _gaps(db, ids, steady)
    passed_over = [(m, round(g, 2)) for m, g in gaps if g > 1.5 * JOIN_INTERVAL]
    doubled = [(m, round(g, 2)) for m, g in gaps if g < 0.5 * JOIN_INTERVAL]
    assert not passed_over, f"ticks passed over at the join (monitor, gap s): {passed_over}"
    assert not doubled, f"ticks checked twice (monitor, gap s): {doubled}"
    assert not c.events("check.skipped", reason="handover"), c.tail()
    assert not procs.tracebacks()
