"""Helpers for the alerting tests: events as the relay publishes them, the alerts that reached
Telegram, where deliveries stand, a fake Telegram that fails one alert by its text, and the
``monitor alerts dead`` command.

Every alert names its monitor in bold, in a message of its own (``🔴 <b>name</b> is DOWN``)
or as one line of a combined one (``🔴 <b>name</b> DOWN: ...``), so tests give each monitor
a unique name and count alerts by name and kind across all delivered messages.
"""

from __future__ import annotations

import asyncio
import html
import re
import sys
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from monitor import keys
from monitor.events import Event, publish

from .api import ApiClient
from .fake_telegram import FakeTelegram, TelegramRequest
from .procs import clean_environ
from .target import FlappingTarget
from .waiting import wait_for

ALERT_LINE = re.compile(r"<b>(?P<name>[^<]+)</b> (?:is )?(?P<kind>DOWN|UP)\b")


# -- events --------------------------------------------------------------------------------


def make_event(
    monitor_id: int,
    name: str,
    chat_id: str | int,
    kind: str = "down",
    *,
    status_code: int = 500,
    url: str | None = None,
    incident_id: int | None = None,
) -> dict[str, Any]:
    """An event as the scheduler's relay publishes it (``Event.to_dict()``), for one Telegram chat."""
    now = datetime.now(UTC)
    started = now - timedelta(seconds=90) if kind == "up" else now
    event = Event(
        event_id=str(uuid.uuid4()),
        kind=kind,
        monitor_id=monitor_id,
        monitor_name=name,
        monitor_url=url or f"https://example.test/{monitor_id}",
        telegram_chat_id=None,
        incident_id=incident_id or monitor_id,
        at=_iso(now if kind == "up" else started),
        started_at=_iso(started),
        ended_at=_iso(now) if kind == "up" else None,
        duration_seconds=(now - started).total_seconds() if kind == "up" else None,
        cause={"status_code": status_code if kind == "down" else 200, "error": None, "latency_ms": 12.5},
        channels=[{"id": 1, "kind": "telegram", "name": f"Telegram {chat_id}", "chat_id": str(chat_id)}],
    )
    return event.to_dict()


def event_chat(event: dict[str, Any]) -> str:
    """The Telegram chat of an event made by :func:`make_event`."""
    return str(event["channels"][0]["chat_id"])


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def publish_events(redis: aioredis.Redis, events: list[dict[str, Any]]) -> list[str]:
    """XADD the events to ``monitor:events`` exactly as the relay does; their stream ids."""
    return await publish(redis, events)


def alerter_env(
    fake: FakeTelegram,
    *,
    claim_idle: float = 2.0,
    max_attempts: int = 5,
    backoff_base: float = 0.2,
    backoff_max: float = 1.0,
) -> dict[str, str]:
    """Settings of an alerter that talks to ``fake``, with fast reclaims and retries."""
    return {
        **fake.env(),
        "MONITOR_ALERT_CLAIM_IDLE_SECONDS": str(claim_idle),
        "MONITOR_ALERT_MAX_ATTEMPTS": str(max_attempts),
        "MONITOR_ALERT_BACKOFF_BASE_SECONDS": str(backoff_base),
        "MONITOR_ALERT_BACKOFF_MAX_SECONDS": str(backoff_max),
    }


async def watched_monitor(
    api: ApiClient, db: asyncpg.Connection, url: str, channel_ids: list[int], *, name: str = "shop"
) -> dict[str, Any]:
    """A monitor made through the API that checks ``url`` every second and alerts
    ``channel_ids`` at its first failure; returned once a check of it has come back up, so the
    test's outage is the first change it sees."""
    monitor = await api.post(
        "/api/v1/monitors",
        json={"name": name, "url": url, "interval_seconds": 1, "timeout_seconds": 1, "confirm_after": 1,
              "channel_ids": channel_ids},
    )  # fmt: skip
    assert monitor.status == 201, monitor
    monitor_id = monitor.json["id"]
    await wait_for(
        lambda: db.fetchval("SELECT count(*) FROM checks WHERE ok AND monitor_id = $1", monitor_id),
        timeout=20,
    )
    return monitor.json


