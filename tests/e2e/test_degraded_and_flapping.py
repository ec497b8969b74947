"""Degraded and flapping monitors through the real scheduler, alerter and api (issue 13, points
4 and 7), with a scripted target, local TLS targets and the fake Telegram.

Five monitors, each with a chat of its own, run at once in one scheduler (interval 1 s); the
rules asserted are those of ``monitor/scheduler/state.py``'s tables.

``slow-api`` (degraded_above_ms 300, confirm_after 2), chat ``1301``::

    fast ... one slow check, fast again     -> nothing (one slow check is not confirmed)
    slow, slow                              -> DEGRADED (the degradation starts at the first)
    fast                                    -> DEGRADED_END
    degradations: one row, first slow check to first fast one; /uptime: 100 %, no downtime,
    degraded_seconds = that row; /stats: the same degraded seconds, summed over its buckets

``slow-then-broken`` (same rules), chat ``1302``::

    slow, slow -> DEGRADED;  500, 500 -> DOWN (no DEGRADED_END: the down says it);  200 -> UP
    the degradation ends where the incident starts (the first failing check)

``short-cert`` (https, leaf expiring in 3 days, cert_warn_days 14 by default), chat ``1303``::

    -> DEGRADED, reason "certificate expires in N days (<expiry date>)"; every check row has
       details.certificate (not_after, days_left)

``long-cert`` (https, leaf valid 90 days), chat ``1304``: nothing at all.

``flappy`` (flap_threshold 3, flap_window_minutes 1, confirm_after 1), chat ``1305``::

    500 -> DOWN, 200 -> UP, 500 -> DOWN, 200 -> FLAPPING (4 changes > 3), 500, 200 -> nothing
    (still three incidents recorded); a minute without a change -> STABLE:UP, then UP (what the
    channels were last told was DOWN), recovered at the last change, not a minute later

The module takes a little over the flap window (about 75 s): the other scenarios run inside it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import ApiClient, FakeTelegram, ProcessFactory, TargetServer, parse_time, rfc3339, wait_for
from support.alerts import alert_state, said_to
from support.certs import (  # noqa: F401  (the local_ca and https_target fixtures)
    HttpsTarget,
    HttpsTargetFactory,
    LocalCA,
    https_target_fixture,
    local_ca_fixture,
    scheduler_env,
)

from monitor import db as monitor_db

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

DEADLINE = 30.0  # for anything a few checks should bring about
SLOW_MS = 300  # degraded_above_ms of the latency monitors
SLOW_DELAY = 0.6  # seconds the target takes to answer when slow
FLAP_WINDOW = timedelta(minutes=1)

LATENCY_CHAT, BROKEN_CHAT, SHORT_CERT_CHAT, LONG_CERT_CHAT = "1301", "1302", "1303", "1304"
FLAPPY_CHAT = "1305"


@pytest.fixture
async def pool(db: asyncpg.Connection, migrated: str) -> AsyncIterator[asyncpg.Pool]:
    """Connections for the scenarios, which query the database at the same time (``db`` is one
    connection; depending on it also empties the tables first)."""
    pool = await monitor_db.create_pool(migrated, max_size=5)
    try:
        yield pool
    finally:
        await pool.close()


@dataclass
class World:
    pool: asyncpg.Pool
    target: TargetServer
    telegram: FakeTelegram
    api: ApiClient

    async def told(self, chat: str, *expected: tuple[str, str], timeout: float = DEADLINE) -> None:  # noqa: ASYNC109
        """Wait until ``chat`` was told exactly ``expected`` (failing at once on anything else)."""

        def so_far() -> bool:
            got = self.said(chat)
            assert got == list(expected[: len(got)]), f"chat {chat} was told {got}, expected {list(expected)}"
            return len(got) == len(expected)

        await wait_for(so_far, timeout=timeout, message=lambda: f"chat {chat} was told {self.said(chat)}")

    def said(self, chat: str) -> list[tuple[str, str]]:
        return said_to(self.telegram, chat)

    async def checks(self, monitor_id: int) -> list[asyncpg.Record]:
        return await self.pool.fetch(
            """SELECT time, ok, status_code, latency_ms, details FROM checks
               WHERE monitor_id = $1 ORDER BY time""",
            monitor_id,
        )

    async def checked_ok(self, monitor_id: int) -> None:
        """Wait for a first good check written, so the scenario starts from an up monitor."""
        await wait_for(
            lambda: self.pool.fetchval(
                "SELECT status = 'up' FROM monitor_state WHERE monitor_id = $1", monitor_id
            ),
            timeout=DEADLINE,
            message=f"monitor {monitor_id} up",
        )

    async def outbox_kinds(self, monitor_id: int) -> list[str]:
        rows = await self.pool.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", monitor_id)
        return [r["kind"] for r in rows]

    async def answered(self, path: str, since: int, status: int) -> None:
        """Wait until a request to ``path`` after the ``since``-th was answered with ``status``."""
        await wait_for(
            lambda: any(
                r.status == status and r.completed_at is not None for r in self.target.for_path(path)[since:]
            ),
            timeout=DEADLINE,
            message=f"a check of {path} answered {status}",
        )


def slow(checks: Sequence[asyncpg.Record]) -> list[asyncpg.Record]:
    return [c for c in checks if c["ok"] and c["latency_ms"] > SLOW_MS]


# -- degraded by latency ------------------------------------------------------------------


async def degraded_by_latency(world: World, monitor_id: int, path: str) -> None:
    target, name = world.target, "slow-api"
    await world.checked_ok(monitor_id)

    # One slow check alone: slow for exactly the next request, fast again before the one after.
    before = len(target.for_path(path))
    target.set(delay=SLOW_DELAY, path=path)
    await wait_for(lambda: len(target.for_path(path)) > before, timeout=DEADLINE, message="a slow check")
    target.set(delay=0, path=path)

    async def two_fast_after_the_slow_one() -> bool:
        checks = await world.checks(monitor_id)
        lone = slow(checks)
        return len(lone) == 1 and sum(1 for c in checks if c["time"] > lone[0]["time"] and c["ok"]) >= 2

    await wait_for(two_fast_after_the_slow_one, timeout=DEADLINE, message="one slow check, then two fast")
    state = await world.pool.fetchrow(
        "SELECT status, consecutive_slow FROM monitor_state WHERE monitor_id = $1", monitor_id
    )
    assert (state["status"], state["consecutive_slow"]) == ("up", 0)
    assert await world.outbox_kinds(monitor_id) == [], "one slow check alone is no news"

    # Slow until it is said, then fast again.
    lone_at = slow(await world.checks(monitor_id))[0]["time"]
    target.set(delay=SLOW_DELAY, path=path)
    await world.told(LATENCY_CHAT, (name, "DEGRADED"))
    target.set(delay=0, path=path)
    await world.told(LATENCY_CHAT, (name, "DEGRADED"), (name, "DEGRADED_END"))

    checks = await world.checks(monitor_id)
    streak = [c for c in slow(checks) if c["time"] > lone_at]
    first_fast = min(c["time"] for c in checks if c["time"] > streak[-1]["time"])
    assert len(streak) >= 2
    spell = await world.pool.fetchrow(
        "SELECT started_at, ended_at, reason FROM degradations WHERE monitor_id = $1", monitor_id
    )
    assert (spell["started_at"], spell["ended_at"]) == (streak[0]["time"], first_fast)
    assert re.fullmatch(rf"response time \d+ ms above {SLOW_MS} ms", spell["reason"]), spell["reason"]
    said_at = await world.pool.fetchval(
        "SELECT created_at FROM outbox WHERE monitor_id = $1 AND kind = 'degraded'", monitor_id
    )
    assert said_at > streak[1]["time"], "DEGRADED before the second slow check"
    assert "Reason: " + spell["reason"] in world.telegram.messages_to(LATENCY_CHAT)[0].text

    await degraded_time_reported_apart(world, monitor_id, spell["ended_at"] - spell["started_at"])


async def degraded_time_reported_apart(world: World, monitor_id: int, degraded: timedelta) -> None:
    """Degraded is not downtime: uptime stays 100 %, and /uptime and /stats say how long apart."""
    assert await world.pool.fetchval("SELECT count(*) FROM incidents WHERE monitor_id = $1", monitor_id) == 0
    uptime = await world.api.get(f"/api/v1/monitors/{monitor_id}/uptime", params={"window": "24h"})
    assert uptime.status == 200, uptime
    figures = uptime.json
    assert (figures["uptime_percent"], figures["downtime_seconds"]) == (100.0, 0.0), figures
    assert figures.get("degraded_seconds") == pytest.approx(degraded.total_seconds(), abs=0.01), figures

    start = rfc3339(parse_time(figures["from"]))
    query = {"bucket": "1h", "from": start}
    stats = await world.api.get(f"/api/v1/monitors/{monitor_id}/stats", params=query)
    assert stats.status == 200, stats
    buckets = stats.json["items"]
    assert all("degraded_seconds" in b for b in buckets), buckets
    total = sum(b["degraded_seconds"] for b in buckets)
    assert total == pytest.approx(degraded.total_seconds(), abs=0.01), buckets


# -- degraded, then down ------------------------------------------------------------------


async def degraded_then_down(world: World, monitor_id: int, path: str) -> None:
    target, name = world.target, "slow-then-broken"
    await world.checked_ok(monitor_id)
    target.set(delay=SLOW_DELAY, path=path)
    await world.told(BROKEN_CHAT, (name, "DEGRADED"))
    target.set(500, delay=0, path=path)
    await world.told(BROKEN_CHAT, (name, "DEGRADED"), (name, "DOWN"))
    target.set(200, path=path)
    await world.told(BROKEN_CHAT, (name, "DEGRADED"), (name, "DOWN"), (name, "UP"))

    spell = await world.pool.fetchrow(
        "SELECT started_at, ended_at FROM degradations WHERE monitor_id = $1", monitor_id
    )
    incident = await world.pool.fetchrow(
        "SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", monitor_id
    )
    first_failure = await world.pool.fetchval(
        "SELECT min(time) FROM checks WHERE monitor_id = $1 AND NOT ok", monitor_id
    )
    assert spell["ended_at"] == incident["started_at"] == first_failure
    assert incident["ended_at"] is not None
    assert await world.outbox_kinds(monitor_id) == ["degraded", "down", "up"]


# -- degraded by certificate --------------------------------------------------------------


async def degraded_by_certificate(
    world: World, short_id: int, short: HttpsTarget, long_id: int, long: HttpsTarget
) -> None:
    name = "short-cert"
    await world.told(SHORT_CERT_CHAT, (name, "DEGRADED"))
    reason = await world.pool.fetchval("SELECT reason FROM degradations WHERE monitor_id = $1", short_id)
    # 3 days from issue is a little less than 3 days at the check: "2 days" (whole days left).
    expiry = f"{short.not_after:%Y-%m-%d}"
    assert re.fullmatch(rf"certificate expires in [23] days \({expiry}\)", reason), reason
    assert "Reason: " + reason in world.telegram.messages_to(SHORT_CERT_CHAT)[0].text

    # The 90-day certificate: checked (more often than confirm_after) and never worth a word.
    async def long_checked() -> bool:
        return sum(1 for c in await world.checks(long_id) if c["ok"]) >= 4

    await wait_for(long_checked, timeout=DEADLINE, message="long-cert checked four times")
    assert await world.outbox_kinds(long_id) == []
    status = await world.pool.fetchval("SELECT status FROM monitor_state WHERE monitor_id = $1", long_id)
    assert status == "up"

    for monitor_id, server, days in ((short_id, short, 3), (long_id, long, 90)):
        checks = await world.checks(monitor_id)
        assert checks and all(c["details"] and "certificate" in c["details"] for c in checks), checks
        for check in checks:
            cert = check["details"]["certificate"]
            assert cert["not_after"] == rfc3339(server.not_after)
            assert days - 0.01 <= cert["days_left"] <= days, cert
    assert (
        await world.pool.fetchval("SELECT cert_not_after FROM monitor_state WHERE monitor_id = $1", short_id)
        == short.not_after
    )


# -- flapping -----------------------------------------------------------------------------


async def flapping(world: World, monitor_id: int, path: str) -> None:
    target, name = world.target, "flappy"
    await world.checked_ok(monitor_id)
    for status in (500, 200, 500, 200, 500, 200):  # six changes, one per check
        since = len(target.for_path(path))
        target.set(status, path=path)
        await world.answered(path, since, status)

    down, up = (name, "DOWN"), (name, "UP")
    await world.told(FLAPPY_CHAT, down, up, down, (name, "FLAPPING"))

    # The changes while it flaps are recorded, only not said.
    async def three_incidents_closed() -> list[asyncpg.Record] | None:
        rows = await world.pool.fetch(
            "SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1 ORDER BY started_at", monitor_id
        )
        return rows if len(rows) == 3 and all(r["ended_at"] for r in rows) else None

    incidents = await wait_for(three_incidents_closed, timeout=DEADLINE, message="three incidents")
    last_change: datetime = incidents[-1]["ended_at"]

    await world.told(
        FLAPPY_CHAT, down, up, down, (name, "FLAPPING"), (name, "STABLE:UP"), up,
        timeout=FLAP_WINDOW.total_seconds() + DEADLINE,
    )  # fmt: skip
    assert await world.outbox_kinds(monitor_id) == ["down", "up", "down", "flapping", "flapping_end", "up"]
    stable_at = await world.pool.fetchval(
        "SELECT created_at FROM outbox WHERE monitor_id = $1 AND kind = 'flapping_end'", monitor_id
    )
    assert stable_at - last_change >= FLAP_WINDOW, "stable before a whole window without a change"
    # The UP said once it is stable recovered at the last change, not when it could be said.
    up = await world.pool.fetchval(
        "SELECT payload FROM outbox WHERE monitor_id = $1 AND kind = 'up' ORDER BY seq DESC LIMIT 1",
        monitor_id,
    )
    assert parse_time(up["ended_at"]) == last_change, up


# -- the test -----------------------------------------------------------------------------


async def test_degraded_by_latency_and_certificate_and_flapping(
    db: asyncpg.Connection,
    pool: asyncpg.Pool,
    redis_client: aioredis.Redis,
    monitor_factory,
    target: TargetServer,
    https_target: HttpsTargetFactory,
    local_ca: LocalCA,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api: ApiClient,
) -> None:
    every_second = {"interval_seconds": 1, "timeout_seconds": 2}
    latency = {**every_second, "confirm_after": 2, "degraded_above_ms": SLOW_MS}
    slow_api = await monitor_factory(
        name="slow-api", url=target.url("/slow"), telegram_chat_id=LATENCY_CHAT, **latency
    )
    broken = await monitor_factory(
        name="slow-then-broken", url=target.url("/broken"), telegram_chat_id=BROKEN_CHAT, **latency
    )
    short, long = await https_target(days=3), await https_target(days=90)
    certificate = {**every_second, "confirm_after": 2}  # cert_warn_days: 14, the default
    short_cert = await monitor_factory(
        name="short-cert", url=short.url("/"), telegram_chat_id=SHORT_CERT_CHAT, **certificate
    )
    long_cert = await monitor_factory(
        name="long-cert", url=long.url("/"), telegram_chat_id=LONG_CERT_CHAT, **certificate
    )
    flappy = await monitor_factory(
        name="flappy", url=target.url("/flappy"), telegram_chat_id=FLAPPY_CHAT, confirm_after=1,
        flap_threshold=3, flap_window_minutes=1, **every_second,
    )  # fmt: skip

    await procs.start("scheduler", env=scheduler_env(local_ca))
    await procs.start("alerter", env=fake_telegram.env())
    world = World(pool, target, fake_telegram, api)
    await asyncio.gather(
        degraded_by_latency(world, slow_api["id"], "/slow"),
        degraded_then_down(world, broken["id"], "/broken"),
        degraded_by_certificate(world, short_cert["id"], short, long_cert["id"], long),
        flapping(world, flappy["id"], "/flappy"),
    )

    # Everything written was delivered, so the chats heard all they will: exactly this.
    async def settled() -> bool:
        state = await alert_state(db, redis_client)
        written = await db.fetchval("SELECT count(*) FROM outbox")
        return state.settled(sent=written)

    await wait_for(settled, timeout=DEADLINE, message="every alert delivered")
    assert said_to(fake_telegram, LATENCY_CHAT) == [("slow-api", "DEGRADED"), ("slow-api", "DEGRADED_END")]
    assert said_to(fake_telegram, BROKEN_CHAT) == [
        ("slow-then-broken", "DEGRADED"), ("slow-then-broken", "DOWN"), ("slow-then-broken", "UP")
    ]  # fmt: skip
    assert said_to(fake_telegram, SHORT_CERT_CHAT) == [("short-cert", "DEGRADED")]
    assert said_to(fake_telegram, LONG_CERT_CHAT) == []
    assert said_to(fake_telegram, FLAPPY_CHAT) == [
        ("flappy", "DOWN"), ("flappy", "UP"), ("flappy", "DOWN"), ("flappy", "FLAPPING"),
        ("flappy", "STABLE:UP"), ("flappy", "UP"),
    ]  # fmt: skip
    assert not procs.tracebacks()
