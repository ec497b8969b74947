"""What the answers about a monitor's past look like: its checks (each type's ``details``
documented from its ``Details`` model, ``monitor/checks/``), incidents, uptime over one window
or several, and response-time statistics (``domain/history.py`` builds them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from monitor.checks import REGISTRY as CHECKS
from monitor.domain.schemas.common import Out
from monitor.domain.schemas.monitor_answers import DEGRADED_SECONDS


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


class Timings(Out):
    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    ttfb_ms: float | None


class Check(Out):
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


class CheckList(Out):
    items: list[Check] = Field(description="newest first")
    next_cursor: str | None


class Incident(Out):
    id: int
    monitor_id: int
    started_at: datetime
    ended_at: datetime | None
    ongoing: bool
    duration_seconds: float = Field(description="so far, for an ongoing incident")
    status_code: int | None
    error: str | None
    acknowledged_at: datetime | None = Field(
        description="when someone acknowledged it (its reminders stopped); null: not acknowledged"
    )
    acknowledged_by: str | None = Field(
        description="who did: their display name (else e-mail) as it was then, `API key #<id>` for a "
        "key no person made, `the operator` for the command line"
    )
    acknowledged_note: str | None = Field(description="the note they left (at most 280 characters)")


class IncidentList(Out):
    items: list[Incident] = Field(description="newest first")
    next_cursor: str | None


class LocationUptime(Out):
    """One location's uptime over a window: downtime from its own confirmed outages."""

    uptime_percent: float | None = Field(description="null when this location checked nothing in the window")
    downtime_seconds: float | None
    checks: int = Field(
        description="this location's checks in the window (raw checks: those within MONITOR_RETENTION_DAYS)"
    )
    checks_up: int


class Uptime(Out):
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


class UptimeWindows(Out):
    """The answer to several windows at once (``?window=24h,7d``), keyed by window."""

    monitor_id: int
    windows: dict[str, Uptime]


class StatsPoint(Out):
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


class Stats(Out):
    model_config = ConfigDict(populate_by_name=True)

    monitor_id: int
    bucket: Literal["1h", "1d"]
    from_: datetime = Field(alias="from")
    to: datetime
    items: list[StatsPoint] = Field(description="oldest first; buckets without checks are left out")
