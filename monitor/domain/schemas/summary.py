"""What the account at a glance looks like (``domain/summary.py`` builds it)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from monitor.domain.schemas.common import Out
from monitor.domain.schemas.maintenance import SummaryMaintenance


class ByStatus(Out):
    up: int
    degraded: int
    down: int
    paused: int
    unknown: int


class DownMonitor(Out):
    id: int
    name: str
    url: str
    since: datetime | None
    error: str | None
    status_code: int | None


class Summary(Out):
    monitors: int
    by_status: ByStatus
    down: list[DownMonitor] = Field(description="longest down first, at most 100")
    maintenance: SummaryMaintenance = Field(description="windows open now, and the next to open")
