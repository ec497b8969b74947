"""Telegram: a pure renderer of messages and a thin ``sendMessage`` call.

The bot token is the operator's (``MONITOR_TELEGRAM_BOT_TOKEN``), a channel names a chat.
Flood limits (Telegram's FAQ): about one message a second per chat, 20 a minute in a group,
30 a second per bot; kept in the shared pacer so several alerters together keep them.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

import aiohttp
from pydantic import BaseModel, ConfigDict, SecretStr, field_validator

from monitor.channels.base import Bucket, ChannelKind, DeliveryError, DestinationMoved, SendContext
from monitor.channels.notice import notice, summarize, tally
from monitor.channels.text import clip as _clip
from monitor.channels.text import escaper, format_duration, lead, write
from monitor.channels.text import when as _when
from monitor.config import parse_chat_id
from monitor.events import Event

MAX_MESSAGE = 4096
PER_CHAT_INTERVAL = 1.05  # a little over 1 s: clocks and network jitter differ
GROUP_WINDOW = 61.0  # 20 a minute, with a second of margin for the same reason
GROUP_MAX = 20
BOT_PER_SECOND = 30
MAX_HEADLINE = 1024  # a headline's characters, escaped: a cut message keeps its first line whole
MAX_LINE = 600  # one alert of a combined message, escaped, without its URL
# What Telegram's HTML reads (and html.escape writes): every user-supplied string goes through it.
escape = escaper({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


class TelegramSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    chat_id: str

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat(cls, value: Any) -> Any:
        return parse_chat_id(value)


def is_group(chat_id: str) -> bool:
    return chat_id.startswith("-") or chat_id.startswith("@")


@dataclass(frozen=True)
class TelegramConfig:
    kind: ClassVar[str] = "telegram"
    token: SecretStr
    api_base: str = "https://api.telegram.org"

    def validate(self) -> None:
        token = self.token.get_secret_value()
        if ":" not in token or len(token) < 10:
            raise ValueError("MONITOR_TELEGRAM_BOT_TOKEN does not look like a bot token (id:secret)")


def _bold(name: str) -> str:
    return f"<b>{name}</b>" if name else ""


def render(event: Event) -> str:
    """The message for one event: HTML with every user-supplied string escaped."""
    said = notice(event)
    lines = [f"{said.icon} {write(said.title, escape, limit=MAX_HEADLINE, strong=_bold)}"]
    if said.url:
        lines.append(html.escape(said.url))
    lines += [write(line.sentence(), escape, limit=MAX_MESSAGE // 2, strong=_bold) for line in said.lines]
    return truncate("\n".join(lines))


def _line(event: Event) -> str:
    """One event as one line of a combined message."""
    said = notice(event)
    text = f"{said.icon} {write(said.brief, escape, limit=MAX_LINE, strong=_bold)}"
    return f"{text} ({html.escape(_clip(said.url, 200))})" if said.url else text


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[str, int]:
    """One message for as many of ``events`` (in order) as fit; returns it and how many it covers.

    A single event gets the full message; several, waiting for the same chat at once
    (a network outage), get one line each under a count, so the whole picture arrives
    in a few messages instead of a trickle. Events older than ``max_age`` seconds at the
    front (alerts that waited while alerts could not be sent, e.g. no bot token yet) are
    one summary, however many: a DOWN from days ago must not page anyone as if it were news.
    """
    first = lead(events, max_age, now, summary, render)
    if first is not None:
        return first
    lines: list[str] = []
    size = 40  # room for the header
    for event in events:
        line = _line(event)
        if lines and size + len(line) + 1 > MAX_MESSAGE:
            break
        lines.append(line)
        size += len(line) + 1
    if len(lines) == 1:
        return render(events[0]), 1
    counts = tally([notice(e).level for e in events[: len(lines)]], tests_as_up=True)
    header = f"⚠️ {len(lines)} alerts: {counts}"
    return truncate("\n".join([header, *lines])), len(lines)


def summary(events: list[Event], max_age: float) -> str:
    """Old alerts of one chat as one message: per monitor, what happened and how it ended."""
    lines = [
        f"<b>{html.escape(_clip(seen.name, 120))}</b>: {seen.counts()}; {seen.state(escape=html.escape)}"
        for seen in summarize(events)
    ]
    header = (
        f"🕓 {len(events)} alerts older than {format_duration(max_age)}, from while alerts could not "
        f"be sent ({_when(events[0].at)} to {_when(events[-1].at)}):"
    )
    return truncate("\n".join([header, *lines]))


def truncate(text: str) -> str:
    if len(text) <= MAX_MESSAGE:
        return text
    # Cut on a line boundary so no HTML tag or entity is split.
    cut = text[: MAX_MESSAGE - 2].rsplit("\n", 1)[0]
    return cut + "\n…"


def destination(channel: Mapping[str, Any]) -> str | None:
    """Telegram's destinations are chats: two channels naming one chat share its messages."""
    chat = channel.get("chat_id")
    return f"telegram:{chat}" if chat else None


