"""Monitors checked from several locations (issue 16, item 3): a scheduler per location, each
checking the monitors that name its location and confirming its own streak; the first live
location's scheduler deciding the overall state by the quorum, and alerting once.

Both schedulers here see the same target (the split view, a target failing from one location
only, is tests/e2e/test_quorum_locations.py, with the schedulers in network namespaces)."""

from __future__ import annotations

import asyncio
import sys
import time

import asyncpg
from support import ProcessFactory, TargetServer, clean_environ, wait_for

ENV = {"MONITOR_LEASE_SECONDS": "2", "MONITOR_MIN_INTERVAL_SECONDS": "1"}


async def _locations_checked(db: asyncpg.Connection, monitor_id: int, since: float) -> set[str]:
    rows = await db.fetch(
        "SELECT DISTINCT checked_from FROM checks WHERE monitor_id = $1 AND time > to_timestamp($2)",
        monitor_id,
        since,
    )
    return {r["checked_from"] for r in rows}


async def _states(db: asyncpg.Connection, monitor_id: int) -> dict[str, str]:
    rows = await db.fetch("SELECT location, status FROM location_state WHERE monitor_id = $1", monitor_id)
    return {r["location"]: r["status"] for r in rows}


async def _alerts(db: asyncpg.Connection, monitor_id: int) -> list[str]:
    return [
        r["kind"]
        for r in await db.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", monitor_id)
    ]


async def _is(fetch, want):  # type: ignore[no-untyped-def]
    """``fetch()`` once it equals ``want`` (for wait_for), else None."""
    got = await fetch()
    return got if got == want else None


async def _cluster_status_text(dsn: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "cluster", "status",
        env=clean_environ() | {"MONITOR_DATABASE_URL": dsn},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_each_location_checks_and_the_primary_decides_once(
    db: asyncpg.Connection, migrated: str, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    both = await monitor_factory(
        name="Both",
        url=target.url("/both"),
        locations=["eu", "us"],
        quorum=2,
        confirm_after=1,
        timeout_seconds=2.0,
    )
    plain = await monitor_factory(name="Plain", url=target.url("/plain"))
    nowhere = await monitor_factory(name="Nowhere", url=target.url("/nowhere"), locations=["asia"])
    eu = await procs.start(
        "scheduler", env={**ENV, "MONITOR_SCHEDULER_NAME": "eu-1", "MONITOR_LOCATION": "eu"}
    )
    us = await procs.start(
        "scheduler", env={**ENV, "MONITOR_SCHEDULER_NAME": "us-1", "MONITOR_LOCATION": "us"}
    )
    started = time.time()
    await wait_for(
        lambda: _is(lambda: _locations_checked(db, both["id"], started), {"eu", "us"}),
        timeout=30,
        message=lambda: eu.tail() + us.tail(),
    )
    await wait_for(lambda: _is(lambda: _states(db, both["id"]), {"eu": "up", "us": "up"}), timeout=15)
    overall = "SELECT status FROM monitor_state WHERE monitor_id = $1"
    await wait_for(lambda: _is(lambda: db.fetchval(overall, both["id"]), "up"), timeout=15)
    # A monitor with no locations is checked once a tick, by one of them; one naming a
    # location with no scheduler is not checked at all (and the API reports that location).
    assert len(await _locations_checked(db, plain["id"], started)) == 1
    assert await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = $1", nowhere["id"]) == 0
    status = await _cluster_status_text(migrated)
    assert "location 'asia': no live scheduler; 1 monitor(s) are not checked from there" in status, status

    # An edit that puts us first: us leads from now on (each member changes role at once,
    # the check in flight judged in its old role first), and both go on checking.
    await db.execute("UPDATE monitors SET locations = '{us,eu}' WHERE id = $1", both["id"])
    await wait_for(lambda: us.events("monitor.scheduled", monitor_id=both["id"]), timeout=15, message=us.tail)
    await wait_for(lambda: eu.events("monitor.scheduled", monitor_id=both["id"]), timeout=15, message=eu.tail)
    edited = time.time()
    await wait_for(
        lambda: _is(lambda: _locations_checked(db, both["id"], edited), {"eu", "us"}),
        timeout=15,
        message=lambda: eu.tail() + us.tail(),
    )

    # It fails from both: each location opens its own outage, the monitor one incident and
    # one alert (the primary's), dated from when the second location went down.
    target.set(500, path="/both")
    await wait_for(lambda: _is(lambda: _alerts(db, both["id"]), ["down"]), timeout=20)
    await wait_for(lambda: _is(lambda: _states(db, both["id"]), {"eu": "down", "us": "down"}), timeout=15)
    opened = await db.fetch(
        "SELECT location, started_at FROM location_incidents WHERE monitor_id = $1 AND ended_at IS NULL",
        both["id"],
    )
    assert {r["location"] for r in opened} == {"eu", "us"}
    incident = await db.fetchrow("SELECT started_at, error FROM incidents WHERE monitor_id = $1", both["id"])
    assert incident["started_at"] == max(r["started_at"] for r in opened)
    assert "eu:" in incident["error"] and "us:" in incident["error"], incident["error"]

    # The locations back in their first order: eu leads again.
    await db.execute("UPDATE monitors SET locations = '{eu,us}' WHERE id = $1", both["id"])
    await wait_for(lambda: len(eu.events("monitor.scheduled", monitor_id=both["id"])) >= 2, timeout=15)

    # The primary's location leaves (SIGTERM): the other leads now, and ends the incident once
    # the location left stops counting (two intervals, the timeout and 30 s after its last
    # check: it was not a restart), when the quorum of 2 is the one live location's verdict.
    assert await eu.terminate() == 0, eu.tail()
    target.set(200, path="/both")
    await wait_for(lambda: _is(lambda: _alerts(db, both["id"]), ["down", "up"]), timeout=60, message=us.tail)
    assert await db.fetchval(
        "SELECT ended_at IS NOT NULL FROM incidents WHERE monitor_id = $1", both["id"]
    ), "the incident ended"
    assert not eu.tracebacks() and not us.tracebacks()
