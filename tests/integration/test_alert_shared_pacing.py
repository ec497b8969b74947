"""Two alerters and one busy Slack webhook: the shared pacer holds Slack's limit for both
together, so the fake Slack never answers 429, and every alert arrives exactly once.

40 monitors go down at once; their events reach the stream one by one, so each alerter reads
about half of them and both keep a queue for the same webhook. Each message combines what its
alerter has waiting, so alerts are counted inside the messages (Block Kit: the header of a
single alert, or one section per alert of a combined one).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from itertools import pairwise
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from support import ChannelRequest, FakeChannels, ProcessFactory, wait_for
from support.alerts import alert_state, make_event, publish_events
from support.procs import TEST_SECRET_KEY

from monitor.secrets import SecretBox

MONITORS = 40
HEADER = re.compile(r"^(?:🔴|🟢) (?P<name>.+) is (?P<kind>DOWN|UP)\b")
SECTION = re.compile(r"^(?:🔴|🟢) \*<[^|>]*\|(?P<name>[^>]+)>\* (?P<kind>DOWN|UP)\b")


def alerts_in(message: ChannelRequest) -> list[tuple[str, str]]:
    """(monitor name, "DOWN" | "UP") of every alert of a Slack message, in order."""
    blocks: list[dict[str, Any]] = message.json["blocks"]
    header = blocks[0]["text"]["text"]
    single = HEADER.match(header)
    if single:
        return [(single["name"], single["kind"])]
    found = []
    for block in blocks[1:]:
        match = SECTION.match(block["text"]["text"])
        assert match, block
        found.append((match["name"], match["kind"]))
    assert header.startswith(f"⚠️ {len(found)} alerts:"), header
    return found


async def test_two_alerters_share_one_busy_webhooks_limit(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    procs: ProcessFactory,
    fake_channels: FakeChannels,
) -> None:
    url = fake_channels.slack.url_for("busy")
    sealed = SecretBox.from_setting(TEST_SECRET_KEY).seal(url)
    channel = {"id": 1, "kind": "slack", "name": "Busy", "url": sealed}
    events = []
    for n in range(MONITORS):
        event = make_event(n + 1, f"busy-{n:02d}", 0, "down")
        event["channels"] = [channel]
        events.append(event)

    alerters = [await procs.start("alerter"), await procs.start("alerter")]
    # One at a time: each alerter, blocked reading the stream, takes its turn.
    for event in events:
        await publish_events(redis_client, [event])
        await asyncio.sleep(0.15)

    async def settled() -> bool:
        return (await alert_state(db, redis_client)).settled(sent=MONITORS)

    await wait_for(settled, timeout=60, message=fake_channels.slack.describe)
    messages = fake_channels.slack.messages_to("busy")

    # Every alert once: none lost, none doubled.
    delivered = Counter(alert for message in messages for alert in alerts_in(message))
    assert delivered == Counter((f"busy-{n:02d}", "DOWN") for n in range(MONITORS)), (
        fake_channels.slack.describe()
    )
    # Slack's limit held by both together: never refused, about a second between messages.
    assert fake_channels.slack.statuses() == Counter({200: len(messages)}), fake_channels.slack.describe()
    assert not fake_channels.slack.limited
    # The pace is in the slots the alerters reserve a second apart; a send held up by a loaded
    # machine shortens the gap after it, but not the pace of the whole run, and never makes
    # two sends at once (unshared, two alerters would send about twice a second).
    times = [m.received_at for m in messages]
    gaps = [later - earlier for earlier, later in pairwise(times)]
    assert len(messages) >= 3 and min(gaps) >= 0.5, gaps
    assert (times[-1] - times[0]) / len(gaps) >= 0.9, gaps
    # And both alerters did send to it: the limit was shared, not kept by one alerter alone.
    senders = [
        {line["event_id"] for line in proc.events("alert.sent", channel="slack:1")} for proc in alerters
    ]
    assert all(senders) and not senders[0] & senders[1], senders
    assert sum(len(s) for s in senders) == MONITORS
    assert not any(proc.events("alert.throttled") for proc in alerters)
    assert not procs.tracebacks()
