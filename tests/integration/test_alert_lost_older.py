"""A monitor's older event lost from the stream is published again, not waited for in vain.

The outbox says the outage went to the stream, but its entry is gone (a Redis that kept no
data, a trim): nobody holds it and nobody will read it. The recovery, read by the alerter,
must not wait for it until the order wait runs out, nor overtake it: the alerter publishes
the outage again from the outbox, delivers it, then the recovery.

And an event an alerter cannot read at all is final for its destinations (dead), so the
monitor's newer events go on instead of waiting for it.
"""

from __future__ import annotations

import json

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, alerts_in, make_event, publish_events

from monitor import keys

CHAT = "6100"


async def _outbox(db: asyncpg.Connection, event: dict, seq: int, stream_id: str | None) -> None:
    await db.execute(
        """INSERT INTO outbox
               (event_id, monitor_id, kind, payload, seq, destinations, published_at, stream_id)
           VALUES ($1::uuid, $2, $3, $4, $5, $6, now(), $7)""",
        event["event_id"],
        event["monitor_id"],
        event["kind"],
        event,
        seq,
        [f"telegram:{CHAT}"],
        stream_id,
    )


async def test_a_lost_outage_is_published_again_and_delivered_before_its_recovery(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    down = {**make_event(61, "lost-shop", CHAT, "down", incident_id=610), "seq": 1}
    up = {
        **make_event(61, "lost-shop", CHAT, "up", incident_id=610),
        "seq": 2,
        "after_event_id": down["event_id"],
    }
    # The outage reached the stream and was lost from it.
    (lost_id,) = await publish_events(redis_client, [down])
    await redis_client.xdel(keys.EVENTS_STREAM, lost_id)
    await _outbox(db, down, 1, lost_id)
    (up_id,) = await publish_events(redis_client, [up])
    await _outbox(db, up, 2, up_id)

    alerter = await procs.start("alerter", env=alerter_env(fake_telegram, claim_idle=60))
    await alerter.wait_log("alert.older_republished", older=down["event_id"], timeout=20)
    await fake_telegram.wait_messages(2, timeout=20)
    sent = [alert for message in fake_telegram.messages for alert in alerts_in(message.text)]
    assert sent == [("lost-shop", "DOWN"), ("lost-shop", "UP")], fake_telegram.describe()
    await wait_for(lambda: _settled(db, redis_client, 2), timeout=20, message="both final, nothing pending")
    assert not alerter.events("alert.older_not_delivered")
    assert not procs.tracebacks()


async def test_an_unreadable_older_event_does_not_hold_the_next_one(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    broken = {**make_event(62, "odd-shop", CHAT, "down", incident_id=620), "seq": 1, "v": 99}
    down = {**make_event(62, "odd-shop", CHAT, "down", incident_id=621), "seq": 2}
    ids = await publish_events(redis_client, [broken, down])
    await _outbox(db, broken, 1, ids[0])
    await _outbox(db, down, 2, ids[1])

    alerter = await procs.start("alerter", env=alerter_env(fake_telegram, claim_idle=60))
    await fake_telegram.wait_messages(1, timeout=20)
    assert [a for m in fake_telegram.messages for a in alerts_in(m.text)] == [("odd-shop", "DOWN")]
    status = await db.fetchval("SELECT status FROM deliveries WHERE event_id = $1::uuid", broken["event_id"])
    assert status == "dead"
    dead = await redis_client.xrange(keys.DEAD_STREAM)
    assert [json.loads(f[keys.EVENT_FIELD])["event_id"] for _, f in dead] == [broken["event_id"]]
    assert not alerter.events("alert.waits_for_older")
    assert not procs.tracebacks()


async def _settled(db: asyncpg.Connection, redis: aioredis.Redis, sent: int) -> bool:
    state = await alert_state(db, redis)
    return state.deliveries == {"sent": sent} and state.pending == 0
