"""Raw check rows for dashboard tests, written straight to ``checks`` as the scheduler's writer
stores them (timings in their columns, ``details`` as JSONB), so a page's latest checks and
its short ranges' chart (read from raw checks) have figures to show."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import asyncpg

from monitor.models import CheckResult

TIMINGS = {"dns_ms": 5.0, "connect_ms": 10.0, "tls_ms": 20.0, "ttfb_ms": 80.0}


async def add_check(
    db: asyncpg.Connection,
    monitor_id: int,
    at: datetime,
    *,
    ok: bool = True,
    latency_ms: float | None = 100.0,
    status_code: int | None = 200,
    error: str | None = None,
    timings: Mapping[str, float | None] | None = None,
    details: dict[str, Any] | None = None,
    checked_from: str | None = None,
) -> None:
    """One check of ``monitor_id`` at ``at``; the timings default to ``TIMINGS``."""
    result = CheckResult(
        monitor_id, at, ok, status_code, latency_ms, error,
        timings=dict(TIMINGS if timings is None else timings), details=details,
    )  # fmt: skip
    row = list(result.row(error, None, checked_from))
    row[12] = details  # the connection's jsonb codec takes the value itself
    columns = ", ".join(CheckResult.COLUMNS)
    marks = ", ".join(f"${i}" for i in range(1, len(CheckResult.COLUMNS) + 1))
    await db.execute(f"INSERT INTO checks ({columns}) VALUES ({marks})", *row)
