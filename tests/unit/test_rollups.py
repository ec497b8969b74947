"""Hourly rollups: aggregation, merging and percentiles from the fixed histogram."""

import pytest

from monitor import rollups


def test_add_counts_every_check_and_the_latencies_of_successful_ones() -> None:
    r = rollups.Rollup()
    r.add(True, 12.0)
    r.add(False, None)
    r.add(False, 0.4)  # a refused connection: how long it took to fail, not a response time
    assert (r.checks, r.checks_up, r.latency_n, r.latency_sum, r.latency_max) == (3, 1, 1, 12.0, 12.0)
    assert sum(r.hist) == 1 and r.hist[rollups.bucket_of(12.0)] == 1


def test_merge_adds_histograms() -> None:
    a, b = rollups.Rollup(), rollups.Rollup()
    a.add(True, 4.0)
    b.add(True, 40.0)
    b.add(False, 900.0)
    a.merge(b)
    assert (a.checks, a.checks_up, a.latency_n, a.latency_max) == (3, 2, 2, 40.0)
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
