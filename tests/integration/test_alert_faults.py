"""The alerters keep every monitor's alerts exact through faults: over 1,000 transitions of 50
flapping monitors, each chat receives each monitor's alerts exactly as its incidents went
(down, up, down...): none lost, none doubled, none out of order.

The real scheduler checks 50 monitors of a local target whose every path answers 200 and 500
in turn, so with ``confirm_after`` 1 each check is a transition (about 50 a second). Two, then
three alerters deliver them to 10 chats of a fake Telegram that enforces its flood limits,
while, each at a count of transitions: alerters are killed (SIGKILL) and stopped (SIGTERM)
and new ones started, the destination answers 500s, hangs, and a burst of 429s, and Redis
(a private one, append-only) is restarted under everyone. Then the target steadies, and the
test waits until every delivery is final and nothing is pending.

A SIGKILL lands while no answer from Telegram is on its way back: the fake is held first and
the test waits until no request has been answered for a moment. Killed while a request is in
Telegram's hands but unanswered, the alert is sent again by another alerter; killed after
Telegram answered but before the delivery was recorded, the message would be sent twice: no
alerter can know it went. That window (one answer's round trip and one INSERT) is the one
duplicate the design allows, and the test keeps its kills out of it on purpose.
"""

from __future__ import annotations

import signal
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import FakeTelegram, MonitorProcess, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, alerts_in, flapping_monitors
from support.redis_server import RedisServer
from support.target import FlappingTarget

MONITORS = 50
CHATS = 10
TRANSITIONS = 1000
DEADLINE = 240.0
# The run's own waits allow DEADLINE; the suite's 120 s per test cut it short at 120-160 s in
# a clone's `make test` (five streams at a load of 5-7 on two cores).
pytestmark = pytest.mark.timeout(DEADLINE + 60)


@pytest.fixture
async def limited_telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(enforce_rate_limits=True) as fake:
        yield fake


async def test_a_thousand_transitions_through_faults_arrive_exactly_in_order(
    db: asyncpg.Connection,
    monitor_factory: Callable[..., Awaitable[asyncpg.Record]],
    flapping: FlappingTarget,
    limited_telegram: FakeTelegram,
    procs: ProcessFactory,
    private_redis: RedisServer,
) -> None:
    fake = limited_telegram
    names = await flapping_monitors(
        monitor_factory, flapping, count=MONITORS, prefix="flap", first_chat=9000, chats=CHATS
    )
    redis_env = {"MONITOR_REDIS_URL": private_redis.url()}
    env = {
        **redis_env,
        **alerter_env(fake, claim_idle=3.0, max_attempts=10, backoff_base=0.2, backoff_max=1.0),
    }
    await procs.start("scheduler", env=redis_env)
    alerters: list[MonitorProcess] = [await procs.start("alerter", env=env) for _ in range(2)]
    log: list[str] = []

    async def transitions() -> int:
        return int(await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id IS NOT NULL"))

    async def quiet_kill(victim: MonitorProcess) -> None:
        """SIGKILL ``victim`` while no answer of Telegram is on its way (see the docstring)."""
        fake.hold()
        try:

            def quiet() -> bool:
                answered = [r.answered_at for r in fake.requests if r.answered_at is not None]
                return not answered or time.time() - max(answered) > 0.5

            await wait_for(quiet, timeout=10, message="no answer from Telegram for half a second")
            victim.send_signal(signal.SIGKILL)
            await wait_for(lambda: not victim.running, timeout=10, message="the killed alerter is gone")
        finally:
            fake.release()

    async def kill_one() -> None:
        await quiet_kill(alerters.pop(0))
        alerters.append(await procs.start("alerter", env=env))

    async def stop_one() -> None:
        victim = alerters.pop(0)
        assert await victim.terminate() == 0, victim.tail()
        alerters.append(await procs.start("alerter", env=env))

    async def add_one() -> None:
        alerters.append(await procs.start("alerter", env=env))

    async def errors() -> None:
        fake.fail_next(500, "Internal Server Error", times=15)

    async def hang() -> None:
        fake.hold()
        try:
            await wait_for(lambda: len(fake.held) >= 3, timeout=10, message="requests hanging")
        finally:
            fake.release()

    async def throttled() -> None:
        fake.fail_next(429, "Too Many Requests: retry after 2", times=6, retry_after=2)

    async def restart_redis() -> None:
        await private_redis.stop()
        await private_redis.start()

    faults: list[tuple[int, Callable[[], Awaitable[None]]]] = [
        (80, kill_one),
        (160, errors),
        (240, add_one),  # three alerters from here on
        (320, stop_one),
        (400, restart_redis),
        (480, hang),
        (560, kill_one),
        (640, throttled),
        (720, stop_one),
        (800, kill_one),
        (880, restart_redis),
    ]
    started = time.monotonic()
    for at, fault in faults:
        await wait_for(
            lambda at=at: _at_least(transitions, at), timeout=DEADLINE, message=f"{at} transitions"
        )
        await fault()
        log.append(f"{fault.__name__} at {await transitions()} transitions")
    await wait_for(lambda: _at_least(transitions, TRANSITIONS), timeout=DEADLINE, message="1,000 transitions")
    flapping.flapping = False
    redis = aioredis.Redis.from_url(private_redis.url())
    try:

        async def steady_and_settled() -> bool:
            # Every monitor up, every event delivered, nothing pending or unpublished.
            down = await db.fetchval("SELECT count(*) FROM monitor_state WHERE status <> 'up'")
            total = await transitions()
            state = await alert_state(db, redis)
            return down == 0 and state.settled(sent=total)

        await wait_for(
            steady_and_settled,
            timeout=DEADLINE,
            message=lambda: f"all delivered once; faults: {log}; Telegram: {len(fake.messages)} messages",
        )
    finally:
        await redis.aclose()

    expected: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in await db.fetch(
        """SELECT o.monitor_id, o.kind, c.config ->> 'chat_id' AS chat
           FROM outbox o JOIN monitor_channels mc ON mc.monitor_id = o.monitor_id
           JOIN channels c ON c.id = mc.channel_id
           WHERE o.monitor_id IS NOT NULL ORDER BY o.monitor_id, o.seq"""
    ):
        expected[(row["chat"], names[row["monitor_id"]])].append(row["kind"].upper())
    received: dict[tuple[str, str], list[str]] = defaultdict(list)
    for message in sorted(fake.messages, key=lambda r: r.received_at):
        for name, kind in alerts_in(message.text):
            received[(message.chat_id or "", name)].append(kind)
    total = sum(len(kinds) for kinds in expected.values())
    assert total >= TRANSITIONS
    wrong = {key: (kinds, received.get(key)) for key, kinds in expected.items() if received.get(key) != kinds}
    assert not wrong, f"{len(wrong)} monitor/chat sequences differ, e.g. {next(iter(wrong.items()))}"
    assert set(received) == set(expected)
    assert len(log) == len(faults)
    assert private_redis.starts == 3
    assert not procs.tracebacks()
    print(
        f"fault run: {total} alerts of {MONITORS} monitors in {len(fake.messages)} messages "
        f"to {CHATS} chats, "
        f"{time.monotonic() - started:.0f} s; faults: {', '.join(log)}; "
        f"429 from Telegram: {sum(1 for r in fake.requests if r.status == 429)} (6 scripted)"
    )


async def _at_least(count: Callable[[], Awaitable[int]], target: int) -> bool:
    return await count() >= target
