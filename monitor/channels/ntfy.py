"""ntfy: push notifications to a topic (https://ntfy.sh or a self-hosted server).

A channel is a topic URL (``https://ntfy.sh/mytopic``) and, for a protected topic, an access
token. On a public server the topic name is the only thing between a stranger and your
phone, so the URL is a secret here: sealed at rest, masked in answers, never logged.

Messages are published as JSON (``POST`` to the server's root with ``topic``, ``message``,
``title``, ``priority``, ``tags``, ``click``) rather than as a body with ``Title``/``Priority``
headers: the title holds a monitor's name, any Unicode, which JSON carries as it is while a
header would need RFC 2047 encoding, and nothing a user typed ends up in a header. Plain
text (no ``markdown``), so a name cannot format or link anything. Several alerts waiting at
once become one message, one line each, kept under ntfy's 4096-byte message limit (beyond
it ntfy turns the message into an attached file).

Priority by the event's level (:func:`priority`): ``priority_down`` (default 5, "urgent": a
long vibration burst and a pop-over on Android) for a DOWN or its reminder, a message with
one, and a test message (so a test shows how an outage arrives); one below it, but never below
``priority_up``, for a warning (degraded, flapping, the checker cut off); ``priority_up``
(default 3, "default") for recoveries, notices (maintenance) and summaries.

Limits: ntfy.sh limits each visitor (client address) to a burst of 60 requests, then one per
5 s (``visitor-request-limit-burst``/``-replenish``; a self-hosted server's defaults are the
same), and answers 429 ``{"code": 42901}`` without ``Retry-After``. Per channel we keep at
most ``WINDOW_MAX`` (60) in any ``WINDOW`` (300 s), which never exceeds that bucket, and at
most one message a second so that a burst is spread out (and combines more per message).
The daily message quota of ntfy.sh's free tier (42908) is waited out, not retried.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, field_validator

from monitor import __version__
from monitor.channels.base import (
    Bucket,
    ChannelKind,
    DeliveryError,
    Reply,
    SendContext,
    classify,
    retry_after,
    without_url,
)
from monitor.channels.notice import Level, Notice, most_urgent, notice, summarize, tally
from monitor.channels.text import clip, format_duration, lead, plain, when
from monitor.events import Event
from monitor.net.policy import InvalidTarget, parse_target_url

MAX_MESSAGE_BYTES = 4096  # ntfy's message-size-limit; a longer message becomes an attachment
MAX_TITLE = 250
MAX_URL_LENGTH = 2048
WINDOW_MAX = 60  # ntfy's visitor burst...
WINDOW = 300.0  # ...over 60 replenishments of 5 s: at most ntfy's own bucket allows
PER_SECOND_KEY = "second"
TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")  # ntfy's topic rule
TOKEN = re.compile(r"^[\x21-\x7e]{1,256}$")
PRIORITIES = {"min": 1, "low": 2, "default": 3, "high": 4, "urgent": 5, "max": 5}
USER_AGENT = f"monitor/{__version__} (ntfy)"
# Tags (emoji on the notification) by level, and the kinds that have their own.
TAGS = {
    "down": "rotating_light",
    "up": "white_check_mark",
    "warn": "warning",
    "info": "information_source",
    "test": "bell",
    "summary": "hourglass",
}
KIND_TAGS = {
    "maintenance_start": "wrench",
    "maintenance_end": "wrench",
    "remind": "repeat",
    "acknowledged": "eyes",
}
MAX_LINE = 600  # one alert of a combined message, without its URL
# How long to hold a topic after a 429, by ntfy's error code, when no Retry-After says.
THROTTLE_WAIT = {42901: 5.0, 42905: 600.0, 42908: 600.0}
DEFAULT_THROTTLE_WAIT = 60.0


def _priority(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be 1 to 5 or a priority name, not true or false")
    if isinstance(value, str) and value.strip().lower() in PRIORITIES:
        return PRIORITIES[value.strip().lower()]
    return value


Priority = Annotated[
    int,
    Field(ge=1, le=5, description="1 (min) to 5 (urgent), or min, low, default, high, urgent"),
    BeforeValidator(_priority),
]


def split_topic_url(url: str) -> tuple[str, str]:
    """``https://ntfy.example/sub/alerts`` -> (``https://ntfy.example/sub/``, ``alerts``): where
    JSON is published, and the topic."""
    base, _, topic = url.rpartition("/")
    return base + "/", topic


class NtfySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        description="the topic's URL, e.g. https://ntfy.sh/mytopic; read back as '********' (on a "
        "public server the topic name is what keeps strangers out)"
    )
    token: SecretStr | None = Field(
        None, description="access token of a protected topic (sent as Authorization: Bearer)"
    )
    priority_down: Priority = 5
    priority_up: Priority = 3

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            parsed = parse_target_url(value)
        except InvalidTarget as exc:
            raise ValueError(str(exc)) from None
        if parsed.raw_query_string:
            raise ValueError("must be the topic URL without a query (the token goes in 'token')")
        if not TOPIC.match(parsed.raw_path.rpartition("/")[2]):
            raise ValueError("must end in the topic: 1-64 letters, digits, '-' or '_'")
        stored = str(parsed)
        if len(stored) > MAX_URL_LENGTH:
            raise ValueError(f"longer than {MAX_URL_LENGTH} characters as stored")
        return stored

    @field_validator("token")
    @classmethod
    def _token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not TOKEN.match(value.get_secret_value()):
            raise ValueError("must be 1-256 visible ASCII characters (an ntfy access token, tk_...)")
        return value


@dataclass(frozen=True)
class NtfyMessage:
    """One notification; ``level`` (an event's: "down", "up", "warn", "info", "test"; or
    "summary") picks the channel's priority at send time."""

    level: str
    title: str
    message: str
    tags: tuple[str, ...]
    click: str | None = None


