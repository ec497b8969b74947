"""The pure parts of a monitor's page: the stacked timing breakdown of a bucket of raw checks
(``domain/charts.py``), the range at a glance and the no-JavaScript line (``pages_monitor``)."""

from __future__ import annotations

import pytest

from monitor.dashboard.pages_monitor import SPARK_HEIGHT, spark, summary
from monitor.domain.charts import PHASES, _phases, range_of
from monitor.domain.errors import DomainError


def bucket(**values: float | int | None) -> dict[str, float | int | None]:
    row: dict[str, float | int | None] = {
        "timed": 3, "timed_ms": 200.0, "ttfb": 80.0,
        "avg_dns_ms": 5.0, "avg_connect_ms": 10.0, "avg_tls_ms": 20.0,
    }  # fmt: skip
    # The phases by their short names here (dns=, connect=, tls=): the query's avg_*_ms columns.
    row.update({f"avg_{k}_ms" if k in ("dns", "connect", "tls") else k: v for k, v in values.items()})
    return row


@pytest.mark.parametrize(
    ("name", "row", "expected"),
    [
        (
            "https",
            bucket(),
            {"dns_ms": 5.0, "connect_ms": 10.0, "tls_ms": 20.0, "wait_ms": 45.0, "transfer_ms": 120.0},
        ),
        ("plain http", bucket(tls=0.0), {"tls_ms": 0.0, "wait_ms": 65.0, "transfer_ms": 120.0}),
        # tcp without expect: its first byte is its connect (the SQL falls back to the phases)
        ("tcp", bucket(dns=0.0, tls=0.0, ttfb=10.0, timed_ms=10.0), {"wait_ms": 0.0, "transfer_ms": 0.0}),
        # a redirect's first hop is in the latency only: never a negative part
        ("ttfb before the phases", bucket(ttfb=20.0, timed_ms=30.0), {"wait_ms": 0.0, "transfer_ms": 0.0}),
    ],
)
def test_the_breakdown_adds_up_to_the_latency(name: str, row: dict, expected: dict) -> None:
    got = _phases(row)
    assert got is not None and list(got) == list(PHASES)
    assert {k: got[k] for k in expected} == pytest.approx(expected), name
    if row["ttfb"] >= row["avg_dns_ms"] + row["avg_connect_ms"] + row["avg_tls_ms"]:
        assert sum(got.values()) == pytest.approx(max(row["timed_ms"], row["ttfb"]))


def test_no_breakdown_without_timed_checks() -> None:
    assert _phases(bucket(timed=0)) is None


def test_ranges() -> None:
    assert range_of(None)[0] == "24h" and range_of("90d")[1].rollup_bucket == "1d"
    assert range_of("1h")[1].raw and not range_of("7d")[1].raw
    with pytest.raises(DomainError) as refused:
        range_of("1y")
    assert refused.value.status == 400 and refused.value.field == "range"


def test_glance_weighs_each_bucket_by_its_successful_checks() -> None:
    items = [
        {"checks": 10, "up_share": 1.0, "min_ms": 90.0, "avg_ms": 100.0, "p95_ms": 150.0, "max_ms": 160.0},
        {"checks": 10, "up_share": 0.5, "min_ms": 180.0, "avg_ms": 200.0, "p95_ms": 300.0, "max_ms": 310.0},
        {"checks": 2, "up_share": 0.0, "min_ms": None, "avg_ms": None, "p95_ms": None, "max_ms": None},
    ]
    got = summary(items)
    assert got["checks"] == 22 and got["up_share"] == pytest.approx(15 / 22)
    assert got["avg_ms"] == pytest.approx((10 * 100 + 5 * 200) / 15)
    assert (got["min_ms"], got["p95_ms"], got["max_ms"]) == (90.0, 300.0, 310.0)
    assert summary([])["up_share"] is None


def test_the_line_shares_one_scale_and_skips_empty_buckets() -> None:
    items = [{"avg_ms": 0.0}, {"avg_ms": None}, {"avg_ms": 100.0}]
    points = spark(items, "avg_ms", 100.0).split()
    assert points == [f"0.0,{SPARK_HEIGHT - 1:.1f}", "600.0,1.0"]
    assert spark(items[:1], "avg_ms", 100.0) == "" and spark(items, "avg_ms", 0.0) == ""
