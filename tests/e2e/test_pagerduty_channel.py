"""PagerDuty through the real processes, to a fake Events API v2 that checks events as
PagerDuty does and keeps alert state: a test (an info alert resolved at once), then an outage
that triggers an alert and a recovery that resolves it, with the same dedup key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e


async def test_pagerduty_trigger_then_resolve_with_the_same_dedup_key(
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
    key = fake_channels.pagerduty.new_routing_key()
    url = fake_channels.pagerduty.url_for()

    refused = await api.post(
        "/api/v1/channels", json={"kind": "pagerduty", "name": "x", "config": {"routing_key": key[:-1]}}
    )
    assert refused.status == 422 and key[:-1] not in refused.text, refused
    created = await api.post(
        "/api/v1/channels",
        json={"kind": "pagerduty", "name": "On call", "config": {"routing_key": key, "url": url}},
    )
    assert created.status == 201, created
    channel_id = created.json["id"]

    def masked(answer: dict[str, Any]) -> None:
        assert answer["config"] == {"routing_key": MASK, "url": url, "severity": "critical"}, answer

    masked(created.json)
    masked((await api.get(f"/api/v1/channels/{channel_id}")).json)
    masked(next(c for c in (await api.get("/api/v1/channels")).json["items"] if c["id"] == channel_id))
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    assert key not in stored

    # A test: an info alert, resolved at once; nothing stays open.
    assert (await api.post(f"/api/v1/channels/{channel_id}/test")).status == 202
    trigger, resolve = await fake_channels.pagerduty.wait_messages(2, destination=key, timeout=20)
    assert (trigger.json["event_action"], resolve.json["event_action"]) == ("trigger", "resolve")
    assert trigger.json["payload"]["severity"] == "info"
    assert "On call" in trigger.json["payload"]["summary"]
    assert not fake_channels.pagerduty.open_alerts

    monitor = await watched_monitor(api, db, target.url("/"), [channel_id])
    monitor_id = monitor["id"]
    # PagerDuty fails the trigger's first attempt (500): retried, one alert all the same.
    fake_channels.pagerduty.fail(500, times=1, destination=key)
    target.set(500)
    await fake_channels.pagerduty.wait_messages(3, destination=key, timeout=30)
    (open_alert,) = fake_channels.pagerduty.open_alerts
    incident_id = await db.fetchval("SELECT id FROM incidents WHERE monitor_id = $1", monitor_id)
    assert open_alert.dedup_key == f"monitor-{monitor_id}-incident-{incident_id}"
    assert open_alert.routing_key == key and open_alert.summary == "shop is DOWN: unexpected status 500"
    target.set(200)
    await fake_channels.pagerduty.wait_messages(4, destination=key, timeout=30)
    # The test, the outage and the recovery: recorded just after PagerDuty answered.
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    _, _, down, up = fake_channels.pagerduty.messages_to(key)
    assert down.json["event_action"] == "trigger" and up.json["event_action"] == "resolve"
    assert down.json["dedup_key"] == up.json["dedup_key"] == open_alert.dedup_key
    payload = down.json["payload"]
    assert payload["severity"] == "critical" and payload["source"] == "127.0.0.1"
    assert payload["custom_details"]["status_code"] == 500
    alert = fake_channels.pagerduty.alert(open_alert.dedup_key, key)
    assert alert is not None and alert.status == "resolved" and not fake_channels.pagerduty.open_alerts
    assert [r.status for r in fake_channels.pagerduty.requests if r.scripted] == [500]
    assert not fake_channels.pagerduty.limited and fake_channels.pagerduty.statuses()[202] == 4, (
        fake_channels.pagerduty.describe()
    )
    assert all(key not in p.log_text() for p in procs.processes)
    assert not procs.tracebacks()