def _fit(text: str) -> str:
    """At most ``MAX_MESSAGE_BYTES`` of UTF-8, cut on a line (or a character) with a mark."""
    if len(text.encode()) <= MAX_MESSAGE_BYTES:
        return text
    cut = text.encode()[: MAX_MESSAGE_BYTES - len("\n…".encode())].decode("utf-8", "ignore")
    if "\n" in cut:
        cut = cut.rsplit("\n", 1)[0]
    return cut + "\n…"


def _click(url: str) -> str | None:
    return url if url.startswith(("http://", "https://")) else None


def _tags(said: Notice) -> tuple[str, ...]:
    return (KIND_TAGS.get(said.kind) or TAGS[said.level],)


def render(event: Event) -> NtfyMessage:
    """The notification for one event."""
    said = notice(event)
    lines = [said.url] if said.url else []
    lines += [plain(line.sentence(), MAX_MESSAGE_BYTES) for line in said.lines]
    title = plain(said.title, MAX_TITLE)
    click = _click(said.url) if said.url else None
    return NtfyMessage(said.level, title, _fit("\n".join(lines)), _tags(said), click)


def _line(event: Event) -> str:
    said = notice(event)
    text = f"{said.icon} {plain(said.brief, MAX_LINE)}"
    return f"{text} ({clip(said.url, 200)})" if said.url else text


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[NtfyMessage, int]:
    """One notification for as many of ``events`` (in order) as fit; it and how many it covers.

    One event gets its own notification; several waiting at once get one line each under a
    count. Events older than ``max_age`` at the front are one quiet summary, however many.
    """
    first = lead(events, max_age, now, summary, render)
    if first is not None:
        return first
    lines: list[str] = []
    size = 0
    for event in events:
        line = _line(event)
        grown = size + len(line.encode()) + (1 if lines else 0)
        if lines and grown > MAX_MESSAGE_BYTES:
            break
        lines.append(line)
        size = grown
    if len(lines) == 1:
        return render(events[0]), 1
    levels = [notice(e).level for e in events[: len(lines)]]
    level = most_urgent(levels)
    title = f"{len(lines)} alerts: {tally(levels)}"
    return NtfyMessage(level, title, _fit("\n".join(lines)), (TAGS[level],)), len(lines)


