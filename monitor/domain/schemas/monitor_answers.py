"""What the answers about monitors look like: a monitor as every face shows it (the common
fields, then each check type's own: ``Check.Shown`` where a type declares how its fields read
back, else its ``Settings``), and a page of them with the uptime ``?include=`` asks for.

The operations build plain dicts (``domain/monitors.py``'s ``render``); these models describe
them for the OpenAPI document, and schemathesis checks live answers against that document, so
an operation that drifts from its model fails the tests.
"""

from __future__ import annotations

from copy import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, create_model
from pydantic.json_schema import SkipJsonSchema

from monitor.checks import REGISTRY as CHECKS
from monitor.domain.schemas.common import Out
from monitor.domain.schemas.locations import LOCATIONS_DOC, QUORUM_DOC
from monitor.domain.schemas.maintenance import MonitorWindow


class LastCheck(Out):
    time: datetime
    ok: bool
    status_code: int | None
    latency_ms: float | None
    error: str | None


class LocationStatus(Out):
    """How one of a monitor's locations sees it."""

    location: str
    live: bool = Field(
        description="a scheduler of this location holds a live lease; only live locations count "
        "towards the quorum"
    )
    status: Literal["up", "degraded", "down", "unknown"] = Field(
        description="what this location last confirmed (its own confirm_after / recover_after streak)"
    )
    since: datetime | None = Field(description="when this location's status last changed")
    reason: str | None = Field(description="why it is down or degraded here")
    last_check_at: datetime | None


class _MonitorBase(Out):
    id: int
    name: str
    type: Literal[tuple(CHECKS.kinds)]  # type: ignore[valid-type]
    url: str | None = Field(
        description="http: the URL checked; other types: their target as a URL-like name "
        "(tcp://host:port); null for a heartbeat"
    )
    interval_seconds: float
    timeout_seconds: float
    confirm_after: int
    recover_after: int = Field(description="consecutive successes that confirm a down monitor's recovery")
    remind_every_minutes: int | None = Field(description="while down, a reminder every N minutes")
    remind_max: int | None = Field(description="at most this many reminders per outage (null: no limit)")
    degraded_above_ms: int | None = Field(description="degraded when responses take longer")
    cert_warn_days: int = Field(description="https and tls: degraded when the certificate expires sooner")
    depends_on: list[int] = Field(description="while one of these is down, this monitor's alerts wait")
    flap_threshold: int | None = Field(description="more changes than this within the window: flapping")
    flap_window_minutes: int
    # heartbeat only
    ping_url: str | SkipJsonSchema[None] = Field(
        None, description="heartbeat: the secret URL the job calls (also .../start and .../fail)"
    )
    badge_url: str = Field(
        description="public badges (no key): append /status.svg, /uptime/30d.svg or /response/24h.svg "
        "(windows 24h, 7d, 30d, 90d; ?label= and ?style=flat-square); the token in it is unguessable"
    )
    telegram_chat_id: str | None = Field(description="the chat of the first Telegram channel attached")
    channel_ids: list[int]
    tags: list[str]
    locations: list[str] = Field(description=LOCATIONS_DOC)
    quorum: int | None = Field(description=QUORUM_DOC)
    paused: bool
    status: Literal["up", "degraded", "down", "paused", "unknown"]
    status_since: datetime | None
    last_check: LastCheck | None
    created_at: datetime
    updated_at: datetime
    # Maintenance windows (monitor/domain/maintenance.py): in the answers about one monitor.
    maintenance: list[MonitorWindow] | SkipJsonSchema[None] = Field(
        None, description="the maintenance windows that apply to it by id or tag (not in lists)"
    )
    location_status: list[LocationStatus] | SkipJsonSchema[None] = Field(
        None, description="a monitor with locations: each one's view, in its order (not in lists)"
    )


def _typed_fields() -> dict[str, Any]:
    """Every check type's own fields, each present in the answers about monitors of that type:
    as a type that declares how they read back (``Check.Shown``: http's, secrets masked) shows
    them, else as its ``Settings`` has them."""
    checks = [CHECKS.get(kind) for kind in CHECKS.kinds]
    shown = {n: (i.annotation, copy(i)) for c in checks if c.Shown for n, i in c.Shown.model_fields.items()}
    fields: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    for check in (c for c in checks if c.Shown is None):
        for name, info in check.Settings.model_fields.items():
            if name in _MonitorBase.model_fields:
                continue
            if name in shown:
                # A field of a type with Shown (http's assertions) that another type has too, of
                # another type (pagespeed's assertions): either one.
                known: Any = shown[name][0]
                if known != info.annotation:
                    shown[name] = (known | info.annotation, shown[name][1])
                continue
            # Two types with a field of one name but different types: documented loosely.
            annotation = annotations.setdefault(name, info.annotation)
            if annotation != info.annotation:
                annotation = annotations[name] = Any
            fields[name] = (annotation | SkipJsonSchema[None], Field(None, description=info.description))  # type: ignore[misc]
    return {**shown, **fields}
    return fields


if TYPE_CHECKING:
    Monitor = _MonitorBase
else:
    Monitor = create_model("Monitor", __base__=_MonitorBase, **_typed_fields())


DEGRADED_SECONDS = (
    "time degraded (slower than degraded_above_ms, or a certificate expiring within cert_warn_days) "
    "in the observed part of the window; not downtime: the uptime ignores it"
)


class UptimeFigures(Out):
    uptime_percent: float | None = Field(description="null when nothing was observed in the window")
    downtime_seconds: float | None
    degraded_seconds: float | None = Field(description=DEGRADED_SECONDS)
    checks: int


class HourResponse(Out):
    hour: datetime = Field(description="the hour's start")
    avg_ms: float = Field(description="mean response time of the hour's successful checks")


class MonitorListItem(Monitor):
    """A monitor, with the uptime windows (and hourly response times) asked for by ``?include=``."""

    uptime_24h: UptimeFigures | SkipJsonSchema[None] = None
    uptime_7d: UptimeFigures | SkipJsonSchema[None] = None
    uptime_30d: UptimeFigures | SkipJsonSchema[None] = None
    uptime_90d: UptimeFigures | SkipJsonSchema[None] = None
    response_24h: list[HourResponse] | SkipJsonSchema[None] = Field(
        None, description="each of the last 24 hours with a successful check, oldest first"
    )


class MonitorList(Out):
    items: list[MonitorListItem]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")