def operator_channel(chat_id: str) -> dict[str, Any]:
    """The operator's chat (``MONITOR_OPERATOR_CHAT``) as an event carries a channel; id 0 is no
    stored channel's, and its destination is the chat's, as for every channel naming it."""
    return {"id": 0, "kind": "telegram", "name": "operator", "chat_id": chat_id}


def limits(destination: str) -> list[Bucket]:
    chat = destination.removeprefix("telegram:")
    buckets = [Bucket(destination, 1, PER_CHAT_INTERVAL), Bucket("telegram:bot", BOT_PER_SECOND, 1.0)]
    if is_group(chat):
        buckets.append(Bucket(f"{destination}:minute", GROUP_MAX, GROUP_WINDOW))
    return buckets


async def deliver(ctx: SendContext, channel: Mapping[str, Any], text: Any) -> None:
    """Send to the channel's chat, or where it moved: a group upgraded to a supergroup answers
    with its new id; the message goes there and the channels of the old chat follow it."""
    token = ctx.settings.telegram_bot_token
    assert token is not None  # unavailable() holds the chat's alerts back without one
    config = TelegramConfig(token, ctx.settings.telegram_api_base)
    chat = str(channel["chat_id"])
    key = destination(channel)
    assert key is not None  # a channel without a chat has no destination, so nothing to send
    target = ctx.moves.get(key, chat)
    try:
        await send(ctx.http, config, target, text)
    except DestinationMoved as exc:
        ctx.moves[key] = exc.moved_to
        await ctx.on_moved("telegram", "chat_id", target, exc.moved_to)
        await send(ctx.http, config, exc.moved_to, text)


def _unavailable(ctx: SendContext) -> str | None:
    if ctx.settings.telegram_bot_token is None:
        return "MONITOR_TELEGRAM_BOT_TOKEN is not set"
    return None


async def send(session: aiohttp.ClientSession, config: TelegramConfig, chat_id: str, text: str) -> None:
    url = f"{config.api_base}/bot{config.token.get_secret_value()}/sendMessage"
    payload = {"chat_id": chat_id, "text": text, "parse_mode": "HTML", "disable_web_page_preview": True}
    try:
        async with session.post(url, json=payload, timeout=aiohttp.ClientTimeout(total=15)) as response:
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = {}
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        # Never include the URL: it carries the token.
        raise DeliveryError(f"telegram unreachable: {type(exc).__name__}", permanent=False) from None
    if status == 200 and isinstance(body, dict) and body.get("ok"):
        return
    description = str(body.get("description", "")) if isinstance(body, dict) else ""
    if status == 429:
        params = body.get("parameters") if isinstance(body, dict) else None
        retry_after = float(params.get("retry_after", 1)) if isinstance(params, dict) else 1.0
        raise DeliveryError(
            f"telegram 429: {description}", permanent=False, retry_after=retry_after, throttled=True
        )
    params = body.get("parameters") if isinstance(body, dict) else None
    if status == 400 and isinstance(params, dict) and params.get("migrate_to_chat_id") is not None:
        # "Bad Request: group chat was upgraded to a supergroup chat": the chat lives on there.
        raise DestinationMoved(f"telegram 400: {description}", moved_to=str(params["migrate_to_chat_id"]))
    # 400 (chat not found, bad request), 401 (bad token), 403 (bot blocked) do not heal by retrying.
    permanent = status in (400, 401, 403, 404)
    raise DeliveryError(f"telegram {status}: {description}".strip(), permanent=permanent)


KIND = ChannelKind(
    name="telegram",
    title="Telegram",
    config=TelegramSettings,
    compose=compose,
    send=deliver,
    limits=limits,
    destination=destination,
    unavailable=_unavailable,
)
