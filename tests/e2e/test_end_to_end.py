"""The whole path with real processes: api, scheduler and alerter on the real services.

A monitor created through the API checks a local target every second; the target fails,
then recovers. Exactly one down and one recovery message reach the fake Telegram, in that
order; the checks are rows of the ``checks`` hypertable; the incident is listed; and the
uptime endpoint's figure is the incident's share of each window, computed here from the
definition (the observed window is the requested one clipped to the monitor's lifetime).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError
from support import ApiClient, FakeTelegram, ProcessFactory, TargetServer, parse_time, rfc3339, wait_for

pytestmark = pytest.mark.e2e

CHAT_ID = "-1001234567890"
# Characters that HTML parse mode would take for markup: the message must escape them.
NAME = "e2e <shop> & co"
DEADLINE = 30.0


def duration_seconds(text: str) -> list[float]:
    """Every duration written like "2s", "1m 5s" or "1h 2m" in ``text``, in seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    found = []
    for match in re.finditer(r"\b\d+[dhms]\b(?: \d+[dhms]\b)*", text):
        found.append(float(sum(int(part[:-1]) * units[part[-1]] for part in match.group(0).split())))
    return found


def expected_uptime(
    window_from: datetime, window_to: datetime, created_at: datetime, incident: tuple[datetime, datetime]
) -> tuple[float, float]:
    """(uptime percent, downtime seconds) of a window that ends in the past, from the definition."""
    start = max(window_from, created_at)
    began, ended = incident
    down = max(0.0, (min(ended, window_to) - max(began, start)).total_seconds())
    span = (window_to - start).total_seconds()
    return 100.0 * (1.0 - down / span), down


async def monitor_status(api: ApiClient, monitor_id: int) -> str:
    return str((await api.monitor(monitor_id))["status"])


async def delivery_state(db: asyncpg.Connection, redis_client: aioredis.Redis) -> dict[str, Any]:
    """Where the events are: outbox rows, unpublished ones, deliveries by status, stream entries
    pending in the alerter's group (None while the group does not exist)."""
    outbox = await db.fetchrow(
        "SELECT count(*) AS total, count(*) FILTER (WHERE published_at IS NULL) AS unpublished FROM outbox"
    )
    deliveries = await db.fetch("SELECT status, count(*) AS n FROM deliveries GROUP BY status")
    try:
        pending = (await redis_client.xpending("monitor:events", "alerter"))["pending"]
    except ResponseError:
        pending = None
    return {
        "outbox": outbox["total"],
        "unpublished": outbox["unpublished"],
        "deliveries": {r["status"]: r["n"] for r in deliveries},
        "pending": pending,
    }


# Both events published, both deliveries sent, nothing pending in the alerter's group.
SETTLED = {"outbox": 2, "unpublished": 0, "deliveries": {"sent": 2}, "pending": 0}


