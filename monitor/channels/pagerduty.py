"""PagerDuty Events API v2: a DOWN triggers an alert, its UP resolves it, so the page closes itself;
an outage acknowledged here acknowledges the alert there (PagerDuty stops escalating it).

What each kind of event does is one table, :data:`ROUTES`: an action (trigger, acknowledge or
resolve), the ``dedup_key`` that ties a trigger to its resolve, and a severity of its own if it
has one. A DOWN, its acknowledgement and its UP carry the incident's key
(``monitor-<monitor id>-incident-<incident id>``), computable from any of them, so a retried
trigger adds to the open alert instead of paging twice, and the acknowledgement and the resolve
find it. A degradation triggers a ``warning`` under the monitor's own
key (``monitor-<id>-degraded``), which its end resolves; the checker losing its network
triggers a ``critical`` alert (``monitor-checker-connectivity``), resolved when it is back.
Reminders, flapping and maintenance are not sent: PagerDuty re-notifies on its own, and an
open alert already says the monitor is down. The integration (routing) key is the channel's
secret: it travels in the body only, and no error or log line quotes it.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
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
)
from monitor.channels.notice import notice
from monitor.channels.text import clip, describe_cause, plain, when
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


def incident_key(event: Event) -> str:
    """The same for an incident's DOWN and UP: the UP resolves what the DOWN triggered."""
    return f"monitor-{event.monitor_id}-incident-{event.incident_id}"


def degraded_key(event: Event) -> str:
    """One per monitor: a monitor is degraded or not, and the end resolves the start."""
    return f"monitor-{event.monitor_id}-degraded"


def connectivity_key(event: Event) -> str:
    return "monitor-checker-connectivity"


def test_key(event: Event) -> str:
    return f"monitor-test-{event.event_id}"


@dataclass(frozen=True)
class Route:
    """What one kind of event does at PagerDuty: ``action``, ``key`` (its dedup key), and the
    severity of a trigger (None: the channel's ``severity``)."""

    action: Literal["trigger", "acknowledge", "resolve", "test"]
    key: Callable[[Event], str]
    severity: Severity | None = None


# Every kind that reaches PagerDuty; the others (remind, flapping, flapping_end,
# maintenance_start, maintenance_end, kinds this version does not know) are not addressed to
# PagerDuty channels at all (``accepts``), and send nothing if they reach one anyway (an
# event written by an older version).
ROUTES: dict[str, Route] = {
    "down": Route("trigger", incident_key),
    "acknowledged": Route("acknowledge", incident_key),
    "up": Route("resolve", incident_key),
    "degraded": Route("trigger", degraded_key, "warning"),
    "degraded_end": Route("resolve", degraded_key),
    "connectivity_lost": Route("trigger", connectivity_key, "critical"),
    "connectivity_restored": Route("resolve", connectivity_key),
    "test": Route("test", test_key, "info"),
}


def dedup_key(event: Event) -> str | None:
    """The alert ``event`` triggers or resolves; None for a kind PagerDuty is not sent."""
    route = ROUTES.get(event.kind)
    return route.key(event) if route is not None else None


def _source(event: Event) -> str:
    try:
        host = URL(event.monitor_url).host if event.monitor_url else None
    except ValueError:
        host = None
    return clip(host or event.monitor_name or "monitor", MAX_SOURCE)


def _links(event: Event) -> list[dict[str, str]]:
    if event.monitor_url and event.monitor_url.startswith(("http://", "https://")):
        return [{"href": event.monitor_url, "text": "Monitored URL"}]
    return []


def trigger(event: Event, route: Route) -> dict[str, Any]:
    """An alert as a trigger (without routing key and, unless the route has its own, severity:
    the channel's, added by send)."""
    said = notice(event)
    details: dict[str, Any] = {}
    if event.monitor_id is not None:
        details["monitor"] = event.monitor_name
        if event.monitor_url:
            details["url"] = event.monitor_url
    if event.cause:
        details.update(
            cause=describe_cause(event.cause),
            status_code=event.cause.get("status_code"),
            error=event.cause.get("error"),
            latency_ms=event.cause.get("latency_ms"),
        )
    details["since"] = when(event.started_at or event.at)
    if event.monitor_id is not None:
        details.update(monitor_id=event.monitor_id, incident_id=event.incident_id)
    for name, value in event.details.items():  # the kind's own figures: a reason, the monitors covered
        details.setdefault(name, value)
    payload: dict[str, Any] = {
        "summary": clip(plain(said.gist), MAX_SUMMARY),
        "source": _source(event),
        "timestamp": event.at,
        "component": clip(event.monitor_name or "checker", MAX_SOURCE),
        "class": "uptime",
        "custom_details": details,
    }
    if route.severity is not None:
        payload["severity"] = route.severity
    return {
        "event_action": "trigger",
        "dedup_key": route.key(event),
        "payload": payload,
        "links": _links(event),
        "client": "monitor",
    }


def test_alert(event: Event, route: Route = ROUTES["test"]) -> list[dict[str, Any]]:
    """A test: an info alert under its own key, resolved at once."""
    key = route.key(event)
    return [
        {
            "event_action": "trigger",
            "dedup_key": key,
            "payload": {
                "summary": clip(f"Test from monitor: channel {event.monitor_name} works", MAX_SUMMARY),
                "source": "monitor",
                "severity": route.severity or "info",
                "timestamp": event.at,
                "class": "test",
            },
            "client": "monitor",
        },
        {"event_action": "resolve", "dedup_key": key},
    ]


def render(event: Event) -> list[dict[str, Any]]:
    """The Events API events (in order) for one alert: none for a kind PagerDuty is not sent."""
    route = ROUTES.get(event.kind)
    if route is None:
        return []
    if route.action == "test":
        return test_alert(event, route)
    if route.action == "trigger":
        return [trigger(event, route)]
    return [{"event_action": route.action, "dedup_key": route.key(event)}]


def _resolved_later(event: Event, events: list[Event]) -> bool:
    key = dedup_key(event)
    return any(ROUTES[e.kind].action == "resolve" and dedup_key(e) == key for e in events if e.kind in ROUTES)


def compose(
    events: list[Event], *, max_age: float | None = None, now: datetime | None = None
) -> tuple[list[dict[str, Any]], int]:
    """One alert per send (PagerDuty takes one event per request). An old trigger or
    acknowledgement (older than ``max_age``: it waited while alerts could not be sent) whose
    resolve is already queued behind it sends nothing: paging someone for an outage that is
    over helps nobody, and the resolve that follows finds no open alert, which PagerDuty
    accepts. Events of kinds that are not sent (reminders, flapping, maintenance) at the front
    are covered together, with nothing to send."""
    if not events:
        raise ValueError("nothing to compose")
    first = events[0]
    if first.kind not in ROUTES:
        silent = next((i for i, e in enumerate(events) if e.kind in ROUTES), len(events))
        return [], silent
    if (
        max_age is not None
        and ROUTES[first.kind].action in ("trigger", "acknowledge")
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
    targets=("url",),
    accepts=ROUTES.__contains__,
)
