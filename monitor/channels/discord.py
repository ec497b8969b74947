"""Discord: embeds posted to a channel webhook.

A channel is one webhook URL (``https://discord.com/api/webhooks/{id}/{token}``), itself the
credential: sealed at rest, masked by the API, never logged; and optionally the name the
messages show (``username``). An alert is one embed (its colour by the event's level: red for
down, green for up, yellow for a warning, blue for a notice; the title linking to the
monitor); alerts waiting for the same webhook at once go as several embeds of
one message (at most 10, 6,000 characters in all). ``allowed_mentions`` is empty and every
user-supplied string has its Markdown escaped, so a monitor named ``@everyone`` or
``[click](https://evil)`` pings nobody and links nowhere.

Answers: 2xx sent (``?wait=true``: Discord confirms the message was saved; without it a
message that is not saved returns no error); 429 waits for the body's ``retry_after`` (seconds)
or ``Retry-After``; 404 ``{"code": 10015}`` (Unknown Webhook), 401 (Invalid Webhook Token),
400 (a payload refused) and 403 are permanent; 5xx is retried. A success with
``X-RateLimit-Remaining: 0`` holds the webhook for every alerter for its
``X-RateLimit-Reset-After``, so the next message does not earn a 429.

Limits: Discord's webhook bucket, 5 requests per 2 s per webhook (its rate-limit headers;
stated by Discord in discord-api-docs#367), kept as 5 per 2.1 s for network jitter; and 30
per minute, the channel's own limit on webhook messages (same source), as 30 per 61 s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from yarl import URL

from monitor.channels.base import (
    Bucket,
    ChannelKind,
    DeliveryError,
    Reply,
    SendContext,
    classify,
    retry_after,
    secret_url,
    without_url,
)
from monitor.channels.notice import Level, Line, Notice, notice, summarize, tally
from monitor.channels.text import format_duration, link_target, stale_count, when, write
from monitor.events import Event

MAX_EMBEDS = 10
MAX_TOTAL = 6000  # all embeds of a message together
MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_FIELD_VALUE = 1024
MAX_URL = 2048
RED = 0xED4245
GREEN = 0x57F287
YELLOW = 0xFEE75C
BLUE = 0x3498DB
BLURPLE = 0x5865F2
GREY = 0x95A5A6
COLOURS: dict[Level, int] = {"down": RED, "up": GREEN, "warn": YELLOW, "info": BLUE, "test": BLURPLE}
MAX_LINE = 1500  # one line of a description
WEBHOOK_COUNT, WEBHOOK_WINDOW = 5, 2.1  # Discord: 5 per 2 s per webhook
CHANNEL_COUNT, CHANNEL_WINDOW = 30, 61.0  # Discord: 30 webhook messages a minute per channel
MAX_HOLD = 60.0  # the longest X-RateLimit-Reset-After taken from an accepted message's answer

# Markdown Discord reads in embeds' text: a backslash makes each of these plain. Titles are
# one line, without links, mentions, headings or lists: only the inline styles matter there.
_MARKDOWN = frozenset("\\*_~`|<>[]()#-")
_TITLE_MARKDOWN = frozenset("\\*_~`|")


class DiscordSettings(BaseModel):
    """A Discord channel webhook (Server Settings → Integrations → Webhooks)."""

    model_config = ConfigDict(extra="forbid")
    url: SecretStr = Field(
        description="The webhook URL, e.g. https://discord.com/api/webhooks/<id>/<token>; "
        "it is the credential, stored encrypted and shown masked"
    )
    username: str | None = Field(
        None,
        min_length=1,
        max_length=80,
        description="The name the messages show instead of the webhook's own",
    )

    @field_validator("url", mode="before")
    @classmethod
    def _url(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return secret_url(value) if isinstance(value, str) else value

    @field_validator("username")
    @classmethod
    def _username(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not 1 <= len(value) <= 80:
            raise ValueError("must be 1 to 80 characters")
        lowered = value.lower()
        if "discord" in lowered or "clyde" in lowered:
            raise ValueError('Discord refuses webhook names containing "discord" or "clyde"')
        return value


# -- rendering -----------------------------------------------------------------------------


def escape(text: str, limit: int | None = None, *, special: frozenset[str] = _MARKDOWN) -> str:
    """``text`` with Discord's Markdown made plain (each ``special`` character after a
    backslash), at most ``limit`` characters once escaped, never cut between a backslash and
    its character."""
    out: list[str] = []
    size = 0
    escaped_size = sum(2 if c in special else 1 for c in text)
    budget = None if limit is None or escaped_size <= limit else limit - 1
    for c in text:
        piece = "\\" + c if c in special else c
        if budget is not None and size + len(piece) > budget:
            return "".join(out) + "…"
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _title(text: str, limit: int | None = None) -> str:
    """``text`` for a title: one line, its inline styles made plain."""
    return escape(re.sub(r"\s+", " ", text), limit, special=_TITLE_MARKDOWN)


def _timestamp(value: str | None) -> str:
    """Discord's own time markup (each reader sees their time zone), and how long ago."""
    if not value:
        return "?"
    try:
        seconds = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return when(value)
    return f"<t:{seconds}:f> (<t:{seconds}:R>)"


