"""ntfy channel through the real processes, to a fake ntfy server with a protected topic: the
channel made by the API (topic URL and token masked in every answer, sealed in the database),
a test message, then an outage and its recovery, each delivered once, in order, with the
priority of its kind; a 429 from ntfy is waited out."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import asyncpg
import pytest
from support import ApiClient, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e


async def test_ntfy_outage_and_recovery_arrive_once_each_in_order(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    target: TargetServer,
    fake_channels: FakeChannels,
) -> None:
    api_proc = await procs.start("api")
    await procs.start("scheduler")
    await procs.start("alerter")
    api = api_client(api_proc.base_url)
    topic = "mon-" + secrets.token_hex(8)
    token = fake_channels.ntfy.protect(topic)

    created = await api.post(
        "/api/v1/channels",
        json={
            "kind": "ntfy",
            "name": "Phone <ops>",
            "config": {"url": fake_channels.ntfy.url_for(topic), "token": token, "priority_down": "high"},
        },
    )
    assert created.status == 201, created
    channel_id = created.json["id"]
    expected = {"url": MASK, "token": MASK, "priority_down": 4, "priority_up": 3}
    assert created.json["config"] == expected, created
    assert (await api.get(f"/api/v1/channels/{channel_id}")).json["config"] == expected
    listed = (await api.get("/api/v1/channels")).json["items"]
    assert next(c for c in listed if c["id"] == channel_id)["config"] == expected
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    assert topic not in stored and token not in stored

    queued = await api.post(f"/api/v1/channels/{channel_id}/test")
    assert queued.status == 202, queued
    (test,) = await fake_channels.ntfy.wait_messages(1, destination=topic, timeout=20)
    assert test.payload["title"] == "Test message from monitor", fake_channels.ntfy.describe()
    assert test.payload["message"] == "Channel Phone <ops> works." and test.payload["priority"] == 4
    assert test.headers["Authorization"] == f"Bearer {token}"

    await watched_monitor(api, db, target.url("/"), [channel_id])
    # ntfy's "too many requests" (42901, no Retry-After) is waited out, not a failed attempt.
    fake_channels.ntfy.fail(429, times=1)
    target.set(500)
    await fake_channels.ntfy.wait_messages(2, destination=topic, timeout=30)
    target.set(200)
    await fake_channels.ntfy.wait_messages(3, destination=topic, timeout=30)
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    test, down, up = fake_channels.ntfy.messages_to(topic)
    assert down.payload["title"] == "shop is DOWN" and down.payload["priority"] == 4
    assert down.payload["tags"] == ["rotating_light"] and down.payload["click"] == target.url("/")
    assert "Cause: " in down.payload["message"] and "500" in down.payload["message"]
    assert up.payload["title"] == "shop is UP again" and "priority" not in up.payload  # 3, the default
    assert up.payload["tags"] == ["white_check_mark"] and "Outage lasted" in up.payload["message"]
    assert not any(r.attachment for r in fake_channels.ntfy.requests)
    refused = [r for r in fake_channels.ntfy.requests if r.scripted]
    assert [r.status for r in refused] == [429] and refused[0].json["title"] == "shop is DOWN"
    # The 429 was waiting, not an attempt: the DOWN went out on its first counted attempt.
    attempts = await db.fetchval(
        "SELECT attempts FROM deliveries WHERE channel = $1 AND event_id = "
        "(SELECT event_id FROM outbox WHERE kind = 'down')",
        f"ntfy:{channel_id}",
    )
    assert attempts == 1
