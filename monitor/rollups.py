"""Hourly and daily rollups of check results, with a fixed latency histogram per row.

The histogram's buckets are the same for every row, so the rows of many hours add up
to the histogram of the whole span, and percentiles of any span come from it. The
scheduler's batch statement (``writer.WRITE_BATCH``) adds each batch's new rows to them
in the database (:func:`upsert_from`); :class:`Rollup` and :func:`percentile` read them.

Every check is counted (``checks``, ``checks_up``), but the latency columns (``latency_n``,
``latency_sum``, ``latency_max``, ``latency_hist``) hold successful checks only: a failed
check's duration is how long it took to fail (a refused connection in 0.3 ms, a timeout in
its full 10 s), not a response time, and counted in it made a site that never answered show
"4 ms" and an average below its own median. Rows written before sql/018 counted every check;
018 corrected those it could (see there).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

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
        if ok and latency_ms is not None:
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


def histogram(column: str, where: str = "") -> str:
    """SQL: the fixed latency histogram of ``column`` over a group (of its rows where ``where``
    holds, when given), as int[] (bucket i holds BUCKETS_MS[i-1] < latency <= BUCKETS_MS[i], as
    :func:`bucket_of`; NULLs count nowhere)."""
    edges = [None, *BUCKETS_MS, None]
    counts = []
    for low, high in itertools.pairwise(edges):
        terms = [where or None, f"{column} > {low:g}" if low is not None else None]
        terms.append(f"{column} <= {high:g}" if high is not None else None)
        counts.append(f"count(*) FILTER (WHERE {' AND '.join(t for t in terms if t)})")
    return f"ARRAY[{', '.join(counts)}]::integer[]"


def upsert_from(source: str, table: str, key: str, width: str) -> str:
    """SQL: add the rows of ``source`` (monitor_id, time, ok, latency_ms), grouped per monitor
    and UTC ``width`` bucket, to the rollup ``table`` keyed by ``key``: every row to the counts,
    the successful ones' latencies to the latency columns. One statement per batch; a (monitor,
    period) appears once in it, as ON CONFLICT DO UPDATE requires."""
    return f"""INSERT INTO {table} AS h
        (monitor_id, {key}, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
    SELECT monitor_id, date_bin('{width}', time, 'epoch'::timestamptz), count(*),
           count(*) FILTER (WHERE ok), count(latency_ms) FILTER (WHERE ok),
           coalesce(sum(latency_ms) FILTER (WHERE ok), 0), max(latency_ms) FILTER (WHERE ok),
           {histogram("latency_ms", "ok")}
    FROM {source} GROUP BY 1, 2
    ON CONFLICT (monitor_id, {key}) DO UPDATE SET
        checks = h.checks + excluded.checks,
        checks_up = h.checks_up + excluded.checks_up,
        latency_n = h.latency_n + excluded.latency_n,
        latency_sum = h.latency_sum + excluded.latency_sum,
        latency_max = greatest(h.latency_max, excluded.latency_max),
        latency_hist = (SELECT array_agg(a + b ORDER BY i)
                        FROM unnest(h.latency_hist, excluded.latency_hist) WITH ORDINALITY AS t(a, b, i))"""


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
