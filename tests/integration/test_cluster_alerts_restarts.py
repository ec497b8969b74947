"""Two schedulers and two alerters through a Redis restart, a database restart and a rolling
restart of a scheduler: every monitor's alerts reach Telegram exactly as its outbox holds
them (none lost, none doubled, none out of order), and its outbox alternates DOWN, UP, DOWN...
with no transition stored twice or skipped, across the schedulers that hand it over (issue 16's
third "Done when").

Every path of the target answers 200, 500, 200... in turn, so with ``confirm_after`` 1 each
check of the 20 monitors (every second) is a transition. Everything the processes reach goes
through the test's own services: a private ``redis-server`` (append-only, stopped and started
by PID) and a TCP proxy in front of PostgreSQL that is cut for longer than a lease (every
connection reset, new ones refused) and restored, so the shared services stay untouched.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, alerts_in, flapping_monitors
from support.redis_server import RedisServer
from support.target import FlappingTarget
from support.tcpproxy import TcpProxy

pytestmark = pytest.mark.timeout(240)

MONITORS = 20
CHATS = 5
LEASE = 3.0
DEADLINE = 90.0


@pytest.fixture
async def db_proxy(migrated: str) -> AsyncIterator[tuple[TcpProxy, str]]:
    """A proxy in front of the test database, and the DSN through it."""
    upstream = urlsplit(migrated)
    proxy = await TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432).start()
    try:
        yield proxy, migrated.replace(f"{upstream.hostname}:{upstream.port}", f"127.0.0.1:{proxy.port}")
    finally:
        await proxy.close()


async def test_alerts_exact_through_redis_database_and_scheduler_restarts(
    db: asyncpg.Connection,
    monitor_factory: Callable[..., Awaitable[asyncpg.Record]],
    flapping: FlappingTarget,
    fake_telegram: FakeTelegram,
    private_redis: RedisServer,
    db_proxy: tuple[TcpProxy, str],
    procs: ProcessFactory,  # after the services: the processes stop before they do
) -> None:
    proxy, dsn = db_proxy
    names = await flapping_monitors(
        monitor_factory, flapping, count=MONITORS, prefix="flip", first_chat=7000, chats=CHATS
    )
    env = {"MONITOR_REDIS_URL": private_redis.url(), "MONITOR_DATABASE_URL": dsn}
    scheduler_env = {**env, "MONITOR_LEASE_SECONDS": str(LEASE)}
    schedulers = {
        name: await procs.start("scheduler", env={**scheduler_env, "MONITOR_SCHEDULER_NAME": name})
        for name in ("sched-a", "sched-b")
    }
    alerter = {**env, **alerter_env(fake_telegram, claim_idle=3.0, max_attempts=20, backoff_max=1.0)}
    for _ in range(2):
        await procs.start("alerter", env=alerter)
    log: list[str] = []

    async def transitions() -> int:
        return int(await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id IS NOT NULL"))

    async def unpublished() -> int:
        return int(await db.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL"))

    async def both_share() -> bool:
        rows = await db.fetch("SELECT name, monitors FROM scheduler_members")
        return len(rows) == 2 and all(r["monitors"] for r in rows)

    await wait_for(both_share, timeout=DEADLINE, message="both schedulers run a share")

    async def restart_redis() -> None:
        # Transitions go on into the outbox while Redis is away; published once it is back.
        await private_redis.stop()
        await wait_for(
            lambda: _at_least(unpublished, 40), timeout=DEADLINE, message="40 waiting in the outbox"
        )
        await private_redis.start()

    async def restart_database() -> None:
        # Longer than a lease: every member's lease lapses in the database while nobody can
        # reach it; checks and transitions go on in memory and are written once it is back.
        served = sum(flapping.counts.values())
        proxy.cut()
        cut = time.time()
        await wait_for(
            lambda: time.time() - cut > 2 * LEASE and sum(flapping.counts.values()) > served + 5 * MONITORS,
            timeout=DEADLINE,
            interval=0.2,
            message="checks go on while the database is away",
        )
        proxy.restore()

    async def restart_scheduler() -> None:
        # A rolling restart: b hands its share to a, then takes it back.
        victim = schedulers["sched-b"]
        assert await victim.terminate() == 0, victim.tail()
        schedulers["sched-b"] = await procs.start(
            "scheduler", env={**scheduler_env, "MONITOR_SCHEDULER_NAME": "sched-b"}
        )
        await wait_for(both_share, timeout=DEADLINE, message="b back with a share")

    faults = [(60, restart_redis), (200, restart_database), (400, restart_scheduler)]
    for at, fault in faults:
        await wait_for(
            lambda at=at: _at_least(transitions, at), timeout=DEADLINE, message=f"{at} transitions"
        )
        await fault()
        log.append(f"{fault.__name__} at {await transitions()} transitions")
    await wait_for(lambda: _at_least(transitions, 600), timeout=DEADLINE, message="600 transitions")
    flapping.flapping = False
    redis = aioredis.Redis.from_url(private_redis.url())
    try:

        async def steady_and_settled() -> bool:
            down = await db.fetchval("SELECT count(*) FROM monitor_state WHERE status <> 'up'")
            state = await alert_state(db, redis)
            return down == 0 and state.settled(sent=await transitions())

        await wait_for(
            steady_and_settled,
            timeout=DEADLINE,
            message=lambda: (
                f"all delivered once; faults: {log}; Telegram: {len(fake_telegram.messages)} messages"
            ),
        )
    finally:
        await redis.aclose()

    expected: dict[tuple[str, str], list[str]] = defaultdict(list)
    seqs: dict[int, list[int]] = defaultdict(list)
    for row in await db.fetch(
        """SELECT o.monitor_id, o.kind, o.seq, c.config ->> 'chat_id' AS chat
           FROM outbox o JOIN monitor_channels mc ON mc.monitor_id = o.monitor_id
           JOIN channels c ON c.id = mc.channel_id
           WHERE o.monitor_id IS NOT NULL ORDER BY o.monitor_id, o.seq"""
    ):
        expected[(row["chat"], names[row["monitor_id"]])].append(row["kind"].upper())
        seqs[row["monitor_id"]].append(row["seq"])
    received: dict[tuple[str, str], list[str]] = defaultdict(list)
    for message in sorted(fake_telegram.messages, key=lambda r: r.received_at):
        for name, kind in alerts_in(message.text):
            received[(message.chat_id or "", name)].append(kind)

    # The outbox: each monitor's sequence numbered 1, 2, 3... and its kinds alternating.
    assert all(s == list(range(1, len(s) + 1)) for s in seqs.values()), seqs
    alternating = [("DOWN", "UP")[i % 2] for i in range(max(len(k) for k in expected.values()))]
    broken = {key: kinds for key, kinds in expected.items() if kinds != alternating[: len(kinds)]}
    assert not broken, f"transitions doubled or lost in the outbox, e.g. {next(iter(broken.items()))}"
    # Telegram: exactly the outbox, monitor by monitor, in order.
    wrong = {key: (kinds, received.get(key)) for key, kinds in expected.items() if received.get(key) != kinds}
    assert not wrong, f"{len(wrong)} monitor/chat sequences differ, e.g. {next(iter(wrong.items()))}"
    assert set(received) == set(expected) and len(expected) == MONITORS
    assert len(log) == len(faults) and private_redis.starts == 2
    assert not procs.tracebacks()
    print(f"restart run: {sum(map(len, expected.values()))} alerts; faults: {', '.join(log)}")


async def _at_least(count: Callable[[], Awaitable[int]], target: int) -> bool:
    return await count() >= target
