"""A scheduler SIGKILLed with results still in memory loses none of them: each result is in its
local spool as the writer takes it, and the next scheduler started on the machine replays the
spool before it joins (monitor/scheduler/spool.py, replay.py).

The writer here writes only once an hour, so every result of the killed process sits in memory
until the kill, and an outage it saw (down, then up again) exists nowhere else. After the
restart every check the target answered before the kill is a row of ``checks``, once, and the
outage is one incident with one down and one up alert."""

from __future__ import annotations

import math
import signal
import time
from collections import Counter

import asyncpg
from support import ProcessFactory, TargetServer, wait_for

INTERVAL = 1.0
# Results sit in memory until the kill: the writer's timer never comes, nor its row count.
IN_MEMORY = {"MONITOR_WRITE_INTERVAL_SECONDS": "3600", "MONITOR_WRITE_BATCH_ROWS": "1000000"}
NAME = {"MONITOR_SCHEDULER_NAME": "sched-spool"}


def _cutoff(kill: float) -> float:
    """A moment a little before the kill, halfway between two tick slots (ticks fall on 100 ms
    slots): no check starts near it, so each check is on one side of it for both counts."""
    return math.floor((kill - 0.2) * 10) / 10 + 0.05


async def test_a_sigkilled_scheduler_loses_no_measured_result(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    monitors = [
        await monitor_factory(url=target.url(f"/s{n}"), interval_seconds=INTERVAL, confirm_after=1)
        for n in range(8)
    ]
    ids = [m["id"] for m in monitors]
    outage = monitors[0]
    killed = await procs.start("scheduler", env={**IN_MEMORY, **NAME})
    await wait_for(lambda: all(len(target.for_path(f"/s{n}")) >= 3 for n in range(8)), timeout=20)

    # A short outage of one monitor, seen only by this process: down, then up again.
    target.set(500, path="/s0")
    failed = await wait_for(lambda: [r for r in target.for_path("/s0") if r.status == 500], timeout=10)
    target.set(200, path="/s0")
    healed = failed[0].received_at
    await wait_for(
        lambda: any(r.status == 200 and r.received_at > healed for r in target.for_path("/s0")), timeout=10
    )
    await wait_for(lambda: len(target.requests) >= len(ids) * 6, timeout=20)
    assert await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = ANY($1::bigint[])", ids) == 0
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id = $1", outage["id"]) == 0

    killed.send_signal(signal.SIGKILL)
    kill = time.time()
    await killed.wait()
    cutoff = _cutoff(kill)
    seen = Counter(r.path for r in target.requests if r.received_at < cutoff)

    # Replayed before it joins, so before it logs that it started.
    restarted = await procs.start("scheduler", env=NAME)

    rows = await db.fetch(
        """SELECT monitor_id, count(*) AS n FROM checks
           WHERE monitor_id = ANY($1::bigint[]) AND time < to_timestamp($2) GROUP BY monitor_id""",
        ids,
        cutoff,
    )
    stored = {r["monitor_id"]: r["n"] for r in rows}
    assert stored == {m["id"]: seen[f"/s{n}"] for n, m in enumerate(monitors)}, (stored, seen)
    before_kill = await db.fetchval(
        "SELECT count(*) FROM checks WHERE monitor_id = ANY($1::bigint[]) AND time < to_timestamp($2)",
        ids,
        kill,
    )
    replays = [(e["rows"], e["fenced"]) for e in restarted.events("spool.replayed")]
    assert replays == [(before_kill, False)], replays
    assert not restarted.events("cluster.name_taken"), "the killed member's row was released"

    incidents = await db.fetch(
        "SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", outage["id"]
    )
    assert len(incidents) == 1 and incidents[0]["ended_at"] is not None, incidents
    assert abs(incidents[0]["started_at"].timestamp() - failed[0].received_at) < 0.5
    kinds = [
        r["kind"]
        for r in await db.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", outage["id"])
    ]
    assert kinds == ["down", "up"], kinds

    # The restarted scheduler goes on from the replayed state: no tick twice, nothing told again.
    after = time.time()
    await wait_for(lambda: _checked_since(db, ids, after + INTERVAL), timeout=15, message=restarted.tail)
    gaps = await db.fetch(
        """SELECT monitor_id, time - lag(time) OVER (PARTITION BY monitor_id ORDER BY time) AS gap
           FROM checks WHERE monitor_id = ANY($1::bigint[])""",
        ids,
    )
    doubled = [
        g["monitor_id"] for g in gaps if g["gap"] is not None and g["gap"].total_seconds() < INTERVAL / 2
    ]
    assert not doubled, f"ticks checked twice: {doubled}"
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id = $1", outage["id"]) == 2
    assert not procs.tracebacks()


async def _checked_since(db: asyncpg.Connection, ids: list[int], since: float) -> bool:
    found = await db.fetchval(
        """SELECT count(DISTINCT monitor_id) FROM checks
           WHERE monitor_id = ANY($1::bigint[]) AND time > to_timestamp($2)""",
        ids,
        since,
    )
    return bool(found == len(ids))
