"""The event schema (what travels on ``monitor:events``) and its stream helpers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from monitor import keys, redisconn
from monitor.models import CheckResult
from monitor.times import rfc3339

# 2 added ``channels`` (the monitor's alert channels when the change happened) and the
# "test" kind; 3 added ``seq``, the event's place in its monitor's sequence (alerts of one
# monitor reach each destination in that order); 4 added ``details`` (a kind's own figures)
# and the kinds beyond down, up and test (reminders, degradations, flapping, maintenance, the
# checker's connectivity). Versions 1 (telegram_chat_id only), 2 and 3 are still understood
# (without details); a kind an alerter does not know is rendered as a neutral notice, so a new
# kind ("acknowledged", issue 29) needs no new version.
SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)


class EventFormatError(ValueError):
    """A stream entry that is not an event of a version we understand."""


class Subject(Protocol):
    """What an event says of its monitor: a ``MonitorSpec``, or a spooled change's monitor."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...


@dataclass(frozen=True)
class Event:
    event_id: str
    # "down" | "up" | "remind" | "acknowledged" (someone took the outage in hand, written by the
    # api) | "degraded" | "degraded_end" | "flapping" | "flapping_end" |
    # "maintenance_start" | "maintenance_end" | "connectivity_lost" | "connectivity_restored"
    # (the checker's own: monitor_id None, monitor_name "") | "test" (monitor_name: the channel's)
    kind: str
    monitor_id: int | None
    monitor_name: str
    # The monitor's target as the API shows it (``tcp://host:25``...); None when there is none:
    # a heartbeat (nothing is dialled), a test message, the checker's own. Events written
    # before this said "" for none, which ``from_dict`` reads as None.
    monitor_url: str | None
    telegram_chat_id: str | None
    incident_id: int
    at: str  # RFC 3339: when the change happened
    started_at: str | None  # the incident's start
    ended_at: str | None  # the incident's end (for "up")
    duration_seconds: float | None
    cause: dict[str, Any]  # status_code, error, latency_ms of the deciding check
    # [{"id", "kind", "name", ...the kind's settings, secrets sealed}]
    channels: list[dict[str, Any]] = field(default_factory=list)
    # For "up": the event id of the same incident's "down", which must be delivered first; for
    # "acknowledged", the same (an e-mail threads under it).
    after_event_id: str | None = None
    # 1, 2, 3... per monitor, in the order of its changes (None: a test message, or version < 3).
    seq: int | None = None
    # The kind's own figures (version 4): "covers" and "note" (down, up), "reminder" and
    # "reminder_max" (remind), "acknowledged_by" and "note" (acknowledged), "screenshot" (down:
    # the dashboard page of a browser check's screenshots), "reason" (degraded,
    # connectivity_lost), "changes" and "window_minutes" (flapping), "status" (flapping_end),
    # "window" and "until" (maintenance_*).
    details: dict[str, Any] = field(default_factory=dict)
    v: int = SCHEMA_VERSION

    @property
    def about_monitor(self) -> bool:
        """Whether the event is about a monitor: not a test message (which names its channel)
        and not the checker's own notice."""
        return self.kind != "test" and self.monitor_id is not None

    def age_seconds(self, now: datetime | None = None) -> float:
        """How long ago the change happened (``at``); 0.0 if ``at`` cannot be read."""
        try:
            at = datetime.fromisoformat(self.at.replace("Z", "+00:00"))
        except ValueError:
            return 0.0
        return ((now or datetime.now(UTC)) - at).total_seconds()

    def targets(
        self, destination: Callable[[Mapping[str, Any], str], str | None]
    ) -> dict[str, dict[str, Any]]:
        """Where this event goes: destination key -> the channel (the first one naming it), by
        ``destination(channel, event kind)`` (the channel registry's); channels of unknown
        kinds, and of kinds that take no events of this one's kind, are left out."""
        channels = list(self.channels)
        if self.telegram_chat_id:  # version 1
            channels.append({"kind": "telegram", "name": "", "chat_id": self.telegram_chat_id})
        found: dict[str, dict[str, Any]] = {}
        for channel in channels:
            key = destination(channel, self.kind)
            if key is not None:
                found.setdefault(key, channel)
        return found

    @classmethod
    def build(
        cls,
        *,
        event_id: uuid.UUID,
        kind: str,
        spec: Subject,
        incident_id: int,
        at: datetime,
        started_at: datetime | None,
        ended_at: datetime | None,
        result: CheckResult,
        channels: list[dict[str, Any]],
        after_event_id: str | None = None,
        seq: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        duration = (ended_at - started_at).total_seconds() if started_at and ended_at else None
        return cls(
            event_id=str(event_id),
            kind=kind,
            monitor_id=spec.id,
            monitor_name=spec.name,
            monitor_url=spec.url or None,
            telegram_chat_id=None,
            incident_id=incident_id,
            at=rfc3339(at),
            started_at=rfc3339(started_at) if started_at else None,
            ended_at=rfc3339(ended_at) if ended_at else None,
            duration_seconds=duration,
            cause={"status_code": result.status_code, "error": result.error, "latency_ms": result.latency_ms},
            channels=channels,
            after_event_id=after_event_id,
            seq=seq,
            details=dict(details or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        if data.get("v") not in READABLE_VERSIONS:
            raise EventFormatError(f"unsupported event schema version {data.get('v')!r}")
        if data.get("details") is None:
            data = {k: v for k, v in data.items() if k != "details"}  # before version 4, or null
        elif not isinstance(data["details"], dict):
            raise EventFormatError("event details are not a JSON object")
        if data.get("monitor_url") == "":
            data = {**data, "monitor_url": None}
        try:
            return cls(**data)
        except TypeError as exc:
            raise EventFormatError(str(exc)) from None

    @classmethod
    def from_fields(cls, fields: dict[Any, Any]) -> Event:
        raw = fields.get(keys.EVENT_FIELD) or fields.get(keys.EVENT_FIELD.encode())
        if raw is None:
            raise EventFormatError("stream entry has no event field")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise EventFormatError(f"event is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise EventFormatError("event is not a JSON object")
        return cls.from_dict(data)


async def publish(redis: aioredis.Redis, payloads: list[dict[str, Any]]) -> list[str]:
    """XADD each payload (already an event dict) in order, in one round trip; through Sentinel,
    only once a replica has them too (monitor/redisconn.py, so a failover cannot lose them)."""

    def fill(pipe: Pipeline) -> None:
        for payload in payloads:
            pipe.xadd(
                keys.EVENTS_STREAM,
                {keys.EVENT_FIELD: json.dumps(payload, separators=(",", ":"))},
                maxlen=keys.EVENTS_MAXLEN,
                approximate=True,
            )

    ids = await redisconn.write_replicated(redis, fill)
    return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]
