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

from monitor.channels.base import (
    Bucket,
    ChannelKind,
    Reply,
    SendContext,
    classify,
    secret_url,
    without_url,
)
from monitor.channels.notice import Notice, notice, summarize, tally
from monitor.channels.text import (
    clip,
    escaper,
    format_duration,
    lead,
    link_target,
    plain,
    when,
    write,
)
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


_escape = escaper(_ESCAPES)


def escape(text: str, limit: int | None = None) -> str:
    """``text`` for Slack's text fields: ``&``, ``<`` and ``>`` as entities (the only ones
    Slack reads), at most ``limit`` characters once escaped, cut before an entity, never
    inside one."""
    return _escape(text, limit)


def link(url: str, label: str) -> str:
    """``label`` (escaped already) linking to ``url`` when it is a usable http(s) URL; else the
    label alone. Inside ``<url|label>`` a ``|`` or ``>`` of the URL would end it early: they
    are percent-encoded, and ``&`` escaped as everywhere."""
    target = (link_target(url) or "").replace("&", "&amp;")
    return f"<{target}|{label}>" if target and len(target) <= MAX_LINK else label


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def _section(text: str | None, fields: list[str] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section"}
    if text:
        block["text"] = {"type": "mrkdwn", "text": text}
    if fields:
        block["fields"] = [{"type": "mrkdwn", "text": f} for f in fields]
    return block


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _headline(said: Notice) -> str:
    """The header of one event's message, cut to fit Slack's 150 (its name first)."""
    icon = f"{said.icon} "
    return icon + write(said.title, escape, limit=MAX_HEADER - len(icon))


def _bold(name: str) -> str:
    return f"*{name}*" if name else ""


def _details(said: Notice) -> tuple[str, list[str]]:
    """A notice's link and sentences as a section's text, its labelled lines as the section's
    fields (with a "Since" of their own where a line says since when)."""
    text = [link(said.url, escape(said.url, 500))] if said.url else []
    room = MAX_SECTION - sum(len(t) + 1 for t in text)
    fields: list[str] = []
    for line in said.lines:
        if line.label is None:
            if room > 20:
                text.append(write(line.text, escape, limit=min(1000, room - 1), strong=_bold))
                room -= len(text[-1]) + 1
            continue
        label = f"*{escape(line.label)}*\n"
        fields.append(label + write(line.text, escape, limit=min(1000, MAX_FIELD - len(label))))
        if line.since is not None:
            fields.append(f"*Since*\n{when(line.since)}")
    return "\n".join(text), fields[:10]  # Slack takes 10 fields a section


def render(event: Event) -> dict[str, Any]:
    """The message for one event: a header, its details, and the fallback text."""
    said = notice(event)
    text, fields = _details(said)
    blocks = [_header(_headline(said))]
    if text or fields:
        blocks.append(_section(text, fields))
    if event.about_monitor:
        incident = f" · incident #{event.incident_id}" if said.incident and event.incident_id else ""
        blocks.append(_context(f"Monitor #{event.monitor_id}{incident}"))
    fallback = f"{said.icon} " + write(said.gist, escape, limit=MAX_FALLBACK - len(said.icon) - 1)
    return {"text": fallback, "blocks": blocks}


def line(event: Event) -> str:
    """One event as one section of a combined message."""
    said = notice(event)

    def title(name: str) -> str:
        return f"*{link(said.url, name)}*" if said.url else _bold(name)

    return f"{said.icon} " + write(said.brief, escape, limit=MAX_SECTION - 10, strong=title)


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
    said = [notice(e) for e in batch]
    head = f"⚠️ {len(batch)} alerts: {tally([n.level for n in said], tests_as_up=True)}"
    who = ", ".join(clip(e.monitor_name or plain(n.title), 60) for e, n in zip(batch, said, strict=True))
    names = escape(who, MAX_FALLBACK - len(head) - 2)
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
        state = seen.state(escape=lambda words: escape(words, 60))
        lines.append(f"*{escape(seen.name, 150)}*: {seen.counts()}; {state}")
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
    targets=("url",),
)