def _footer(event: Event, said: Notice) -> dict[str, str] | None:
    if not event.about_monitor:
        return None
    incident = f" · incident #{event.incident_id}" if said.incident and event.incident_id else ""
    return {"text": f"Monitor #{event.monitor_id}{incident}"}


def _bold(name: str) -> str:
    return f"**{name}**" if name else ""


def _around(line: Line) -> tuple[str, str]:
    """What a line's label puts before and after its text: "**Cause:** x", "Outage lasted **5m**"."""
    if line.label is None:
        return "", ""
    if line.prose:
        return f"{escape(line.label)} **", "**"
    return f"**{escape(line.label)}:** ", ""


def _field(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "inline": True}


def embed(event: Event) -> dict[str, Any]:
    """One event as one embed: its lines in the description ("**Cause:** ...", "Outage lasted
    **5m**", sentences), times as inline fields."""
    said = notice(event)
    icon = f"{said.icon} "
    out: dict[str, Any] = {
        "title": icon + write(said.title, _title, limit=MAX_TITLE - len(icon)),
        "color": COLOURS[said.level],
    }
    description: list[str] = []
    room = MAX_DESCRIPTION
    fields: list[dict[str, Any]] = []
    for line in said.lines:
        if line.label is not None and line.time_only:
            fields.append(_field(line.label, write(line.text, escape, stamp=_timestamp)))
        else:
            head, tail = _around(line)
            size = min(MAX_LINE, room - len(head) - len(tail) - 1)
            if size > 20:
                text = write(line.text, escape, limit=size, strong=_bold, stamp=_timestamp)
                description.append(f"{head}{text}{tail}")
                room -= len(description[-1]) + 1
        if line.since is not None:
            fields.append(_field("Since", _timestamp(line.since)))
    if description:
        out["description"] = "\n".join(description)
    if fields:
        out["fields"] = fields
    url = link_target(said.url, MAX_URL) if said.url else None
    if url is not None:
        out["url"] = url
    footer = _footer(event, said)
    if footer is not None:
        out["footer"] = footer
    if said.level != "test":
        out["timestamp"] = event.at
    return out


def embed_size(item: Mapping[str, Any]) -> int:
    """The characters Discord counts towards a message's 6,000: title, description, field
    names and values, footer text, author name."""
    size = len(item.get("title") or "") + len(item.get("description") or "")
    for field in item.get("fields") or []:
        size += len(field.get("name") or "") + len(field.get("value") or "")
    size += len((item.get("footer") or {}).get("text") or "")
    size += len((item.get("author") or {}).get("name") or "")
    return size


def _message(embeds: list[dict[str, Any]], content: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"embeds": embeds, "allowed_mentions": {"parse": []}}
    if content:
        message["content"] = content
    return message


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[dict[str, Any], int]:
    """The message for as many of ``events`` (in order) as one takes, and how many it covers:
    one embed each, up to 10 and 6,000 characters. Alerts older than ``max_age`` at the front,
    however many, are one summary embed: a DOWN from days ago must not page anyone as news."""
    if not events:
        raise ValueError("nothing to compose")
    stale = stale_count(events, max_age, now)
    if stale:
        assert max_age is not None
        return _message([summary(events[:stale], max_age)]), stale
    embeds: list[dict[str, Any]] = []
    size = 0
    for event in events[:MAX_EMBEDS]:
        item = embed(event)
        if embeds and size + embed_size(item) > MAX_TOTAL:
            break
        embeds.append(item)
        size += embed_size(item)
    if len(embeds) == 1:
        return _message(embeds), 1
    counts = tally([notice(e).level for e in events[: len(embeds)]], tests_as_up=True)
    return _message(embeds, f"⚠️ {len(embeds)} alerts: {counts}"), len(embeds)