async def flapping_monitors(
    monitor_factory: Callable[..., Awaitable[asyncpg.Record]],
    flapping: FlappingTarget,
    *,
    count: int,
    prefix: str,
    first_chat: int,
    chats: int,
) -> dict[int, str]:
    """``count`` monitors (``prefix-00``...) on paths of the flapping target, checked every second
    and confirmed at the first failure, each alerting one of ``chats`` Telegram chats numbered
    from ``first_chat``: every tick is an alert. Their names by id."""
    names = {}
    for i in range(count):
        row = await monitor_factory(
            name=f"{prefix}-{i:02d}",
            url=flapping.url(f"m{i}"),
            interval_seconds=1,
            timeout_seconds=1,
            confirm_after=1,
            telegram_chat_id=str(first_chat + i % chats),
        )
        names[row["id"]] = row["name"]
    return names


# -- what reached Telegram -----------------------------------------------------------------


def alerts_in(text: str | None) -> list[tuple[str, str]]:
    """(monitor name, "DOWN" | "UP") of every alert in a message, in order."""
    return [(html.unescape(m["name"]), m["kind"]) for m in ALERT_LINE.finditer(text or "")]


@dataclass(frozen=True)
class Alert:
    name: str
    kind: str
    request: TelegramRequest
    position: int  # index of the line within its message

    @property
    def chat_id(self) -> str | None:
        return self.request.chat_id

    @property
    def order(self) -> tuple[float, int]:
        """When it reached Telegram: arrival of its message, then its line in the message."""
        return (self.request.received_at, self.position)


def delivered_alerts(fake: FakeTelegram, *, exclude: Iterable[TelegramRequest] = ()) -> list[Alert]:
    """Every alert of every message the fake answered with 200, in arrival order.

    ``exclude``: requests not to count (e.g. one a killed alerter abandoned while it was held,
    which the fake answers 200 once released although nobody reads the answer).
    """
    skip = {id(r) for r in exclude}
    found = []
    for request in sorted(fake.messages, key=lambda r: r.received_at):
        if id(request) in skip:
            continue
        for position, (name, kind) in enumerate(alerts_in(request.text)):
            found.append(Alert(name, kind, request, position))
    return found


# Every kind of alert, as the first line of its own message (its title) or as one line of a
# combined one (its brief), reduced to (name, KIND). Maintenance and network notices name the
# monitor after "Maintenance for" or name nobody ("").
_SAID = [
    # First: its note (after "by <name>: ") may say anything, "DOWN" included.
    (re.compile(r"^(?P<name>.+?) acknowledged by\b"), "ACKNOWLEDGED"),
    (re.compile(r"^(?P<name>.+?) stopped flapping; now (?P<now>[A-Z]+)"), "STABLE"),
    (re.compile(r"^(?P<name>.+?) (?:is )?still DOWN\b"), "REMIND"),
    (re.compile(r"^(?P<name>.+?) (?:is )?DOWN\b"), "DOWN"),
    (re.compile(r"^(?P<name>.+?) (?:is )?UP\b"), "UP"),
    (re.compile(r"^(?P<name>.+?) (?:is )?no longer degraded\b"), "DEGRADED_END"),
    (re.compile(r"^(?P<name>.+?) (?:is )?DEGRADED\b"), "DEGRADED"),
    (re.compile(r"^(?P<name>.+?) (?:is )?FLAPPING\b"), "FLAPPING"),
    (re.compile(r"^Maintenance for (?P<name>.+?) ended\b"), "MAINTENANCE_END"),
    (re.compile(r"^Maintenance for (?P<name>.+?)(?:: .*)?$"), "MAINTENANCE"),
    (re.compile(r"^The checker's network is down\b"), "NETWORK_DOWN"),
    (re.compile(r"^The checker's network is back\b"), "NETWORK_BACK"),
]
_COMBINED = re.compile(r"^\S+ \d+ alerts: ")
_TAG = re.compile(r"<[^>]+>")


def said(text: str | None) -> list[tuple[str, str]]:
    """(monitor name, KIND) of every alert in one message, in order, for every kind of alert:
    DOWN, REMIND, ACKNOWLEDGED, UP, DEGRADED, DEGRADED_END, FLAPPING, STABLE:<NOW>, MAINTENANCE,
    MAINTENANCE_END, NETWORK_DOWN, NETWORK_BACK (name "" for the network ones)."""
    lines = (text or "").split("\n")
    heads = lines[1:] if _COMBINED.match(lines[0]) else lines[:1]
    found = []
    for head in heads:
        plain = html.unescape(_TAG.sub("", head)).split(" ", 1)[-1]  # without the icon
        plain = re.sub(r" \((?:https?|tcp)://[^)]*\)$", "", plain)  # a combined line's URL
        for pattern, kind in _SAID:
            m = pattern.match(plain)
            if m:
                name = m.groupdict().get("name") or ""
                label = f"{kind}:{m['now']}" if kind == "STABLE" else kind
                found.append((name, label))
                break
        else:
            found.append(("", f"?{plain[:60]}"))
    return found