async def test_outage_is_checked_alerted_once_each_way_and_accounted(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
) -> None:
    api_proc = await procs.start("api")
    scheduler = await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    api: ApiClient = api_client(api_proc.base_url)

    window_from = datetime.now(UTC) - timedelta(hours=1)  # before the monitor existed
    monitor = await api.create_monitor(
        name=NAME,
        url=target.url("/health"),
        interval_seconds=1,
        timeout_seconds=1,
        confirm_after=2,
        telegram_chat_id=CHAT_ID,
    )
    monitor_id = monitor["id"]
    created_at = parse_time(monitor["created_at"])

    await wait_for(lambda: _is(api, monitor_id, "up"), timeout=DEADLINE, message="monitor up")
    target.set(500)
    await fake_telegram.wait_messages(1, timeout=DEADLINE)
    assert await monitor_status(api, monitor_id) == "down"
    target.set(200)
    await fake_telegram.wait_messages(2, timeout=DEADLINE)
    seen: list[dict[str, Any]] = [{}]

    async def settled() -> bool:
        seen[0] = await delivery_state(db, redis_client)
        return seen[0] == SETTLED

    await wait_for(
        settled,
        timeout=DEADLINE,
        message=lambda: f"events delivered and acknowledged: want {SETTLED}, have {seen[0]}",
    )
    window_to = datetime.now(UTC)
    # Stopped here, so that the check rows compared below stop growing (it stops cleanly).
    assert await scheduler.terminate() == 0, scheduler.tail()
    assert scheduler.events("scheduler.stopped", clean=True), scheduler.tail()

    # -- Telegram: exactly one down, then exactly one recovery --------------------------------
    assert all(r.token_ok and r.method == "sendMessage" for r in fake_telegram.requests), (
        fake_telegram.describe()
    )
    messages = fake_telegram.messages
    assert len(fake_telegram.requests) == len(messages) == 2, fake_telegram.describe()
    down, up = messages
    assert down.received_at <= up.received_at
    for message in messages:
        assert message.chat_id == CHAT_ID
        assert message.parse_mode == "HTML"
        assert html.escape(NAME) in (message.text or ""), message.text
        assert NAME not in (message.text or ""), "the monitor name reached Telegram unescaped"
    assert "DOWN" in (down.text or "") and "500" in (down.text or ""), down.text
    assert "UP" in (up.text or ""), up.text

    # -- the incident, from the API and against the check rows --------------------------------
    response = await api.get(f"/api/v1/monitors/{monitor_id}/incidents")
    assert response.status == 200, response
    incidents = response.json["items"]
    assert len(incidents) == 1, incidents
    incident = incidents[0]
    assert incident["ongoing"] is False
    started, ended = parse_time(incident["started_at"]), parse_time(incident["ended_at"])
    assert started < ended
    outage = (ended - started).total_seconds()
    assert incident["duration_seconds"] == pytest.approx(outage, abs=0.001)

    rows = await db.fetch(
        "SELECT time, ok, status_code FROM checks WHERE monitor_id = $1 ORDER BY time", monitor_id
    )
    first_failure = next(i for i, r in enumerate(rows) if not r["ok"])
    recovery = next(i for i in range(first_failure, len(rows)) if rows[i]["ok"])
    failing = rows[first_failure:recovery]
    assert all(r["ok"] for r in rows[:first_failure]) and first_failure >= 1
    assert all(not r["ok"] and r["status_code"] == 500 for r in failing)
    assert len(failing) >= 2  # confirm_after
    assert all(r["ok"] for r in rows[recovery:])
    # The incident runs from the first failing check to the first success after it.
    assert started == rows[first_failure]["time"]
    assert ended == rows[recovery]["time"]

    # The recovery message names the outage's duration (written rounded to the second).
    durations = duration_seconds(up.text or "")
    assert len(durations) == 1, up.text
    assert durations[0] == pytest.approx(outage, abs=1.0), (up.text, outage)

    # -- the checks are rows of the hypertable -------------------------------------------------
    hypertables = await db.fetch(
        "SELECT hypertable_schema, hypertable_name FROM timescaledb_information.hypertables"
    )
    assert ("public", "checks") in [(h["hypertable_schema"], h["hypertable_name"]) for h in hypertables]
    chunks = {
        r["chunk"]
        for r in await db.fetch(
            "SELECT DISTINCT tableoid::regclass::text AS chunk FROM checks WHERE monitor_id = $1", monitor_id
        )
    }
    hypertable_chunks = {r["chunk"] for r in await db.fetch("SELECT show_chunks('checks')::text AS chunk")}
    assert chunks and chunks <= hypertable_chunks, (chunks, hypertable_chunks)
    response = await api.get(f"/api/v1/monitors/{monitor_id}/checks", params={"limit": "1000"})
    assert response.status == 200, response
    listed = response.json["items"]
    assert [parse_time(c["time"]) for c in listed] == [r["time"] for r in reversed(rows)]

    # -- uptime over explicit windows ----------------------------------------------------------
    windows = {
        "since before creation": window_from,
        "from between creation and the outage": created_at + (started - created_at) / 2,
        "from the middle of the outage": started + (ended - started) / 2,
    }
    for label, start in windows.items():
        response = await api.get(
            f"/api/v1/monitors/{monitor_id}/uptime", params={"from": rfc3339(start), "to": rfc3339(window_to)}
        )
        assert response.status == 200, (label, response)
        body = response.json
        percent, down_seconds = expected_uptime(start, window_to, created_at, (started, ended))
        in_window = [r for r in rows if start <= r["time"] < window_to]
        assert body["monitor_id"] == monitor_id
        assert parse_time(body["from"]) == start and parse_time(body["to"]) == window_to, (label, body)
        # The span the figures are computed over: the window clipped to the monitor's life.
        assert parse_time(body["observed_from"]) == max(start, created_at), (label, body)
        assert parse_time(body["observed_to"]) == window_to, (label, body)
        assert body["checks"] == len(in_window), (label, body)
        assert body["checks_up"] == sum(1 for r in in_window if r["ok"]), (label, body)
        assert body["uptime_percent"] == pytest.approx(percent, abs=1e-6), (label, body, percent)
        assert body["downtime_seconds"] == pytest.approx(down_seconds, abs=1e-3), (label, body, down_seconds)
        assert 0 < body["uptime_percent"] < 100, (label, body)

    # -- every process stops cleanly, and none logged a traceback ------------------------------
    for proc in reversed(procs.processes):
        if proc.running:
            assert await proc.terminate() == 0, proc.tail()
        assert proc.events(f"{proc.name}.stopped", clean=True), proc.tail()
    assert procs.tracebacks() == {}


async def _is(api: ApiClient, monitor_id: int, status: str) -> bool:
    return await monitor_status(api, monitor_id) == status
