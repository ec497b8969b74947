"""Hourly rollups: aggregation, merging and percentiles from the fixed histogram."""

from datetime import UTC, datetime, timedelta

import pytest

from monitor import rollups

T = datetime(2026, 1, 1, 10, 17, tzinfo=UTC)


def test_aggregate_by_monitor_and_hour() -> None:
    rows = [
        (1, T, True, 12.0),
        (1, T, False, None),
        (2, T, True, 700.0),
        (1, T + timedelta(hours=1), True, 3.0),
    ]
    out = rollups.aggregate(rows)
    first = out[(1, T.replace(minute=0))]
    assert (first.checks, first.checks_up, first.latency_n, first.latency_sum, first.latency_max) == (
        2,
        1,
        1,
        12.0,
        12.0,
    )
    assert sum(first.hist) == 1 and first.hist[rollups.bucket_of(12.0)] == 1
    assert set(out) == {
        (1, T.replace(minute=0)),
        (2, T.replace(minute=0)),
        (1, T.replace(minute=0) + timedelta(hours=1)),
    }


def test_merge_adds_histograms() -> None:
    a, b = rollups.Rollup(), rollups.Rollup()
    a.add(True, 4.0)
    b.add(False, 40.0)
    a.merge(b)
    assert (a.checks, a.checks_up, a.latency_n, a.latency_max) == (2, 1, 2, 40.0)
    assert sum(a.hist) == 2


@pytest.mark.parametrize(
    ("latencies", "q", "low", "high"),
    [
        ([1.0] * 100, 0.5, 0.0, 5.0),  # all in the first bucket
        ([30.0] * 50 + [120.0] * 50, 0.5, 25.0, 50.0),  # the 50th sits in the 25-50 ms bucket
        ([30.0] * 50 + [120.0] * 50, 0.95, 100.0, 150.0),
        ([60000.0], 0.5, 30000.0, 60000.0),  # the open bucket is capped by the max seen
    ],
)
def test_percentile_lies_in_the_right_bucket(
    latencies: list[float], q: float, low: float, high: float
) -> None:
    r = rollups.Rollup()
    for value in latencies:
        r.add(True, value)
    value = rollups.percentile(r.hist, q, r.latency_max)
    assert value is not None and low <= value <= high


def test_percentile_of_nothing() -> None:
    assert rollups.percentile([0] * rollups.N_BUCKETS, 0.5, None) is None
