"""``monitor alerts dead list`` and ``drop``, run as an operator runs them, on letters a real
alerter dead-lettered: a monitor's alert, a channel's test message and the checker's own
notice, all to a Telegram chat that is gone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, make_event, publish_events, run_monitor

from monitor.events import Event

GONE_CHAT = "7301"


def _notice(kind: str, name: str) -> dict[str, Any]:
    """An event of no monitor, as the api makes a channel's test (``kind="test"``, the channel's
    name) and the scheduler the checker's notices (no name)."""
    return Event(
        event_id=str(uuid.uuid4()),
        kind=kind,
        monitor_id=None,
        monitor_name=name,
        monitor_url=None,
        telegram_chat_id=None,
        incident_id=0,
        at=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        started_at=None,
        ended_at=None,
        duration_seconds=None,
        cause={},
        channels=[{"id": 9, "kind": "telegram", "name": "On call", "chat_id": GONE_CHAT}],
    ).to_dict()


async def test_dead_letters_say_what_they_are_about_and_one_can_be_dropped(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    base_env: dict[str, str],
) -> None:
    fake_telegram.reject_chat(GONE_CHAT)
    await procs.start("alerter", env=alerter_env(fake_telegram))
    down = make_event(41, "Shop", GONE_CHAT)
    test = _notice("test", "On call")
    lost = _notice("connectivity_lost", "")
    await publish_events(redis_client, [down, test, lost])
    await wait_for(
        lambda: _dead(db, redis_client, 3),
        timeout=20,
        message=lambda: f"three dead: {fake_telegram.describe()}",
    )

    code, out = await run_monitor(base_env, "alerts", "dead", "list")
    assert code == 0, out
    events = (down, test, lost)
    lines = {e["event_id"]: line for line in out.splitlines() for e in events if e["event_id"] in line}
    assert 'monitor=41 "Shop" kind=down' in lines[down["event_id"]], out
    assert 'channel test "On call" kind=test' in lines[test["event_id"]], out
    assert " checker kind=connectivity_lost" in lines[lost["event_id"]], out
    assert "None" not in out and "?" not in out, out
    ids = {event_id: line.split()[0] for event_id, line in lines.items()}

    # An unknown id stops the command before anything is removed.
    code, out = await run_monitor(base_env, "alerts", "dead", "drop", ids[test["event_id"]], "1-0")
    assert (code, out.strip()) == (1, "Error: no such dead letter: 1-0"), out
    assert await redis_client.xlen("monitor:events:dead") == 3

    code, out = await run_monitor(base_env, "alerts", "dead", "drop", ids[test["event_id"]])
    assert (code, out.strip()) == (0, "dropped 1 dead letter(s)"), out
    code, out = await run_monitor(base_env, "alerts", "dead", "list")
    assert code == 0 and test["event_id"] not in out, out
    assert down["event_id"] in out and lost["event_id"] in out, out
    # The delivery record stays: what was not sent can still be read.
    status = "SELECT status FROM deliveries WHERE event_id = $1"
    assert await db.fetchval(status, uuid.UUID(test["event_id"])) == "dead"

    code, out = await run_monitor(base_env, "alerts", "dead", "drop")
    assert code == 2 and "Missing argument 'IDS...'" in out, out
    assert not procs.tracebacks()


async def _dead(db: asyncpg.Connection, redis: aioredis.Redis, n: int) -> bool:
    state = await alert_state(db, redis)
    return state.dead == n and state.pending == 0
