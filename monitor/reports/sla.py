"""An SLA report's arithmetic, from per-monitor figures to a summary: pure, so every rule is
one table test (tests/unit/test_reports_sla.py).

A monitor's figures are read by the functions /uptime and /incidents answer from
(``domain/uptime.py``, ``domain/history.py``), so its row of a report is that monitor's answer.
Several monitors add up time-weighted: the counted seconds (observed time: the period up to
now, clipped to each monitor's life, without paused and maintenance time) and the downtime are
summed, and the uptime is ``1 - downtime / counted``; a monitor with no checks in the period
counts no time (its time is unknown). What is not counted is shown apart: maintenance, and
unknown time (before the monitor existed, paused, or without checks), so that
``counted + maintenance + unknown`` is the period's length per monitor.

- MTTR = downtime / incidents, MTBF = (counted - downtime) / incidents (none without incidents);
  incidents are those that overlap the period, as /incidents lists them.
- Response time p50 and p95 from the hourly rollups' histograms, added across monitors.
- Error budget for a target T (0 < T <= 100): allowed = (1 - T/100) * counted; left = allowed -
  downtime (seconds, negative when spent), and as a share of allowed (none when nothing is
  allowed: T = 100); breached when downtime exceeds what was allowed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from monitor import rollups
from monitor.reports.periods import Period


class TargetError(ValueError):
    field = "target"


def target(raw: str | None) -> float | None:
    """An SLA target in percent, 0 < T <= 100 (``99.9``); none given is none."""
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise TargetError("target: must be a number of percent, such as 99.9") from None
    if not math.isfinite(value) or not 0 < value <= 100:
        raise TargetError("target: must be more than 0 and at most 100 (percent, such as 99.9)")
    return value


@dataclass(frozen=True)
class MonitorFigures:
    """One monitor's figures over a period, as /uptime and /incidents give them."""

    monitor_id: int
    name: str
    period_seconds: float  # the period up to now
    counted_seconds: float  # what the uptime percentage is over (0: unknown)
    uptime_percent: float | None  # /uptime's
    downtime_seconds: float | None  # /uptime's
    maintenance_seconds: float  # /uptime's
    degraded_seconds: float | None  # /uptime's
    checks: int
    checks_up: int
    incidents: int  # those that overlap the period, as /incidents lists them
    hist: Sequence[int] = field(default_factory=lambda: [0] * rollups.N_BUCKETS)
    latency_max: float | None = None


@dataclass(frozen=True)
class Summary:
    period_seconds: float
    counted_seconds: float
    uptime_percent: float | None
    downtime_seconds: float
    maintenance_seconds: float
    unknown_seconds: float
    degraded_seconds: float
    checks: int
    checks_up: int
    incidents: int
    mttr_seconds: float | None
    mtbf_seconds: float | None
    p50_ms: float | None
    p95_ms: float | None
    target_percent: float | None
    breached: bool | None
    budget_seconds: float | None  # allowed downtime
    budget_left_seconds: float | None
    budget_left_percent: float | None


Budget = tuple[float | None, float | None, float | None, bool | None]


def budget(counted: float, down: float, target_percent: float | None) -> Budget:
    """(allowed, left, left as % of allowed, breached) for a target; all none without one."""
    if target_percent is None:
        return None, None, None, None
    allowed = (1.0 - target_percent / 100.0) * counted
    left = allowed - down
    share = 100.0 * left / allowed if allowed > 0 else None
    return allowed, left, share, down > allowed


def summarize(monitors: Sequence[MonitorFigures], target_percent: float | None = None) -> Summary:
    """The summary of ``monitors`` (one: that monitor's own figures)."""
    period = sum(m.period_seconds for m in monitors)
    counted = sum(m.counted_seconds for m in monitors)
    down = sum(m.downtime_seconds or 0.0 for m in monitors)
    if len(monitors) == 1:
        percent = monitors[0].uptime_percent  # /uptime's own figure, bit for bit
    else:
        percent = 100.0 * (1.0 - down / counted) if counted > 0 else None
    maintenance = sum(m.maintenance_seconds for m in monitors)
    incidents = sum(m.incidents for m in monitors)
    hist = [0] * rollups.N_BUCKETS
    for m in monitors:
        hist = [a + b for a, b in zip(hist, m.hist, strict=True)]
    highest = max((m.latency_max for m in monitors if m.latency_max is not None), default=None)
    allowed, left, share, breached = budget(counted, down, target_percent if percent is not None else None)
    return Summary(
        period_seconds=period,
        counted_seconds=counted,
        uptime_percent=percent,
        downtime_seconds=down,
        maintenance_seconds=maintenance,
        unknown_seconds=max(0.0, period - counted - maintenance),
        degraded_seconds=sum(m.degraded_seconds or 0.0 for m in monitors),
        checks=sum(m.checks for m in monitors),
        checks_up=sum(m.checks_up for m in monitors),
        incidents=incidents,
        mttr_seconds=down / incidents if incidents else None,
        mtbf_seconds=(counted - down) / incidents if incidents else None,
        p50_ms=rollups.percentile(hist, 0.50, highest),
        p95_ms=rollups.percentile(hist, 0.95, highest),
        target_percent=target_percent,
        breached=breached,
        budget_seconds=allowed,
        budget_left_seconds=left,
        budget_left_percent=share,
    )


@dataclass(frozen=True)
class Report:
    """A report as the faces write it out (``documents``), read by ``domain/reports.py``."""

    scope: str
    subject: str  # the monitor's or page's name, the tag, the account's name
    subject_id: int | None
    period: Period
    now: datetime
    total: Summary
    monitors: list[tuple[MonitorFigures, Summary]]
    incidents: list[dict[str, Any]]  # /incidents' items, with the monitor's name and their downtime here
    incidents_listed_all: bool
