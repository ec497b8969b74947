"""Slack channel through the real processes, to a fake incoming webhook that checks Block Kit
and answers as Slack does: a channel made by the API (its webhook URL masked in every answer,
sealed at rest), a test message, then an outage and its recovery, each once, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ChannelRequest, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e


def header(message: ChannelRequest) -> str:
    blocks = message.json["blocks"]
    assert blocks[0]["type"] == "header", message.json
    return str(blocks[0]["text"]["text"])


async def test_slack_outage_and_recovery_arrive_once_each_in_order(
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
    url = fake_channels.slack.url_for("ops")
    token = url.rsplit("/", 1)[1]

    refused = await api.post(
        "/api/v1/channels", json={"kind": "slack", "name": "x", "config": {"url": "ftp://h/" + token}}
    )
    assert refused.status == 422 and token not in refused.text, refused
    created = await api.post(
        "/api/v1/channels", json={"kind": "slack", "name": "Ops <team> & co", "config": {"url": url}}
    )
    assert created.status == 201, created
    channel_id = created.json["id"]

    def masked(answer: dict[str, Any]) -> None:
        assert answer["config"] == {"url": MASK}, answer

    masked(created.json)
    masked((await api.get(f"/api/v1/channels/{channel_id}")).json)
    masked(next(c for c in (await api.get("/api/v1/channels")).json["items"] if c["id"] == channel_id))
    renamed = await api.patch(
        f"/api/v1/channels/{channel_id}", json={"name": "Ops <team>", "config": {"url": MASK}}
    )
    assert renamed.status == 200, renamed
    masked(renamed.json)
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    assert token not in stored and url not in stored

    # The test message, through the real path (outbox, relay, stream, alerter).
    queued = await api.post(f"/api/v1/channels/{channel_id}/test")
    assert queued.status == 202, queued
    (test,) = await fake_channels.slack.wait_messages(1, destination="ops", timeout=20)
    assert header(test) == "✅ Test message from monitor"
    assert "Channel *Ops &lt;team&gt;* works." in str(test.json["blocks"]), test.json

    await watched_monitor(api, db, target.url("/"), [channel_id], name="shop & <co>")
    # Slack fails the first attempt of the outage: it is retried, not lost or doubled.
    fake_channels.slack.fail(500, times=1, destination="ops")
    target.set(500)
    await fake_channels.slack.wait_messages(2, destination="ops", timeout=30)
    target.set(200)
    await fake_channels.slack.wait_messages(3, destination="ops", timeout=30)
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    test, down, up = fake_channels.slack.messages_to("ops")
    assert [header(m) for m in (down, up)] == [
        "🔴 shop &amp; &lt;co&gt; is DOWN",
        "🟢 shop &amp; &lt;co&gt; is UP again",
    ]
    assert down.json["text"].startswith("🔴 shop &amp; &lt;co&gt; is DOWN: ")
    link = down.json["blocks"][1]["text"]["text"]
    assert link.startswith(f"<{target.url('/')}|"), link
    assert [r.status for r in fake_channels.slack.requests if r.scripted] == [500]
    assert not fake_channels.slack.limited and fake_channels.slack.statuses()[200] == 3, (
        fake_channels.slack.describe()
    )
    # No process logged the webhook's token.
    assert all(token not in p.log_text() for p in procs.processes)
    assert not procs.tracebacks()
