"""A throttling, failing or refusing Telegram: retries, 429 waits, dead letters, order per monitor.

Real ``monitor alerter`` processes on the real Redis and database, against the fake Telegram;
events are published to ``monitor:events`` as the scheduler's relay does. The ``monitor alerts
dead`` commands run as subprocesses, as an operator would run them.
"""

from __future__ import annotations

import aiohttp
import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import (
    ScriptedTelegram,
    alert_state,
    alerter_env,
    delivered_alerts,
    make_event,
    publish_events,
    requests_with,
    run_monitor,
)

# time.time() of the fake and the alerter's monotonic clock may disagree by this much.
CLOCK_SLACK = 0.05


async def test_429_waits_retry_after_each_time_then_one_message(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    fake_telegram.fail_next(429, retry_after=2, times=2)
    # Backoff far below retry_after: the waits below are Telegram's, not the backoff's. Two
    # attempts at most: were each 429 a failed attempt, the second would dead-letter the alert.
    env = alerter_env(fake_telegram, max_attempts=2, backoff_base=0.1, backoff_max=0.2)
    await procs.start("alerter", env=env)
    event = make_event(1, "throttled-shop", "7001")
    await publish_events(redis_client, [event])

    await fake_telegram.wait_messages(1, timeout=20)
    await wait_for(lambda: _settled(db, redis_client, sent=1), timeout=10, message="settled")
    first, second, third = fake_telegram.requests
    assert [r.status for r in (first, second, third)] == [429, 429, 200]
    assert second.received_at - first.received_at >= 2 - CLOCK_SLACK
    assert third.received_at - second.received_at >= 2 - CLOCK_SLACK
    assert 4 - CLOCK_SLACK <= third.received_at - first.received_at < 7, "waited for retry_after, no more"
    assert [(a.name, a.kind) for a in delivered_alerts(fake_telegram)] == [("throttled-shop", "DOWN")]
    row = await db.fetchrow("SELECT status, attempts FROM deliveries WHERE event_id = $1", event["event_id"])
    # Being throttled is waiting, not a failed attempt: however many 429s, one attempt.
    assert (row["status"], row["attempts"]) == ("sent", 1)
    assert not procs.tracebacks()


async def test_5xx_is_retried_chat_not_found_is_dead_lettered_at_once_and_retry_redelivers(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    base_env: dict[str, str],
) -> None:
    ok_chat, gone_chat = "7101", "7102"
    fake_telegram.fail_next(500, times=2, chat_id=ok_chat)
    fake_telegram.reject_chat(gone_chat)  # 400 "Bad Request: chat not found"
    alerter = await procs.start("alerter", env=alerter_env(fake_telegram, max_attempts=5))
    retried = make_event(1, "flaky-shop", ok_chat)
    lost = [make_event(2, "lost-shop", gone_chat), make_event(3, "lost-blog", gone_chat)]
    await publish_events(redis_client, [retried, *lost])

    await wait_for(
        lambda: _settled(db, redis_client, sent=1, dead=2),
        timeout=20,
        message=lambda: f"one sent, two dead; Telegram saw: {fake_telegram.describe()}",
    )
    # Transient: two 500s, then delivered, the delivery row counting three attempts.
    assert [r.status for r in requests_with(fake_telegram, "flaky-shop")] == [500, 500, 200]
    # Permanent: one attempt each (alone or combined in one message), never retried.
    for event in lost:
        [attempt] = requests_with(fake_telegram, event["monitor_name"])
        assert attempt.status == 400, fake_telegram.describe()
    rows = {
        r["event_id"]: r
        for r in await db.fetch("SELECT event_id::text, status, attempts, last_error FROM deliveries")
    }
    assert (rows[retried["event_id"]]["status"], rows[retried["event_id"]]["attempts"]) == ("sent", 3)
    for event in lost:
        row = rows[event["event_id"]]
        assert (row["status"], row["attempts"]) == ("dead", 1)
        assert "chat not found" in row["last_error"]
    assert await redis_client.xlen("monitor:events:dead") == 2
    assert await _metric(alerter.base_url, "monitor_dead_letters_total") == 2

    code, out = await run_monitor(base_env, "alerts", "dead", "list")
    assert code == 0, out
    letters = {}
    for line in out.splitlines():
        for event in lost:
            if event["event_id"] in line:
                assert "chat not found" in line and f"telegram:{gone_chat}" in line, line
                letters[event["monitor_name"]] = line.split()[0]
    assert set(letters) == {"lost-shop", "lost-blog"}, out

    # The chat is fixed (the bot added back): re-drive one letter by id, then the rest.
    fake_telegram.reset()
    code, out = await run_monitor(base_env, "alerts", "dead", "retry", letters["lost-shop"])
    assert (code, out.strip()) == (0, "re-drove 1 dead letter(s)"), out
    await wait_for(lambda: _settled(db, redis_client, sent=2, dead=1), timeout=20, message="one re-driven")
    code, out = await run_monitor(base_env, "alerts", "dead", "retry", "--all")
    assert (code, out.strip()) == (0, "re-drove 1 dead letter(s)"), out
    await wait_for(lambda: _settled(db, redis_client, sent=3), timeout=20, message="all re-driven")

    delivered = sorted((a.name, a.kind, a.chat_id) for a in delivered_alerts(fake_telegram))
    assert delivered == [
        ("flaky-shop", "DOWN", ok_chat),
        ("lost-blog", "DOWN", gone_chat),
        ("lost-shop", "DOWN", gone_chat),
    ]
    assert (await alert_state(db, redis_client)).dead == 0
    code, out = await run_monitor(base_env, "alerts", "dead", "list")
    assert (code, out.strip()) == (0, "no dead letters"), out
    assert not procs.tracebacks()


async def test_a_retried_down_keeps_its_recovery_behind_it_and_holds_back_no_other_monitor(
    db: asyncpg.Connection, redis_client: aioredis.Redis, procs: ProcessFactory
) -> None:
    chat, other_chat = "7201", "7202"
    async with ScriptedTelegram() as fake:
        # Retries 2-4 s apart (full jitter on 4 s): longer than the chat's 1 s rate limit, so
        # the other monitor's alert has its turn on the shared chat while this one waits.
        env = alerter_env(fake, max_attempts=10, backoff_base=4, backoff_max=4)
        await procs.start("alerter", env=env)
        fake.fail_text("<b>api</b>", 500, times=3)  # any message carrying the "api" monitor's alert
        api_down = make_event(1, "api", chat, "down")
        await publish_events(redis_client, [api_down])
        await wait_for(lambda: requests_with(fake, "api"), timeout=15, message="first attempt")

        # Meanwhile: the recovery of "api", and outages of two other monitors, one in the same chat.
        api_up = make_event(1, "api", chat, "up")
        web_down = make_event(2, "web", chat, "down")
        db_down = make_event(3, "db", other_chat, "down")
        await publish_events(redis_client, [api_up, web_down, db_down])
        await wait_for(
            lambda: _settled(db, redis_client, sent=4),
            timeout=45,
            message=lambda: f"all delivered; Telegram saw: {fake.describe()}",
        )

    attempts = requests_with(fake, "api", "DOWN")
    assert [r.status for r in attempts] == [500, 500, 500, 200], fake.describe()
    alerts = {(a.name, a.kind): a for a in delivered_alerts(fake)}
    assert sorted(alerts) == [("api", "DOWN"), ("api", "UP"), ("db", "DOWN"), ("web", "DOWN")]
    # The recovery arrives after the down: a later message, or a later line of the same one.
    assert alerts["api", "DOWN"].order < alerts["api", "UP"].order
    # The others went out on their first try, before "api" finally got through.
    success = alerts["api", "DOWN"].request
    for name in ("web", "db"):
        [only] = requests_with(fake, name)
        assert only.status == 200 and only.received_at < success.received_at, fake.describe()
    assert alerts["web", "DOWN"].chat_id == chat and alerts["db", "DOWN"].chat_id == other_chat
    assert not procs.tracebacks()


async def _settled(db: asyncpg.Connection, redis: aioredis.Redis, *, sent: int, dead: int = 0) -> bool:
    return (await alert_state(db, redis)).settled(sent, dead)


async def _metric(base_url: str, name: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(f"{base_url}/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics:\n{text}")