def summary(events: list[Event], max_age: float) -> NtfyMessage:
    """Old alerts as one message: per monitor, what happened and how it ended."""
    lines = [
        f"{clip(seen.name, 120)}: {seen.counts()}; {seen.state(icons=False)}" for seen in summarize(events)
    ]
    title = f"{len(events)} alerts older than {format_duration(max_age)}"
    text = (
        f"From while alerts could not be sent ({when(events[0].at)} to {when(events[-1].at)}):\n"
        + "\n".join(lines)
    )
    return NtfyMessage("summary", title, _fit(text), (TAGS["summary"],))


def priority(channel: Mapping[str, Any], level: Level | str) -> int:
    """The channel's priority for a message of ``level``: its ``priority_down`` for what is
    urgent (and a test, so a test shows how an outage arrives), one less (never below
    ``priority_up``) for a warning, its ``priority_up`` for the rest."""
    down, up = int(channel.get("priority_down", 5)), int(channel.get("priority_up", 3))
    if level in ("down", "test"):
        return down
    if level == "warn":
        return max(up, down - 1)
    return up


def publish_body(channel: Mapping[str, Any], message: NtfyMessage) -> dict[str, Any]:
    """The JSON published for ``message`` to the channel's topic, with its priority."""
    _, topic = split_topic_url(str(channel["url"]))
    body: dict[str, Any] = {
        "topic": topic,
        "title": message.title,
        "message": message.message,
        "priority": priority(channel, message.level),
        "tags": list(message.tags),
    }
    if message.click:
        body["click"] = message.click
    return body


def judge(reply: Reply, url: str = "") -> None:
    """ntfy's answers: 2xx sent; 429 waits (42901, too many requests: 5 s, ntfy's replenish
    interval; 42908, the daily quota: 10 minutes); 401/403 (token missing, wrong, or without
    write access), 400 and 404 are permanent; 5xx retry."""
    if 200 <= reply.status < 300:
        return
    body = reply.json()
    code = body.get("code") if isinstance(body, dict) else None
    error = body.get("error") if isinstance(body, dict) else None
    detail = (
        f"{code} {error}"
        if isinstance(code, int) and isinstance(error, str)
        else without_url(reply.text(120), url)
    )
    if reply.status == 429:
        wait = THROTTLE_WAIT.get(code, DEFAULT_THROTTLE_WAIT) if isinstance(code, int) else 5.0
        raise DeliveryError(
            f"ntfy 429: {detail}", permanent=False, retry_after=retry_after(reply) or wait, throttled=True
        )
    classify("ntfy", reply, detail=detail)


async def send(ctx: SendContext, channel: Mapping[str, Any], payload: Any) -> None:
    message: NtfyMessage = payload
    url = str(channel["url"])
    publish, _ = split_topic_url(url)
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    token = channel.get("token")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(publish_body(channel, message), ensure_ascii=False).encode()
    judge(await ctx.web.post("ntfy", publish, body, headers), url)


def limits(destination: str) -> list[Bucket]:
    return [Bucket(destination, WINDOW_MAX, WINDOW), Bucket(f"{destination}:{PER_SECOND_KEY}", 1, 1.0)]


def server_limits(channel: Mapping[str, Any]) -> list[Bucket]:
    """ntfy counts requests per client across all topics of a server: the window is shared by
    every topic of that server (measured: 10 topics of one server at 60 each drew 122 429s)."""
    try:
        host = urlsplit(str(channel.get("url") or "")).hostname
    except ValueError:
        host = None
    return [Bucket(f"ntfy-server:{host}", WINDOW_MAX, WINDOW)] if host else []


KIND = ChannelKind(
    name="ntfy",
    title="ntfy",
    config=NtfySettings,
    compose=compose,
    send=send,
    limits=limits,
    shared_limits=server_limits,
    secrets=frozenset({"url", "token"}),
    targets=("url",),
)
