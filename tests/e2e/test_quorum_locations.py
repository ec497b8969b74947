"""Checks from two locations with a quorum (issue 16, item 3), through the real processes.

Two locations, "eu" and "us", are two network namespaces (tests/support/locations.py), each
with its own server at the same URL, ``http://127.0.0.1:PORT/`` on the namespace's loopback:
what a monitor of that URL sees depends on where it is checked from, as a site reachable from
one region and not another. Schedulers run inside them (two in eu, one in us), reaching
PostgreSQL and Redis through proxies on the veth pairs; the api and the alerter run here.

First a plain monitor (no locations) shows the pieces hold: the rows a namespaced scheduler
writes carry its namespace's view of the target and its location (``checks.checked_from``).
Then the quorum: with the target failing in "us" only, the monitor with ``quorum: 1`` goes down
(an alert) and the one with ``quorum: 2`` does not, while us keeps storing failures for it; with
eu failing too, both are down; both come back up; and with the only us scheduler stopped, us is
no longer live, so a quorum of 2 counts eu alone (min(quorum, live locations)). What a user sees
is checked too: each alert's cause names the locations; the API shows each location's view
(``location_status``, with ``live``) and uptime per location; rows, per-location state and
incidents are stored. About 20 s for the quorum test, 25 s for the file (45 s with both cores
of a 2-core machine busy with other work).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, MonitorProcess, ProcessFactory, insert_monitor, wait_for
from support.alerts import alerter_env, said_to
from support.locations import Location, locations_fixture  # noqa: F401  (the locations fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

INTERVAL = 1
LEASE = 2
DEADLINE = 30.0


def scheduler_env(location: Location, name: str) -> dict[str, str]:
    return {**location.env(), "MONITOR_SCHEDULER_NAME": name, "MONITOR_LEASE_SECONDS": str(LEASE)}


async def _rows(db: asyncpg.Connection, monitor_id: int, since: float) -> list[asyncpg.Record]:
    return await db.fetch(
        """SELECT time, ok, status_code, error, checked_from FROM checks
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
    assert all(not r["ok"] and r["status_code"] == 500 and r["checked_from"] == "eu" for r in failing), (
        failing
    )
    assert await in_eu.terminate() == 0, in_eu.tail()

    in_us = await procs.start("scheduler", prefix=us.prefix, env=scheduler_env(us, "us-1"))
    since = time.time()
    passing: list[asyncpg.Record] = await wait_for(
        lambda: _at_least(db, monitor["id"], since, 2),
        timeout=DEADLINE,
        message=lambda: f"two checks from us: {in_us.tail()}",
    )
    assert all(r["ok"] and r["status_code"] == 200 and r["checked_from"] == "us" for r in passing), passing
    assert await in_us.terminate() == 0, in_us.tail()
    # Each scheduler reached both services through its own location's proxies.
    assert all(proxy.connections for place in (eu, us) for proxy in place.proxies)
    assert procs.tracebacks() == {}


async def _at_least(
    db: asyncpg.Connection, monitor_id: int, since: float, count: int
) -> list[asyncpg.Record]:
    rows = await _rows(db, monitor_id, since)
    return rows if len(rows) >= count else []


# -- the quorum ------------------------------------------------------------------------------

CHAT_A, CHAT_B = "4201", "4202"  # A: quorum 2; B: quorum 1
# Checks of A that us stores failing after B's alert, while A must stay quiet: us's own streak
# (confirm_after 2) is long confirmed by then, and eu's member has judged A on several ticks.
QUIET_CHECKS = 4


async def _create(api: ApiClient, name: str, url: str, chat: str, quorum: int) -> int:
    """A monitor of ``url`` checked from eu and us with this quorum, alerting ``chat``."""
    body: dict[str, Any] = {
        "name": name, "url": url, "interval_seconds": INTERVAL, "timeout_seconds": 1, "confirm_after": 2,
        "telegram_chat_id": chat, "locations": ["eu", "us"], "quorum": quorum,
    }  # fmt: skip
    made = await api.post("/api/v1/monitors", json=body)
    assert made.status == 201, made
    assert (made.json["locations"], made.json["quorum"]) == (["eu", "us"], quorum), made.json
    return int(made.json["id"])


