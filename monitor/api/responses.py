"""Response schemas: what each endpoint answers, as pydantic models.

The handlers build plain dicts (the ``render`` functions of each module); these models
describe them for the OpenAPI document, and schemathesis checks live answers against
that document, so a handler that drifts from its model fails the tests. Every model
forbids extra fields, which makes an undocumented field a schema violation too.
"""

from __future__ import annotations

from copy import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from monitor.checks import REGISTRY as CHECKS
from monitor.domain.schemas.locations import LOCATIONS_DOC, QUORUM_DOC
from monitor.domain.schemas.maintenance import MonitorWindow, SummaryMaintenance


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Out):
    code: str = Field(description="machine-readable: invalid, invalid_json, not_found, unauthorized, ...")
    message: str
    # Only present when the error concerns one field of the request.
    field: str | SkipJsonSchema[None] = Field(None, description="the field or parameter at fault")


class Error(_Out):
    """Every 4xx and 5xx answer of the API."""

    error: ErrorBody


class Health(_Out):
    status: Literal["ok", "unavailable"]
    database: Literal["up", "down"] | SkipJsonSchema[None] = None


# -- monitors ----------------------------------------------------------------------------


class LastCheck(_Out):
    time: datetime
    ok: bool
    status_code: int | None
    latency_ms: float | None
    error: str | None


class LocationStatus(_Out):
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


class _MonitorBase(_Out):
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
            if name in _MonitorBase.model_fields or name in shown:
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


class UptimeFigures(_Out):
    uptime_percent: float | None = Field(description="null when nothing was observed in the window")
    downtime_seconds: float | None
    degraded_seconds: float | None = Field(description=DEGRADED_SECONDS)
    checks: int


class MonitorListItem(Monitor):
    """A monitor, with the uptime windows asked for by ``?include=``."""

    uptime_24h: UptimeFigures | SkipJsonSchema[None] = None
    uptime_7d: UptimeFigures | SkipJsonSchema[None] = None
    uptime_30d: UptimeFigures | SkipJsonSchema[None] = None
    uptime_90d: UptimeFigures | SkipJsonSchema[None] = None


class MonitorList(_Out):
    items: list[MonitorListItem]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


# -- history -----------------------------------------------------------------------------


def _keys(model: type[BaseModel]) -> str:
    """``"a" (what it is), "b" ("x", "y")``: a model's keys, each with its description, else
    the keys of the model it holds."""
    keys = []
    for name, info in model.model_fields.items():
        inner = next(
            (t for t in _args(info.annotation) if isinstance(t, type) and issubclass(t, BaseModel)), None
        )
        note = info.description or (_keys(inner) if inner is not None else "")
        keys.append(f'"{name}"' + (f" ({note})" if note else ""))
    return ", ".join(keys)


def _args(annotation: Any) -> list[Any]:
    args = get_args(annotation)
    return [annotation] if not args else [a for arg in args for a in _args(arg)]


def details_doc() -> str:
    """What ``details`` holds, by type: each type's ``Details`` model (``monitor/checks/``)."""
    types = []
    for check in sorted((CHECKS.get(kind) for kind in CHECKS.kinds), key=lambda c: not c.default):
        if check.Details is not None:
            note = (check.Details.__doc__ or "").strip()
            types.append(f"{check.kind}" + (f" ({note})" if note else "") + f": {_keys(check.Details)}")
    return "what the check saw beyond the common fields, by type (docs/check-types.md). " + ". ".join(types)


class Timings(_Out):
    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    ttfb_ms: float | None


class Check(_Out):
    time: datetime
    ok: bool
    status_code: int | None
    latency_ms: float | None
    error: str | None
    location: str | None = Field(description="the answer's Location header (where a redirect pointed)")
    checked_from: str | None = Field(
        None,
        description="the location of the scheduler that made the check (MONITOR_LOCATION); null: default",
    )
    timings: Timings
    details: dict[str, Any] | None = Field(description=details_doc())


class CheckList(_Out):
    items: list[Check] = Field(description="newest first")
    next_cursor: str | None


class Incident(_Out):
    id: int
    monitor_id: int
    started_at: datetime
    ended_at: datetime | None
    ongoing: bool
    duration_seconds: float = Field(description="so far, for an ongoing incident")
    status_code: int | None
    error: str | None


class IncidentList(_Out):
    items: list[Incident] = Field(description="newest first")
    next_cursor: str | None


class LocationUptime(_Out):
    """One location's uptime over a window: downtime from its own confirmed outages."""

    uptime_percent: float | None = Field(description="null when this location checked nothing in the window")
    downtime_seconds: float | None
    checks: int = Field(
        description="this location's checks in the window (raw checks: those within MONITOR_RETENTION_DAYS)"
    )
    checks_up: int


class Uptime(_Out):
    model_config = ConfigDict(populate_by_name=True)

    monitor_id: int
    from_: datetime = Field(alias="from", description="the start asked for")
    to: datetime = Field(description="the end asked for")
    observed_from: datetime = Field(
        description="the start the figures are computed from: `from`, or the monitor's creation if later"
    )
    observed_to: datetime = Field(
        description="the end the figures are computed to: `to`, or now if earlier (paused time "
        "between observed_from and observed_to is left out as well)"
    )
    uptime_percent: float | None = Field(description="null when nothing was observed in the window")
    downtime_seconds: float | None
    degraded_seconds: float | None = Field(description=DEGRADED_SECONDS)
    maintenance_seconds: float = Field(
        description="time in maintenance windows between observed_from and observed_to (paused time "
        "left out): left out of the uptime like paused time, so an outage inside a window is no downtime"
    )
    checks: int
    checks_up: int
    locations: dict[str, LocationUptime] | SkipJsonSchema[None] = Field(
        None,
        description="a monitor with locations: each one's uptime (the figures above are the quorum's "
        "verdict over all of them)",
    )


class UptimeWindows(_Out):
    """The answer to several windows at once (``?window=24h,7d``), keyed by window."""

    monitor_id: int
    windows: dict[str, Uptime]


class StatsPoint(_Out):
    """One bucket of ``/stats`` (named apart from the ``bucket`` size field, so that client
    generators that name inline enums ``<Model><Field>`` do not clash with it)."""

    start: datetime
    checks: int
    up_share: float | None = Field(description="0..1")
    avg_ms: float | None = Field(
        description="the successful checks' average latency (a failed check's duration is not a "
        "response time); null when none in the bucket succeeded"
    )
    p50_ms: float | None = Field(description="median latency of the successful checks, from a histogram")
    p95_ms: float | None = Field(description="95th percentile of the successful checks' latency")
    max_ms: float | None = Field(description="the slowest successful check")
    degraded_seconds: float = Field(description="time degraded within the bucket (see uptime)")


class Stats(_Out):
    model_config = ConfigDict(populate_by_name=True)

    monitor_id: int
    bucket: Literal["1h", "1d"]
    from_: datetime = Field(alias="from")
    to: datetime
    items: list[StatsPoint] = Field(description="oldest first; buckets without checks are left out")


# -- account -----------------------------------------------------------------------------


class ByStatus(_Out):
    up: int
    degraded: int
    down: int
    paused: int
    unknown: int


class DownMonitor(_Out):
    id: int
    name: str
    url: str
    since: datetime | None
    error: str | None
    status_code: int | None


class Summary(_Out):
    monitors: int
    by_status: ByStatus
    down: list[DownMonitor] = Field(description="longest down first, at most 100")
    maintenance: SummaryMaintenance = Field(description="windows open now, and the next to open")
