"""The alerter's consumer group under faults: a SIGKILL mid-send, and two alerters sharing the work.

Real ``monitor alerter`` processes on the real Redis and database, against the fake Telegram.
Events are put on ``monitor:events`` exactly as the scheduler's relay does (``Event.to_dict()``
through ``monitor.events.publish``), which is all the alerter sees of the scheduler.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import (
    alert_state,
    alerter_env,
    counts,
    delivered_alerts,
    event_chat,
    group_caught_up,
    make_event,
    publish_events,
)

from monitor import keys

CHAT = "4242"
CLAIM_IDLE = 2.0


async def test_a_send_in_flight_at_sigkill_is_delivered_exactly_once_by_the_next_alerter(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    env = alerter_env(fake_telegram, claim_idle=CLAIM_IDLE)
    first = await procs.start("alerter", env=env)
    fake_telegram.hold()
    event = make_event(1, "crash-shop", CHAT)
    await publish_events(redis_client, [event])

    [in_flight] = await wait_for(lambda: fake_telegram.held, timeout=15, message="the send is held")
    assert "crash-shop" in (in_flight.text or "")
    first.send_signal(signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL

    # Nothing recorded as sent, the entry still pending in the group, owned by the dead consumer.
    state = await alert_state(db, redis_client)
    assert state.deliveries == {} and state.pending == 1, state
    # The request was held, unanswered, when its client died: Telegram never processed it
    # (the fake cancels a held request whose connection closes), so it is no delivery.
    await wait_for(lambda: in_flight.abandoned, timeout=5, message="the held request abandoned")
    fake_telegram.release()

    second = await procs.start("alerter", env=env)
    await second.wait_log("alerter.reclaimed", timeout=15)
    await wait_for(
        lambda: _settled(db, redis_client, sent=1),
        timeout=20,
        message=lambda: f"delivered after restart; Telegram saw: {fake_telegram.describe()}",
    )
    alerts = delivered_alerts(fake_telegram, exclude=[in_flight])
    assert [(a.name, a.kind, a.chat_id) for a in alerts] == [("crash-shop", "DOWN", CHAT)]
    # Logged after the delivery row and the XACK, so it may come a moment after "settled".
    await second.wait_log("alert.sent", event_id=event["event_id"], timeout=10)

    # The same event once more (a relay that crashed between XADD and marking its row): skipped.
    await publish_events(redis_client, [event])
    await second.wait_log("alert.duplicate_skipped", event_id=event["event_id"], timeout=10)
    await wait_for(lambda: _settled(db, redis_client, sent=1), timeout=10, message="duplicate acked")
    assert len(delivered_alerts(fake_telegram, exclude=[in_flight])) == 1, fake_telegram.describe()
    assert not procs.tracebacks()


async def test_an_event_published_twice_while_its_send_is_in_flight_is_sent_once(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    # The relay publishes a row twice when it dies (or the database fails) between its XADD and
    # marking the row; the copy can arrive while the first is still being sent.
    await procs.start("alerter", env=alerter_env(fake_telegram))
    fake_telegram.hold()
    event = make_event(1, "twice-shop", CHAT)
    await publish_events(redis_client, [event])
    await wait_for(lambda: fake_telegram.held, timeout=15, message="the first copy's send is held")
    [copy] = await publish_events(redis_client, [event])
    # Once the claim heartbeat resets the copy's idle time, the alerter holds it as in hand.
    idle: list[int] = []
    await wait_for(lambda: _heartbeat_seen(redis_client, copy, idle), timeout=10, message="the copy in hand")
    fake_telegram.release()
    await wait_for(lambda: _settled(db, redis_client, sent=1), timeout=20, message="settled")
    assert len(delivered_alerts(fake_telegram)) == 1, fake_telegram.describe()


async def test_two_alerters_share_the_group_and_deliver_each_of_200_events_once(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    chats = ["5001", "5002", "5003", "5004"]
    env = alerter_env(fake_telegram, claim_idle=CLAIM_IDLE, max_attempts=10, backoff_base=1, backoff_max=4)
    alerters = [await procs.start("alerter", env=env) for _ in range(2)]
    # Telegram hangs at first, then fails the first messages: entries stay in hand for several
    # claim-idle periods, so only the claim heartbeat keeps each alerter from taking (and
    # sending) the other's.
    fake_telegram.hold()
    fake_telegram.fail_next(500, times=6)

    names = [f"pair-{i:03d}" for i in range(200)]
    events = [make_event(i + 1, name, chats[i % len(chats)]) for i, name in enumerate(names)]
    # In bursts of 20, each once the group has read the last: the consumers take turns.
    for start in range(0, len(events), 20):
        await publish_events(redis_client, events[start : start + 20])
        await wait_for(lambda: group_caught_up(redis_client), timeout=10, message="burst read")
    await wait_for(lambda: len(fake_telegram.held) >= 2, timeout=10, message="sends held")

    owners = await _owners(redis_client)
    assert len(owners) == 2 and sum(owners.values()) == 200, owners
    held_since = time.monotonic()

    async def held_by_the_same_owners() -> bool:
        # At every look, for three claim-idle periods: no alerter took the other's entries.
        assert await _owners(redis_client) == owners, "an alerter took over entries the other had in hand"
        return time.monotonic() - held_since >= 3 * CLAIM_IDLE

    await wait_for(held_by_the_same_owners, timeout=4 * CLAIM_IDLE, interval=0.2)
    fake_telegram.release()

    await wait_for(
        lambda: _settled(db, redis_client, sent=200),
        timeout=60,
        message=lambda: f"200 events delivered: {len(delivered_alerts(fake_telegram))} alerts so far",
    )
    alerts = delivered_alerts(fake_telegram)
    assert counts(alerts) == Counter({(name, "DOWN"): 1 for name in names})
    for alert, event in zip(sorted(alerts, key=lambda a: a.name), events, strict=True):
        assert alert.chat_id == event_chat(event), (alert.name, alert.chat_id)
    assert sum(r.status == 500 for r in fake_telegram.requests) == 6, fake_telegram.describe()

    # Each alerter sent what it had read (its alert.sent lines follow the delivery rows).
    def sent_by() -> list[int]:
        return sorted(len(a.events("alert.sent")) for a in alerters)

    await wait_for(
        lambda: sent_by() == sorted(owners.values()),
        timeout=10,
        message=lambda: f"alert.sent lines per alerter {sent_by()} match {owners}",
    )
    assert not any(a.events("alerter.reclaimed") for a in alerters)
    assert await db.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'") == 200
    assert not procs.tracebacks()


async def _heartbeat_seen(redis: aioredis.Redis, entry_id: str, idle_seen: list[int]) -> bool:
    """True once the entry's idle time went down between two calls (it was claimed again)."""
    rows = await redis.xpending_range(
        keys.EVENTS_STREAM, keys.ALERTER_GROUP, min=entry_id, max=entry_id, count=1
    )
    if not rows:
        return False
    idle_seen.append(int(rows[0]["time_since_delivered"]))
    return len(idle_seen) > 1 and idle_seen[-1] < idle_seen[-2]