async def _start_schedulers(procs: ProcessFactory, where: dict[str, Location]) -> dict[str, MonitorProcess]:
    """Schedulers named after their location, started together."""
    started = {
        name: procs.spawn("scheduler", prefix=location.prefix, env=scheduler_env(location, name))
        for name, location in where.items()
    }
    await asyncio.gather(*(p.wait_log("scheduler.started", timeout=60) for p in started.values()))
    return started


async def _status(db: asyncpg.Connection, monitor_id: int) -> str:
    return str(await db.fetchval("SELECT status FROM monitor_state WHERE monitor_id = $1", monitor_id))


async def _location_states(db: asyncpg.Connection, monitor_id: int) -> dict[str, str]:
    rows = await db.fetch("SELECT location, status FROM location_state WHERE monitor_id = $1", monitor_id)
    return {r["location"]: r["status"] for r in rows}


async def _count(db: asyncpg.Connection, monitor_id: int, location: str, ok: bool) -> int:
    return int(
        await db.fetchval(
            "SELECT count(*) FROM checks WHERE monitor_id = $1 AND checked_from = $2 AND ok = $3",
            monitor_id,
            location,
            ok,
        )
    )


async def _up_everywhere(db: asyncpg.Connection, ids: list[int]) -> bool:
    """Every monitor up, and checked OK from both locations."""
    for m in ids:
        if await _status(db, m) != "up":
            return False
        if not (await _count(db, m, "eu", True) and await _count(db, m, "us", True)):
            return False
    return True


async def _location_status(api: ApiClient, monitor_id: int) -> list[tuple[str, bool, str]]:
    """Each location's (name, live, status) as GET /api/v1/monitors/{id} shows them."""
    shown = await api.get(f"/api/v1/monitors/{monitor_id}")
    assert shown.status == 200, shown
    return [(item["location"], item["live"], item["status"]) for item in shown.json["location_status"]]


