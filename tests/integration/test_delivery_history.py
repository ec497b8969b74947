"""A destination's recent messages as the deliveries table tells them (monitor/alerter/history.py),
the pacer's memory when Redis lost its windows."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from structlog.testing import capture_logs

from monitor import db as monitor_db
from monitor.alerter.history import DeliveryHistory


async def test_each_message_sent_in_the_window_once_with_its_age(
    db: asyncpg.Connection, migrated: str
) -> None:
    rows = [  # (destination, status, seconds ago)
        ("telegram:-5", "sent", 10.0),  # one message that carried two alerts
        ("telegram:-5", "sent", 10.0),
        ("telegram:-5", "sent", 3.0),
        ("telegram:-5", "sent", 100.0),  # out of the window
        ("telegram:-5", "dead", 5.0),  # never went
        ("telegram:-6", "sent", 2.0),  # elsewhere
    ]
    await db.execute(  # one statement, one now(): as the alerter records a message's alerts
        """INSERT INTO deliveries (event_id, channel, status, attempts, sent_at)
           SELECT u.event_id, u.channel, u.status, 1,
                  CASE WHEN u.status = 'sent' THEN now() - make_interval(secs => u.ago) END
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::float8[])
                AS u(event_id, channel, status, ago)""",
        [uuid.uuid4() for _ in rows],
        *(list(column) for column in zip(*rows, strict=True)),
    )
    pool = await monitor_db.create_pool(migrated, min_size=0, max_size=1)
    try:
        sent = await DeliveryHistory(pool)("telegram:-5", 61.0)
    finally:
        await pool.close()

    assert sent is not None
    ages = sorted(age for _, age in sent)
    assert len(sent) == 2 and len({message for message, _ in sent}) == 2, sent
    assert ages == [pytest.approx(3.0, abs=1.0), pytest.approx(10.0, abs=1.0)]


async def test_a_database_away_is_no_history_and_one_warning(migrated: str) -> None:
    pool = await monitor_db.create_pool(migrated, min_size=0, max_size=1)
    await pool.close()
    history = DeliveryHistory(pool)
    with capture_logs() as logs:
        assert await history("telegram:-5", 61.0) is None
        assert await history("telegram:-5", 61.0) is None
    assert [e["event"] for e in logs] == ["pacing.history_unavailable"], logs
