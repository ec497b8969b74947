"""Hourly rollups of check results, with a fixed latency histogram per row.

The histogram's buckets are the same for every row, so the rows of many hours add up
to the histogram of the whole span, and percentiles of any span come from it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import asyncpg

# Upper bounds (ms) of the latency buckets; one more bucket holds everything above.
BUCKETS_MS: tuple[float, ...] = (
    5, 10, 25, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000,
)  # fmt: skip
N_BUCKETS = len(BUCKETS_MS) + 1


def bucket_of(latency_ms: float) -> int:
    return bisect.bisect_left(BUCKETS_MS, latency_ms)


@dataclass
class Rollup:
    checks: int = 0
    checks_up: int = 0
    latency_n: int = 0
    latency_sum: float = 0.0
    latency_max: float | None = None
    hist: list[int] = field(default_factory=lambda: [0] * N_BUCKETS)

    def add(self, ok: bool, latency_ms: float | None) -> None:
        self.checks += 1
        self.checks_up += ok
        if latency_ms is not None:
            self.latency_n += 1
            self.latency_sum += latency_ms
            self.latency_max = latency_ms if self.latency_max is None else max(self.latency_max, latency_ms)
            self.hist[bucket_of(latency_ms)] += 1

    def merge(self, other: Rollup) -> None:
        self.checks += other.checks
        self.checks_up += other.checks_up
        self.latency_n += other.latency_n
        self.latency_sum += other.latency_sum
        if other.latency_max is not None:
            self.latency_max = (
                other.latency_max if self.latency_max is None else max(self.latency_max, other.latency_max)
            )
        self.hist = [a + b for a, b in zip(self.hist, other.hist, strict=True)]


def hour_of(value: datetime) -> datetime:
    return value.replace(minute=0, second=0, microsecond=0)


def aggregate(rows: Iterable[tuple[int, datetime, bool, float | None]]) -> dict[tuple[int, datetime], Rollup]:
    """(monitor_id, time, ok, latency_ms) rows -> one rollup per (monitor, hour)."""
    out: dict[tuple[int, datetime], Rollup] = {}
    for monitor_id, at, ok, latency in rows:
        key = (monitor_id, hour_of(at))
        rollup = out.get(key)
        if rollup is None:
            rollup = out[key] = Rollup()
        rollup.add(ok, latency)
    return out


def percentile(hist: Sequence[int], q: float, latency_max: float | None) -> float | None:
    """The q-quantile (0..1) from a histogram, interpolated linearly inside its bucket."""
    total = sum(hist)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for index, count in enumerate(hist):
        if count and seen + count >= rank:
            low = BUCKETS_MS[index - 1] if index > 0 else 0.0
            high = BUCKETS_MS[index] if index < len(BUCKETS_MS) else (latency_max or low)
            value = low + (high - low) * ((rank - seen) / count)
            return min(value, latency_max) if latency_max is not None else value
        seen += count
    return latency_max


def _upsert_sql(table: str, key: str) -> str:
    # One statement per batch: the histograms travel flattened in one int[] and are cut back
    # into rows by ordinality, which costs far less than a statement per (monitor, period).
    return f"""
INSERT INTO {table} AS h
    (monitor_id, {key}, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
SELECT u.monitor_id, u.period, u.checks, u.checks_up, u.latency_n, u.latency_sum, u.latency_max,
       ($8::int[])[(u.i - 1) * {N_BUCKETS} + 1 : u.i * {N_BUCKETS}]
FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::int[], $5::int[], $6::float8[], $7::float8[])
     WITH ORDINALITY AS u(monitor_id, period, checks, checks_up, latency_n, latency_sum, latency_max, i)
ON CONFLICT (monitor_id, {key}) DO UPDATE SET
    checks = h.checks + excluded.checks,
    checks_up = h.checks_up + excluded.checks_up,
    latency_n = h.latency_n + excluded.latency_n,
    latency_sum = h.latency_sum + excluded.latency_sum,
    latency_max = greatest(h.latency_max, excluded.latency_max),
    latency_hist = (SELECT array_agg(a + b ORDER BY i)
                    FROM unnest(h.latency_hist, excluded.latency_hist) WITH ORDINALITY AS t(a, b, i))
"""


# Days rebuilt from hours (after loading hourly rows directly: fixtures, benchmarks, backfills).
DAILY_FROM_HOURLY = f"""
INSERT INTO checks_daily
    (monitor_id, day, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
SELECT monitor_id, date_bin('1 day', hour, 'epoch'::timestamptz), sum(checks), sum(checks_up),
       sum(latency_n), sum(latency_sum), max(latency_max),
       ARRAY[{", ".join(f"sum(latency_hist[{i}])" for i in range(1, N_BUCKETS + 1))}]::integer[]
FROM checks_hourly WHERE monitor_id = ANY($1::bigint[]) GROUP BY 1, 2
ON CONFLICT (monitor_id, day) DO UPDATE SET
    checks = excluded.checks, checks_up = excluded.checks_up, latency_n = excluded.latency_n,
    latency_sum = excluded.latency_sum, latency_max = excluded.latency_max,
    latency_hist = excluded.latency_hist
"""
UPSERT_HOURLY = _upsert_sql("checks_hourly", "hour")
UPSERT_DAILY = _upsert_sql("checks_daily", "day")


def day_of(value: datetime) -> datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def by_day(hourly: dict[tuple[int, datetime], Rollup]) -> dict[tuple[int, datetime], Rollup]:
    """The hourly rollups of a batch, merged per (monitor, UTC day)."""
    out: dict[tuple[int, datetime], Rollup] = {}
    for (monitor_id, hour), rollup in hourly.items():
        key = (monitor_id, day_of(hour))
        if key in out:
            out[key].merge(rollup)
        else:
            out[key] = Rollup(
                rollup.checks, rollup.checks_up, rollup.latency_n, rollup.latency_sum, rollup.latency_max,
                list(rollup.hist),
            )  # fmt: skip
    return out


async def _upsert(conn: asyncpg.Connection, sql: str, rollups: dict[tuple[int, datetime], Rollup]) -> None:
    items = list(rollups.items())
    await conn.execute(
        sql,
        [mid for (mid, _), _ in items],
        [period for (_, period), _ in items],
        [r.checks for _, r in items],
        [r.checks_up for _, r in items],
        [r.latency_n for _, r in items],
        [r.latency_sum for _, r in items],
        [r.latency_max for _, r in items],
        [count for _, r in items for count in r.hist],
    )


async def upsert(conn: asyncpg.Connection, rollups: dict[tuple[int, datetime], Rollup]) -> None:
    """Add a batch's hourly rollups to checks_hourly, and their days to checks_daily."""
    if not rollups:
        return
    await _upsert(conn, UPSERT_HOURLY, rollups)
    await _upsert(conn, UPSERT_DAILY, by_day(rollups))
