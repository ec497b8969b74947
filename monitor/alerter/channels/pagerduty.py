"""PagerDuty Events API v2: a DOWN triggers an alert, its UP resolves it, so the page closes itself.

Both carry the incident's ``dedup_key`` (``monitor-<monitor id>-incident-<incident id>``),
computable from either event, so a retried trigger adds to the open alert instead of paging
twice, and the resolve finds it. The integration (routing) key is the channel's secret: it
travels in the body only, and no error or log line quotes it.

A test has no equivalent in the API (every trigger is an alert): it is a trigger of severity
``info`` under a key of its own, resolved by a second event in the same send, so the channel
shows one resolved alert and nothing stays open (with severity-based urgency, info is low
urgency and does not page).

Limits: PagerDuty takes 120 events a minute per integration key (its "Events API rate
limits"), answering 429 beyond; the shared pacer keeps it with a second of margin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from yarl import URL

from monitor.alerter.channels.base import (
    ChannelKind,
    DeliveryError,
    Reply,
    SendContext,
    classify,
    retry_after,
    secret_url,
)
from monitor.alerter.channels.text import clip, describe_cause, when
from monitor.alerter.pacing import Bucket
from monitor.events import Event

DEFAULT_URL = "https://events.pagerduty.com/v2/enqueue"
ROUTING_KEY = re.compile(r"[A-Za-z0-9]{32}")
PER_MINUTE = 120
WINDOW = 61.0  # a minute, with a second of margin: clocks and network jitter differ
THROTTLE_WAIT = 5.0  # after a 429 without Retry-After (PagerDuty sends none): back off a while
MAX_SUMMARY = 1024
MAX_SOURCE = 255
Severity = Literal["critical", "error", "warning", "info"]


class PagerDutySettings(BaseModel):
    """A PagerDuty service's Events API v2 integration."""

    model_config = ConfigDict(extra="forbid")

    routing_key: SecretStr = Field(
        description="the Events API v2 integration key of a service or ruleset (32 characters)"
    )
    url: str = Field(
        DEFAULT_URL,
        description=f"the events endpoint; default {DEFAULT_URL} (EU accounts: "
        "https://events.eu.pagerduty.com/v2/enqueue)",
    )
    severity: Severity = Field("critical", description="of a DOWN alert: critical, error, warning or info")

    @field_validator("routing_key", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("routing_key")
    @classmethod
    def _key(cls, value: SecretStr) -> SecretStr:
        if not ROUTING_KEY.fullmatch(value.get_secret_value()):
            raise ValueError("must be the 32-character integration key (letters and digits)")
        return value

    @field_validator("url", mode="before")
    @classmethod
    def _url(cls, value: Any) -> Any:
        return secret_url(value) if isinstance(value, str) else value


def dedup_key(event: Event) -> str:
    """The same for an incident's DOWN and UP: the UP resolves what the DOWN triggered."""
    return f"monitor-{event.monitor_id}-incident-{event.incident_id}"


def _source(event: Event) -> str:
    try:
        host = URL(event.monitor_url).host if event.monitor_url else None
    except ValueError:
        host = None
    return clip(host or event.monitor_name or "monitor", MAX_SOURCE)


def _links(event: Event) -> list[dict[str, str]]:
    if event.monitor_url.startswith(("http://", "https://")):
        return [{"href": event.monitor_url, "text": "Monitored URL"}]
    return []


def trigger(event: Event) -> dict[str, Any]:
    """A DOWN as a trigger (without routing key and severity: the channel's, added by send)."""
    cause = describe_cause(event.cause)
    return {
        "event_action": "trigger",
        "dedup_key": dedup_key(event),
        "payload": {
            "summary": clip(f"{event.monitor_name} is DOWN: {cause}", MAX_SUMMARY),
            "source": _source(event),
            "timestamp": event.at,
            "component": clip(event.monitor_name, MAX_SOURCE),
            "class": "uptime",
            "custom_details": {
                "monitor": event.monitor_name,
                "url": event.monitor_url,
                "cause": cause,
                "status_code": event.cause.get("status_code"),
                "error": event.cause.get("error"),
                "latency_ms": event.cause.get("latency_ms"),
                "since": when(event.started_at or event.at),
                "monitor_id": event.monitor_id,
                "incident_id": event.incident_id,
            },
        },
        "links": _links(event),
        "client": "monitor",
    }


def resolve(event: Event) -> dict[str, Any]:
    return {"event_action": "resolve", "dedup_key": dedup_key(event)}


def test_alert(event: Event) -> list[dict[str, Any]]:
    """A test: an info alert under its own key, resolved at once."""
    key = f"monitor-test-{event.event_id}"
    return [
        {
            "event_action": "trigger",
            "dedup_key": key,
            "payload": {
                "summary": clip(f"Test from monitor: channel {event.monitor_name} works", MAX_SUMMARY),
                "source": "monitor",
                "severity": "info",
                "timestamp": event.at,
                "class": "test",
            },
            "client": "monitor",
        },
        {"event_action": "resolve", "dedup_key": key},
    ]


def render(event: Event) -> list[dict[str, Any]]:
    """The Events API events (in order) for one alert."""
    if event.kind == "test":
        return test_alert(event)
    if event.kind == "down":
        return [trigger(event)]
    return [resolve(event)]


def _resolved_later(event: Event, events: list[Event]) -> bool:
    return any(
        e.kind == "up" and e.monitor_id == event.monitor_id and e.incident_id == event.incident_id
        for e in events
    )


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[list[dict[str, Any]], int]:
    """One alert per send (PagerDuty takes one event per request). An old DOWN (older than
    ``max_age``: it waited while alerts could not be sent) whose recovery is already queued
    behind it sends nothing: paging someone for an outage that is over helps nobody, and the
    resolve that follows finds no open alert, which PagerDuty accepts."""
    if not events:
        raise ValueError("nothing to compose")
    first = events[0]
    if (
        max_age is not None
        and first.kind == "down"
        and first.age_seconds(now) > max_age
        and _resolved_later(first, events[1:])
    ):
        return [], 1
    return render(first), 1


def limits(destination: str) -> list[Bucket]:
    return [Bucket(destination, PER_MINUTE, WINDOW)]


def _settings(channel: Mapping[str, Any]) -> PagerDutySettings:
    fields = {k: v for k, v in channel.items() if k in PagerDutySettings.model_fields}
    try:
        return PagerDutySettings.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise DeliveryError(f"pagerduty settings invalid: {where}: {message}", permanent=True) from None


def check_reply(reply: Reply, routing_key: str) -> None:
    """202: accepted. 400: the event is invalid (PagerDuty's ``errors`` say why), permanent.
    429: too many events for this key; wait (Retry-After, else THROTTLE_WAIT) without counting
    an attempt. 5xx and transport errors: try again. The routing key is never quoted."""
    if 200 <= reply.status < 300:
        return
    body = reply.json()
    detail: str | None = None
    if isinstance(body, dict):
        errors = body.get("errors")
        parts = [str(body.get("message") or body.get("status") or "")]
        if isinstance(errors, list) and errors:
            parts.append("; ".join(str(e) for e in errors[:5]))
        detail = ": ".join(p for p in parts if p) or None
    if detail is None:
        detail = reply.text()
    detail = clip(detail.replace(routing_key, "<routing key>"), 300)
    if reply.status == 429:
        raise DeliveryError(
            "pagerduty 429: too many events for this integration key",
            permanent=False,
            retry_after=retry_after(reply) or THROTTLE_WAIT,
            throttled=True,
        )
    classify("pagerduty", reply, detail=detail)


async def deliver(ctx: SendContext, channel: Mapping[str, Any], events: Any) -> None:
    """POST each event in order (one, or a test's trigger and resolve)."""
    settings = _settings(channel)
    key = settings.routing_key.get_secret_value()
    for item in events:
        body = {**item, "routing_key": key}
        if item["event_action"] == "trigger":
            body["payload"] = {"severity": settings.severity, **item["payload"]}
        data = json.dumps(body, separators=(",", ":")).encode()
        reply = await ctx.web.post("pagerduty", settings.url, data, {"Content-Type": "application/json"})
        check_reply(reply, key)


KIND = ChannelKind(
    name="pagerduty",
    title="PagerDuty",
    config=PagerDutySettings,
    compose=compose,
    send=deliver,
    limits=limits,
    secrets=frozenset({"routing_key"}),
)
