"""Channels through the real processes: a test message, and alerts to every attached channel."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

pytestmark = pytest.mark.e2e


async def test_channel_test_message_and_alerts_to_attached_channels(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    fake_telegram: FakeTelegram,
    target: TargetServer,
) -> None:
    api_proc = await procs.start("api")
    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    api = api_client(api_proc.base_url)

    ops = await api.post(
        "/api/v1/channels", json={"kind": "telegram", "name": "Ops <team>", "config": {"chat_id": "-1001"}}
    )
    assert ops.status == 201, ops
    dev = await api.post(
        "/api/v1/channels", json={"kind": "telegram", "name": "Dev", "config": {"chat_id": 77}}
    )
    assert dev.status == 201 and dev.json["config"] == {"chat_id": "77"}, dev

    # A test message goes the way alerts go (outbox, relay, stream, alerter) to that chat only.
    queued = await api.post(f"/api/v1/channels/{ops.json['id']}/test")
    assert queued.status == 202, queued
    await fake_telegram.wait_messages(1, timeout=20)
    (test_message,) = fake_telegram.messages
    assert test_message.chat_id == "-1001" and "Ops &lt;team&gt;" in (test_message.text or "")

    # A monitor with both channels alerts both chats, once each.
    monitor = await watched_monitor(api, db, target.url("/"), [ops.json["id"], dev.json["id"]])
    assert monitor["channel_ids"] == [ops.json["id"], dev.json["id"]], monitor
    target.set(500)
    await fake_telegram.wait_messages(3, timeout=20)
    await wait_for(lambda: len(fake_telegram.messages) >= 3, timeout=5)
    downs = [m for m in fake_telegram.messages[1:] if "DOWN" in (m.text or "")]
    assert sorted(m.chat_id for m in downs) == ["-1001", "77"], fake_telegram.describe()
    # Recorded just after Telegram answered.
    await wait_for(lambda: _sent(db, 3), timeout=10)


async def _sent(db: asyncpg.Connection, expected: int) -> bool:
    count = await db.fetchval("SELECT count(*) FROM deliveries WHERE status = 'sent'")
    assert count <= expected, f"{count} deliveries recorded, expected {expected}"
    return bool(count == expected)
