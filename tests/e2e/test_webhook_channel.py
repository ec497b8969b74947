"""Webhook channel through the real processes, to a receiver that verifies Standard Webhooks
signatures: a channel made by the API (its secret generated and shown once, masked after), a
test message, then an outage and its recovery, each delivered once, in order, signed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ChannelRequest, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e

HEADER_VALUE = "Bearer receiver-token-8c1f"


def masked(answer: dict[str, Any]) -> None:
    assert answer["config"]["url"] == MASK and answer["config"]["secret"] == MASK, answer
    assert answer["config"]["headers"] == MASK, answer


async def test_webhook_outage_and_recovery_arrive_signed_once_each_in_order(
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
    hooks = fake_channels.webhooks
    url = hooks.url_for("ops")

    created = await api.post(
        "/api/v1/channels",
        json={
            "kind": "webhook",
            "name": "Ops <hooks>",
            "config": {"url": url, "headers": {"Authorization": HEADER_VALUE}},
        },
    )
    assert created.status == 201, created
    channel_id, secret = created.json["id"], created.json["config"]["secret"]
    # Generated and shown once, in the answer that made it; the URL and headers are masked.
    assert secret.startswith("whsec_") and created.json["config"]["url"] == MASK, created
    hooks.url_for("ops", secret=secret)  # the receiver verifies with it from now on
    masked((await api.get(f"/api/v1/channels/{channel_id}")).json)
    listed = (await api.get("/api/v1/channels")).json["items"]
    masked(next(c for c in listed if c["id"] == channel_id))
    # The masks sent back keep the stored URL, secret and headers (the deliveries below show it).
    renamed = await api.patch(
        f"/api/v1/channels/{channel_id}",
        json={"name": "Ops", "config": {"url": MASK, "secret": MASK, "headers": MASK}},
    )
    assert renamed.status == 200, renamed
    masked(renamed.json)
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    for clear in (secret, secret.removeprefix("whsec_"), url, "/hooks/ops", HEADER_VALUE):
        assert clear not in stored

    # The test message, through the real path.
    queued = await api.post(f"/api/v1/channels/{channel_id}/test")
    assert queued.status == 202, queued
    (test,) = await hooks.wait_messages(1, destination="ops", timeout=20)
    assert test.verified and test.json["type"] == "channel.test", hooks.describe()
    assert test.json["channel"] == {"name": "Ops"} and test.json["event_id"] == queued.json["event_id"]

    monitor = await watched_monitor(api, db, target.url("/"), [channel_id])
    # The receiver fails the first attempt: the retry carries the same webhook-id.
    hooks.fail(503, times=1)
    target.set(500)
    await hooks.wait_messages(2, destination="ops", timeout=30)
    target.set(200)
    await hooks.wait_messages(3, destination="ops", timeout=30)
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    test, down, up = hooks.messages_to("ops")
    assert [m.json["type"] for m in (test, down, up)] == ["channel.test", "monitor.down", "monitor.up"]
    assert all(m.verified for m in (test, down, up)) and not hooks.duplicates, hooks.describe()
    for message in (down, up):
        body = message.json
        assert message.headers["webhook-id"] == body["event_id"]
        assert message.headers["Authorization"] == HEADER_VALUE
        assert message.headers["Content-Type"] == "application/json"
        assert message.headers["User-Agent"].startswith("monitor/")
        assert body["version"] == 1
        assert body["monitor"] == {"id": monitor["id"], "name": "shop", "url": target.url("/")}
    assert down.json["incident_id"] == up.json["incident_id"]
    assert down.json["seq"] < up.json["seq"]
    assert down.json["cause"]["status_code"] == 500 and down.json["ended_at"] is None
    assert up.json["ended_at"] is not None and up.json["duration_seconds"] > 0
    failed = [r for r in hooks.requests if r.scripted]
    assert [r.headers["webhook-id"] for r in failed] == [down.headers["webhook-id"]]
    assert _signed_fresh(failed[0]) and _signed_fresh(down)


def _signed_fresh(request: ChannelRequest) -> bool:
    """Each attempt is signed at its own time (a receiver's replay window starts at the send)."""
    return abs(int(request.headers["webhook-timestamp"]) - request.received_at) < 5
