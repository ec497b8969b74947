"""Discord channel through the real processes, to a fake webhook that checks embeds and answers
with Discord's shapes and rate-limit headers: a channel made by the API (its webhook URL masked
in every answer, sealed at rest), a test message, then an outage and its recovery, each once,
in order; and a webhook whose bucket the answers say is used up is left alone until it refills."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from support import ApiClient, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.alerts import watched_monitor

from monitor.secrets import MASK

pytestmark = pytest.mark.e2e


async def test_discord_outage_and_recovery_arrive_once_each_in_order(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    target: TargetServer,
    fake_channels: FakeChannels,
) -> None:
    hooks = fake_channels.discord
    # One request per 4 s window: every answer says the bucket is used up (Remaining: 0) and
    # when it refills, which the alerter must honour on its own; its 5 per 2 s would not.
    hooks.limit, hooks.window = 1, 4.0
    api_proc = await procs.start("api")
    await procs.start("scheduler")
    alerter = await procs.start("alerter")
    api = api_client(api_proc.base_url)
    url = hooks.url_for("ops")
    token = url.rsplit("/", 1)[1]

    created = await api.post(
        "/api/v1/channels",
        json={"kind": "discord", "name": "Ops @everyone", "config": {"url": url, "username": "Uptime"}},
    )
    assert created.status == 201, created
    channel_id = created.json["id"]

    def masked(answer: dict[str, Any]) -> None:
        assert answer["config"] == {"url": MASK, "username": "Uptime"}, answer

    masked(created.json)
    masked((await api.get(f"/api/v1/channels/{channel_id}")).json)
    masked(next(c for c in (await api.get("/api/v1/channels")).json["items"] if c["id"] == channel_id))
    renamed = await api.patch(f"/api/v1/channels/{channel_id}", json={"name": "Ops"})
    assert renamed.status == 200, renamed
    masked(renamed.json)
    stored = await db.fetchval("SELECT config::text FROM channels WHERE id = $1", channel_id)
    assert token not in stored and url not in stored

    queued = await api.post(f"/api/v1/channels/{channel_id}/test")
    assert queued.status == 202, queued
    (test,) = await hooks.wait_messages(1, destination="ops", timeout=20)
    assert test.json["embeds"][0]["title"] == "✅ Test message from monitor", test.json
    assert test.json["username"] == "Uptime" and test.json["allowed_mentions"] == {"parse": []}
    assert test.query == {"wait": "true"} and test.status == 200

    await watched_monitor(api, db, target.url("/"), [channel_id], name="@everyone *shop*")
    target.set(500)
    await hooks.wait_messages(2, destination="ops", timeout=30)
    target.set(200)
    await hooks.wait_messages(3, destination="ops", timeout=30)
    await wait_for(
        lambda: db.fetchval("SELECT count(*) = 3 FROM deliveries WHERE status = 'sent'"), timeout=10
    )

    test, down, up = hooks.messages_to("ops")
    assert [m.json["embeds"][0]["title"] for m in (down, up)] == [
        "🔴 @everyone \\*shop\\* is DOWN",
        "🟢 @everyone \\*shop\\* is UP again",
    ]
    assert [len(m.json["embeds"]) for m in (down, up)] == [1, 1]
    assert down.json["embeds"][0]["color"] == 0xED4245 and up.json["embeds"][0]["color"] == 0x57F287
    assert down.json["embeds"][0]["url"] == target.url("/")
    # Held for each answer's X-RateLimit-Reset-After: never refused, each message a window apart.
    assert not hooks.limited and set(hooks.statuses()) == {200}, hooks.describe()
    for earlier, later in zip([test, down], [down, up], strict=True):
        assert later.received_at - earlier.received_at >= hooks.window - 0.2
    assert alerter.events("alert.destination_hold"), alerter.tail()
    assert all(token not in p.log_text() for p in procs.processes)
    assert not procs.tracebacks()