async def _owners(redis: aioredis.Redis) -> dict[str, int]:
    """Entries pending in the alerter group, by consumer."""
    summary = await redis.xpending(keys.EVENTS_STREAM, keys.ALERTER_GROUP)
    return {c["name"]: int(c["pending"]) for c in summary["consumers"]}


async def _settled(db: asyncpg.Connection, redis: aioredis.Redis, *, sent: int, dead: int = 0) -> bool:
    return (await alert_state(db, redis)).settled(sent, dead)


async def test_a_copy_another_alerter_holds_waits_for_its_delivery_and_sends_nothing(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    # The relay published an event twice (its XADD went through, marking its row did not) and
    # the first copy is in another alerter's hands, not yet recorded: this one must not send
    # its copy. Checking the deliveries table alone sent both (seen in the cluster fault test).
    alerter = await procs.start("alerter", env=alerter_env(fake_telegram, claim_idle=CLAIM_IDLE))
    event = make_event(1, "copy-shop", CHAT)
    key = f"{keys.SENDING_PREFIX}{event['event_id']}:telegram:{CHAT}"
    await redis_client.set(key, "another-alerter", px=60_000)
    await publish_events(redis_client, [event])
    await alerter.wait_log("alert.held_elsewhere", event_id=event["event_id"], timeout=15)
    # The other alerter sends it and records it: this one acks its copy, sending nothing.
    await db.execute(
        """INSERT INTO deliveries (event_id, channel, status, attempts, sent_at)
           VALUES ($1, $2, 'sent', 1, now())""",
        event["event_id"],
        f"telegram:{CHAT}",
    )
    await wait_for(lambda: _settled(db, redis_client, sent=1), timeout=15, message="the copy acked")
    assert delivered_alerts(fake_telegram) == [], fake_telegram.describe()

    # Another event whose holder died before sending: its key lapses with its claim, and this
    # alerter sends it then.
    lost = make_event(2, "orphan-shop", CHAT)
    await redis_client.set(
        f"{keys.SENDING_PREFIX}{lost['event_id']}:telegram:{CHAT}", "dead-alerter", px=1500
    )
    await publish_events(redis_client, [lost])
    await wait_for(lambda: delivered_alerts(fake_telegram), timeout=15, message="sent once the key lapsed")
    assert [(a.name, a.kind) for a in delivered_alerts(fake_telegram)] == [("orphan-shop", "DOWN")]
    assert not procs.tracebacks()
