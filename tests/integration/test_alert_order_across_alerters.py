"""Order per monitor across two alerters: a recovery read by one alerter waits while the
other still retries the outage, then goes out after it."""

from __future__ import annotations

import signal

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import ProcessFactory, wait_for
from support.alerts import ScriptedTelegram, alerter_env, alerts_in, make_event, publish_events


async def _idle_ms(redis: aioredis.Redis, group: str, minimum: int = 1500) -> bool:
    consumers = await redis.xinfo_consumers("monitor:events", group)
    return bool(consumers) and all(int(c["idle"]) >= minimum for c in consumers)


@pytest.fixture
async def scripted_telegram() -> ScriptedTelegram:
    server = await ScriptedTelegram().start()
    yield server  # type: ignore[misc]
    await server.close()


async def test_recovery_waits_for_its_outage_in_another_alerter(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    procs: ProcessFactory,
    scripted_telegram: ScriptedTelegram,
) -> None:
    fake = scripted_telegram
    # Long claim idle: neither alerter may take over the other's entries during this test.
    env = alerter_env(fake, claim_idle=60, backoff_base=1.0, backoff_max=1.0, max_attempts=10)
    down = make_event(7, "api", 42, "down", incident_id=70)
    up = make_event(7, "api", 42, "up", incident_id=70)
    up["after_event_id"] = down["event_id"]
    fake.fail_text("<b>api</b>", 500, times=3)

    first = await procs.start("alerter", env=env)
    await publish_events(redis_client, [down])
    await wait_for(lambda: any("api" in (r.text or "") for r in fake.requests), timeout=15)
    # Freeze the first alerter mid-retry, so only the second one can read the recovery.
    first.send_signal(signal.SIGSTOP)
    try:
        # A read it had blocked in Redis before it froze must time out first (block = 1 s), or
        # Redis would hand the recovery to the frozen alerter.
        await wait_for(lambda: _idle_ms(redis_client, "alerter"), timeout=15)
        second = await procs.start("alerter", env=env)
        await publish_events(redis_client, [up])
        await second.wait_log("alert.waits_for_older", timeout=15)
    finally:
        first.send_signal(signal.SIGCONT)
    await wait_for(lambda: len(fake.messages) >= 2, timeout=30, message=fake.describe)
    sent = [alert for message in fake.messages for alert in alerts_in(message.text)]
    assert sent == [("api", "DOWN"), ("api", "UP")], fake.describe()
    assert not procs.tracebacks()