def said_to(fake: FakeTelegram, chat_id: str | int) -> list[tuple[str, str]]:
    """Every alert delivered to one chat, in arrival order, as (name, KIND) (see :func:`said`)."""
    ordered = sorted(fake.messages_to(chat_id), key=lambda r: r.received_at)
    return [alert for request in ordered for alert in said(request.text)]


def requests_with(fake: FakeTelegram, name: str, kind: str | None = None) -> list[TelegramRequest]:
    """sendMessage calls (answered or not, any status) that carried an alert of monitor ``name``
    (of that kind, "DOWN" or "UP", if given)."""
    return [r for r in fake.requests if any(n == name and kind in (None, k) for n, k in alerts_in(r.text))]


def counts(alerts: Iterable[Alert]) -> Counter[tuple[str, str]]:
    return Counter((a.name, a.kind) for a in alerts)


class ScriptedTelegram(FakeTelegram):
    """The fake Telegram, able to fail the messages that carry a given alert (by its text)
    while answering every other message normally.

    ``fail_text("<b>name</b>", 500, times=3)``: the next three messages containing that text
    fail. A message combining it with other alerts fails as a whole, as Telegram would.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._text_scripts: list[_TextScript] = []

    def fail_text(self, needle: str, status: int, *, times: int = 1, description: str = "") -> None:
        description = description or ("Internal Server Error" if status >= 500 else "Bad Request")
        self._text_scripts.append(_TextScript(needle, status, description, times))

    def _answer(self, record: TelegramRequest) -> tuple[int, dict[str, Any]]:
        if record.token_ok and record.method == "sendMessage":
            for script in self._text_scripts:
                if script.needle in (record.text or ""):
                    script.times -= 1
                    if script.times <= 0:
                        self._text_scripts.remove(script)
                    body = {"ok": False, "error_code": script.status, "description": script.description}
                    return script.status, body
        return super()._answer(record)


@dataclass
class _TextScript:
    needle: str
    status: int
    description: str
    times: int


# -- where deliveries stand ----------------------------------------------------------------


@dataclass
class AlertState:
    deliveries: dict[str, int] = field(default_factory=dict)  # status -> rows
    pending: int | None = None  # entries pending in the alerter group (None: no group yet)
    dead: int = 0  # entries of monitor:events:dead
    unpublished: int = 0  # outbox rows not yet on the stream

    def settled(self, sent: int, dead: int = 0) -> bool:
        """Every delivery final (this many sent and dead), nothing pending, nothing unpublished."""
        want = {k: v for k, v in (("sent", sent), ("dead", dead)) if v}
        return self.deliveries == want and self.pending == 0 and self.unpublished == 0


async def alert_state(conn: asyncpg.Connection, redis: aioredis.Redis) -> AlertState:
    rows = await conn.fetch("SELECT status, count(*) AS n FROM deliveries GROUP BY status")
    unpublished = await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL")
    try:
        pending = int((await redis.xpending(keys.EVENTS_STREAM, keys.ALERTER_GROUP))["pending"])
    except ResponseError:
        pending = None
    return AlertState(
        deliveries={r["status"]: r["n"] for r in rows},
        pending=pending,
        dead=int(await redis.xlen(keys.DEAD_STREAM)),
        unpublished=int(unpublished),
    )


async def group_caught_up(redis: aioredis.Redis) -> bool:
    """The alerter group has read every entry of the stream (its lag is 0)."""
    try:
        groups = await redis.xinfo_groups(keys.EVENTS_STREAM)
    except ResponseError:
        return False
    for group in groups:
        if _text(group.get("name")) == keys.ALERTER_GROUP:
            return group.get("lag") == 0
    return False


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# -- the CLI -------------------------------------------------------------------------------


async def run_monitor(
    env: Mapping[str, str],
    *args: str,
    timeout: float = 30.0,  # noqa: ASYNC109
) -> tuple[int, str]:
    """``python -m monitor ARGS`` with these settings; (exit code, stdout + stderr).

    Run without blocking the event loop, so the servers the test runs keep answering.
    """
    full = clean_environ()
    full.update(env)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "monitor",
        *args,
        env=full,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"monitor {' '.join(args)} did not finish in {timeout:g}s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")