def summary(events: list[Event], max_age: float) -> dict[str, Any]:
    """Old alerts of one webhook as one embed: per monitor, what happened and how it ended."""
    intro = (
        f"From while alerts could not be sent ({_timestamp(events[0].at)} to "
        f"{_timestamp(events[-1].at)}); per monitor, how it ended:"
    )
    lines = [intro]
    size = len(intro)
    summaries = summarize(events)
    for shown, seen in enumerate(summaries):
        state = seen.state(stamp=_timestamp, escape=lambda words: escape(words, 60))
        text = f"**{escape(seen.name, 150)}**: {seen.counts()}; {state}"
        more = f"… and {len(summaries) - shown} more monitors"
        if size + 1 + len(text) + 1 + len(more) > MAX_DESCRIPTION:
            lines.append(more)
            break
        lines.append(text)
        size += 1 + len(text)
    return {
        "title": f"🕓 {len(events)} alerts older than {format_duration(max_age)}",
        "description": "\n".join(lines),
        "color": GREY,
    }


# -- sending -------------------------------------------------------------------------------


def hold(reply: Reply) -> float | None:
    """After an accepted message: the seconds until the webhook's bucket refills, when this
    message used its last request (``X-RateLimit-Remaining: 0``)."""
    if reply.header("x-ratelimit-remaining") != "0":
        return None
    try:
        seconds = float(reply.header("x-ratelimit-reset-after") or "")
    except ValueError:
        return None
    # A bucket refills within seconds; a larger value is not Discord's, and must not silence
    # the webhook for long.
    return min(seconds, MAX_HOLD) if seconds > 0 else None


def check(reply: Reply, url: str = "") -> float | None:
    """Discord's answer: sent (and how long to hold the webhook, see :func:`hold`), or a
    :class:`DeliveryError` that says whether retrying can help and how long to wait."""
    if 200 <= reply.status < 300:
        return hold(reply)
    data = reply.json()
    data = data if isinstance(data, dict) else {}
    message = without_url(str(data.get("message") or ""), url)[:100]
    if reply.status == 429:
        wait: float | None = None
        if isinstance(data.get("retry_after"), int | float) and not isinstance(data["retry_after"], bool):
            wait = max(0.0, float(data["retry_after"]))
        wait = wait or retry_after(reply) or 1.0
        scope = " (global)" if data.get("global") else ""
        raise DeliveryError(
            f"discord 429: {message or 'rate limited'}{scope}",
            permanent=False,
            retry_after=wait,
            throttled=True,
        )
    detail = f"{message} (code {data.get('code')})" if message else without_url(reply.text(300), url)[:100]
    classify("discord", reply, detail=detail)
    return None


def _webhook(url: str) -> str:
    # wait=true: Discord answers once the message is saved (and with an error if it was not).
    return str(URL(url, encoded=True).update_query(wait="true"))


async def send(ctx: SendContext, channel: Mapping[str, Any], payload: Any) -> float | None:
    message = dict(payload)
    if channel.get("username"):
        message["username"] = str(channel["username"])
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    url = str(channel["url"])
    reply = await ctx.web.post("discord", _webhook(url), body, {"Content-Type": "application/json"})
    return check(reply, url)


def limits(destination: str) -> list[Bucket]:
    return [
        Bucket(destination, WEBHOOK_COUNT, WEBHOOK_WINDOW),
        Bucket(f"{destination}:minute", CHANNEL_COUNT, CHANNEL_WINDOW),
    ]


KIND = ChannelKind(
    name="discord",
    title="Discord",
    config=DiscordSettings,
    compose=compose,
    send=send,
    limits=limits,
    secrets=frozenset({"url"}),
    targets=("url",),
)
