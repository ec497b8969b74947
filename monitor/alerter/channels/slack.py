"""Slack: Block Kit messages to an incoming webhook.

A channel is one incoming webhook URL (``https://hooks.slack.com/services/T…/B…/…``), which
is itself the credential: sealed at rest, masked by the API, never logged. Any http(s) URL is
taken, not only hooks.slack.com, since Slack-compatible services (Mattermost, Rocket.Chat)
accept the same payload on their own incoming webhooks.

A message is Block Kit (a header, a section with the monitor's link, cause and times) with a
``text`` fallback, which notifications and screen readers show. Alerts waiting for the same
webhook at once go as one message, one section each. Every user-supplied string is escaped
the way Slack asks (``&``, ``<``, ``>``), so a monitor named ``<!channel>`` mentions nobody
and cannot forge a link.

Answers (Slack's incoming webhook errors): 200 ``ok``; 400 ``invalid_payload``, ``no_text``,
``invalid_blocks``..., 403 ``invalid_token``/``action_prohibited``, 404 ``no_service``/
``channel_not_found``, 410 ``channel_is_archived`` do not heal by retrying; 429 waits for its
``Retry-After``; 5xx is retried. Limit: one message a second per webhook ("short bursts are
tolerated"), kept as one per 1.05 s per destination for all alerters together.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from monitor.alerter.channels.base import (
    ChannelKind,
    Reply,
    SendContext,
    classify,
    secret_url,
    without_url,
)
from monitor.alerter.channels.text import (
    clip,
    describe_cause,
    format_duration,
    lead,
    link_target,
    summarize,
    when,
)
from monitor.alerter.pacing import Bucket
from monitor.events import Event

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_FIELD = 2000
MAX_HEADER = 150
# Slack cuts a message's text at 40,000 characters; a notification shows far less anyway.
MAX_FALLBACK = 3000
# A combined message: a header, one section per alert, a context line.
MAX_COMBINED = MAX_BLOCKS - 2
# A link longer than this is shown as text: cut, it would point somewhere else.
MAX_LINK = 1200
PER_WEBHOOK_INTERVAL = 1.05  # Slack: 1 a second per webhook; a little over for jitter

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


class SlackSettings(BaseModel):
    """A Slack incoming webhook (or a Slack-compatible one: Mattermost, Rocket.Chat)."""

    model_config = ConfigDict(extra="forbid")
    url: SecretStr = Field(
        description="The incoming webhook URL, e.g. https://hooks.slack.com/services/T…/B…/…; "
        "it is the credential, stored encrypted and shown masked"
    )

    @field_validator("url", mode="before")
    @classmethod
    def _url(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return secret_url(value) if isinstance(value, str) else value


# -- rendering -----------------------------------------------------------------------------


def escape(text: str, limit: int | None = None) -> str:
    """``text`` for Slack's text fields: ``&``, ``<`` and ``>`` as entities (the only ones
    Slack reads), at most ``limit`` characters once escaped, cut before an entity, never
    inside one."""
    escaped = "".join(_ESCAPES.get(c, c) for c in text)
    if limit is None or len(escaped) <= limit:
        return escaped
    out: list[str] = []
    size = 0
    for c in text:
        piece = _ESCAPES.get(c, c)
        if size + len(piece) > limit - 1:
            break
        out.append(piece)
        size += len(piece)
    return "".join(out) + "…"


def link(url: str, label: str) -> str:
    """``label`` (escaped already) linking to ``url`` when it is a usable http(s) URL; else the
    label alone. Inside ``<url|label>`` a ``|`` or ``>`` of the URL would end it early: they
    are percent-encoded, and ``&`` escaped as everywhere."""
    target = (link_target(url) or "").replace("&", "&amp;")
    return f"<{target}|{label}>" if target and len(target) <= MAX_LINK else label


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def _section(text: str, fields: list[str] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    if fields:
        block["fields"] = [{"type": "mrkdwn", "text": f} for f in fields]
    return block


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _headline(event: Event) -> str:
    """The header of one event's message, its name cut to fit Slack's 150."""
    if event.kind == "test":
        return "✅ Test message from monitor"
    suffix = " is DOWN" if event.kind == "down" else " is UP again"
    icon = "🔴 " if event.kind == "down" else "🟢 "
    return icon + escape(event.monitor_name, MAX_HEADER - len(icon) - len(suffix)) + suffix


def render(event: Event) -> dict[str, Any]:
    """The message for one event: a header, its details, and the fallback text."""
    name = escape(event.monitor_name, 200)
    if event.kind == "test":
        return {
            "text": f"✅ Test message from monitor: channel {name} works",
            "blocks": [_header(_headline(event)), _section(f"Channel *{name}* works.")],
        }
    shown = link(event.monitor_url, escape(event.monitor_url, 500))
    if event.kind == "down":
        cause = escape(describe_cause(event.cause), 1000)
        fields = [f"*Cause*\n{cause}", f"*Since*\n{when(event.started_at)}"]
        text = f"🔴 {name} is DOWN: {cause}"
    else:
        lasted = format_duration(event.duration_seconds or 0)
        fields = [f"*Outage lasted*\n{lasted}", f"*Since*\n{when(event.started_at)}"]
        text = f"🟢 {name} is UP again after {lasted}"
    blocks = [_header(_headline(event)), _section(shown, fields)]
    if event.monitor_id is not None:
        blocks.append(_context(f"Monitor #{event.monitor_id} · incident #{event.incident_id}"))
    return {"text": clip(text, MAX_FALLBACK), "blocks": blocks}


def line(event: Event) -> str:
    """One event as one section of a combined message."""
    name = escape(event.monitor_name, 150)
    if event.kind == "test":
        return f"✅ test message: channel *{name}* works"
    title = f"*{link(event.monitor_url, name)}*"
    if event.kind == "down":
        cause = escape(describe_cause(event.cause), 500)
        return f"🔴 {title} DOWN: {cause}, since {when(event.started_at)}"
    return f"🟢 {title} UP after {format_duration(event.duration_seconds or 0)}"


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[dict[str, Any], int]:
    """The message for as many of ``events`` (in order) as one takes, and how many it covers.

    One event: its own message. Several waiting at once (a network outage): one message with a
    section each, up to :data:`MAX_COMBINED`. Alerts older than ``max_age`` at the front, however
    many, are one summary: a DOWN from days ago must not page anyone as if it were news.
    """
    first = lead(events, max_age, now, summary, render)
    if first is not None:
        return first
    batch = events[:MAX_COMBINED]
    down = sum(1 for e in batch if e.kind == "down")
    head = f"⚠️ {len(batch)} alerts: {down} down, {len(batch) - down} up"
    names = escape(", ".join(clip(e.monitor_name, 60) for e in batch), MAX_FALLBACK - len(head) - 2)
    return {
        "text": f"{head}: {names}",
        "blocks": [_header(head), *(_section(line(e)) for e in batch)],
    }, len(batch)


def summary(events: list[Event], max_age: float) -> dict[str, Any]:
    """Old alerts of one webhook as one message: per monitor, what happened and how it ended."""
    head = f"🕓 {len(events)} alerts older than {format_duration(max_age)}"
    intro = (
        f"From while alerts could not be sent ({when(events[0].at)} to {when(events[-1].at)}); "
        "per monitor, how it ended:"
    )
    lines = []
    for seen in summarize(events):
        state = seen.state(escape=lambda kind: escape(kind, 20))
        lines.append(f"*{escape(seen.name, 150)}*: {seen.downs} down, {seen.ups} up; {state}")
    sections: list[str] = []
    shown = 0
    for text in lines:
        if sections and len(sections[-1]) + 1 + len(text) <= MAX_SECTION:
            sections[-1] += "\n" + text
        elif len(sections) < MAX_BLOCKS - 3:
            sections.append(text)
        else:
            break
        shown += 1
    blocks = [_header(head), _section(intro), *(_section(s) for s in sections)]
    if shown < len(lines):
        blocks.append(_context(f"… and {len(lines) - shown} more monitors"))
    return {"text": f"{head}: {len(lines)} monitors", "blocks": blocks}


# -- sending -------------------------------------------------------------------------------


def check(reply: Reply, url: str = "") -> None:
    """Slack's answer: 2xx sent (``ok``; a Slack-compatible service may say something else);
    429 waits; 5xx retried; any other 4xx is permanent (a revoked or deleted webhook, an
    archived channel, a payload Slack refuses). Raises :class:`DeliveryError` unless sent."""
    classify("slack", reply, detail=without_url(reply.text(300), url)[:100])


async def send(ctx: SendContext, channel: Mapping[str, Any], payload: Any) -> None:
    url = str(channel["url"])
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    reply = await ctx.web.post("slack", url, body, {"Content-Type": "application/json; charset=utf-8"})
    check(reply, url)


def limits(destination: str) -> list[Bucket]:
    return [Bucket(destination, 1, PER_WEBHOOK_INTERVAL)]


KIND = ChannelKind(
    name="slack",
    title="Slack",
    config=SlackSettings,
    compose=compose,
    send=send,
    limits=limits,
    secrets=frozenset({"url"}),
)
