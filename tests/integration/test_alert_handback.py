"""A graceful stop hands the alerts still waiting back to the other alerters at once.

Alerter A takes an alert whose first send fails (a 500) and backs off for half a minute,
so A holds it, waiting. A is then stopped (SIGTERM) while alerter B runs with a claim threshold of a
minute. Before, the alert stayed pending on A and B took it only after that minute, while
newer alerts of the same monitor could go out first; now A hands it back as it stops and B
delivers it within seconds, once.
"""

from __future__ import annotations

import time

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, delivered_alerts, make_event, publish_events

CLAIM_IDLE = 60.0  # B would wait this long for an entry left pending on A


async def test_a_stopped_alerter_hands_its_waiting_alerts_to_another_at_once(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    # A's only send fails; A backs off for 15 to 30 s. (A 429's retry_after would now hold
    # every alerter: the wait is kept in Redis for the chat, not in A.)
    fake_telegram.fail_next(500)
    env = alerter_env(fake_telegram, claim_idle=CLAIM_IDLE, backoff_base=30.0, backoff_max=30.0)
    a = await procs.start("alerter", env=env)
    event = make_event(1, "handed-back-shop", "7401")
    await publish_events(redis_client, [event])
    await wait_for(lambda: len(fake_telegram.requests) == 1, timeout=20, message="A's throttled send")
    await a.wait_log("alert.send_failed")

    b = await procs.start("alerter", env=env)
    stopped = time.monotonic()
    assert await a.terminate() == 0, a.tail()
    assert a.events("alerter.handed_back", entries=1), a.tail()
    assert a.events("alerter.stopped", clean=True), a.tail()

    await fake_telegram.wait_messages(1, timeout=20)
    assert time.monotonic() - stopped < CLAIM_IDLE / 3, "B took the alert without waiting out the claim"

    async def settled() -> bool:
        return (await alert_state(db, redis_client)).settled(sent=1)

    await wait_for(settled, timeout=20, message="delivered once and acknowledged")
    assert [(x.name, x.kind) for x in delivered_alerts(fake_telegram)] == [("handed-back-shop", "DOWN")]
    assert b.events("alerter.reclaimed", entries=1), b.tail()
    assert not procs.tracebacks()