async def test_a_target_failing_from_one_location_alerts_with_quorum_1_and_not_with_quorum_2(
    locations: dict[str, Location],
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api: ApiClient,
    fake_telegram: FakeTelegram,
) -> None:
    started = time.monotonic()
    eu, us = locations["eu"], locations["us"]
    await procs.start("alerter", env=alerter_env(fake_telegram))
    a = await _create(api, "quorum-two", eu.url, CHAT_A, 2)
    b = await _create(api, "quorum-one", eu.url, CHAT_B, 1)
    members = await _start_schedulers(procs, {"eu-1": eu, "eu-2": eu, "us-1": us})
    await wait_for(lambda: _up_everywhere(db, [a, b]), timeout=DEADLINE, interval=0.2, message="A and B up")
    figures = {"up": time.monotonic() - started}

    # us alone fails: B (quorum 1) goes down; A (quorum 2) stays up while us keeps failing it.
    us.answer(500)
    failing_from = time.monotonic()
    await fake_telegram.wait_messages(1, chat_id=CHAT_B, timeout=DEADLINE)
    figures["b_down"] = time.monotonic() - failing_from
    seen = await _count(db, a, "us", False)
    await wait_for(
        lambda: _more(db, a, seen + QUIET_CHECKS), timeout=DEADLINE, interval=0.2, message="us failing A"
    )
    assert said_to(fake_telegram, CHAT_A) == [], fake_telegram.describe()
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id = $1", a) == 0
    assert await _status(db, a) == "up"
    assert await _location_states(db, a) == {"eu": "up", "us": "down"}
    assert await _location_status(api, a) == [("eu", True, "up"), ("us", True, "down")]

    # eu fails too: A goes down.
    eu.answer(500)
    await fake_telegram.wait_messages(1, chat_id=CHAT_A, timeout=DEADLINE)

    # Both recover: both come up.
    eu.answer(200)
    us.answer(200)
    await fake_telegram.wait_messages(2, chat_id=CHAT_A, timeout=DEADLINE)
    await fake_telegram.wait_messages(2, chat_id=CHAT_B, timeout=DEADLINE)
    assert said_to(fake_telegram, CHAT_A) == [("quorum-two", "DOWN"), ("quorum-two", "UP")]
    assert said_to(fake_telegram, CHAT_B) == [("quorum-one", "DOWN"), ("quorum-one", "UP")]
    places = await db.fetch("SELECT DISTINCT checked_from FROM checks WHERE monitor_id = $1", a)
    assert sorted(r["checked_from"] for r in places) == ["eu", "us"]
    # Uptime: overall, the quorum's verdict (down while both failed); us's own outage is longer.
    uptime = await api.get(f"/api/v1/monitors/{a}/uptime?window=24h")
    assert uptime.status == 200, uptime
    overall, per_location = uptime.json["downtime_seconds"], uptime.json["locations"]
    assert sorted(per_location) == ["eu", "us"], uptime.json
    assert 0 < overall < per_location["us"]["downtime_seconds"], uptime.json
    figures["cycle"] = time.monotonic() - started

    # The only us member stops: us is no longer live, and once its last check is older than two
    # intervals, the timeout and 30 s (it was not a restart) it stops counting: A's quorum of 2
    # is eu's verdict alone.
    assert await members["us-1"].terminate() == 0, members["us-1"].tail()
    await wait_for(
        lambda: _live_in(db, "us", False), timeout=DEADLINE, interval=0.2, message="us without a live member"
    )
    eu.answer(500)
    await fake_telegram.wait_messages(3, chat_id=CHAT_A, timeout=DEADLINE + 2 * INTERVAL + 1 + 30)
    await fake_telegram.wait_messages(3, chat_id=CHAT_B, timeout=DEADLINE)
    assert [kind for _, kind in said_to(fake_telegram, CHAT_A)] == ["DOWN", "UP", "DOWN"]
    assert [kind for _, kind in said_to(fake_telegram, CHAT_B)] == ["DOWN", "UP", "DOWN"]
    # Each DOWN says which live locations saw what.
    assert _causes(fake_telegram, CHAT_B) == ["us: unexpected status 500", "eu: unexpected status 500"]
    assert _causes(fake_telegram, CHAT_A) == [
        "eu: unexpected status 500; us: unexpected status 500",
        "eu: unexpected status 500",
    ]
    # Each location's own outages of A, for per-location uptime: us's, eu's, and eu's open one.
    want = [("us", True), ("eu", True), ("eu", False)]
    await wait_for(
        lambda: _location_incidents(db, a, want),
        timeout=DEADLINE,
        interval=0.2,
        message="A's location incidents",
    )
    # What the API shows: eu live and down, us not live (its last view kept, not counted).
    assert await _location_status(api, a) == [("eu", True, "down"), ("us", False, "up")]
    figures["all"] = time.monotonic() - started
    print(f"quorum test seconds: { {k: round(v, 1) for k, v in figures.items()} }")
    assert procs.tracebacks() == {}


async def _location_incidents(db: asyncpg.Connection, monitor_id: int, want: list[tuple[str, bool]]) -> bool:
    """The monitor's per-location incidents are these (location, ended), oldest first."""
    rows = await db.fetch(
        """SELECT location, ended_at IS NOT NULL AS ended FROM location_incidents
           WHERE monitor_id = $1 ORDER BY started_at""",
        monitor_id,
    )
    return [(r["location"], r["ended"]) for r in rows] == want


def _causes(fake: FakeTelegram, chat: str) -> list[str]:
    """The ``Cause:`` line of each alert to ``chat`` that has one (its DOWNs), in order."""
    texts = [m.text or "" for m in sorted(fake.messages_to(chat), key=lambda m: m.received_at)]
    return [
        line.removeprefix("Cause: ")
        for text in texts
        for line in text.split("\n")
        if line.startswith("Cause: ")
    ]


async def _more(db: asyncpg.Connection, monitor_id: int, count: int) -> bool:
    return await _count(db, monitor_id, "us", False) >= count


async def _live_in(db: asyncpg.Connection, location: str, live: bool) -> bool:
    n = await db.fetchval(
        "SELECT count(*) FROM scheduler_members WHERE location = $1 AND lease_until > now()", location
    )
    return bool(n) == live
