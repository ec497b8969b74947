"""SLA reports' pure parts: periods in a time zone (a month across a DST change), the target,
and the arithmetic of the summary (time-weighted uptime, MTTR, MTBF, the error budget)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from monitor import rollups
from monitor.reports import documents, periods, sla

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def at(*parts: int) -> datetime:
    return datetime(*parts).replace(tzinfo=UTC)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "tz", "label", "start", "end", "hours"),
    [
        ({"month_raw": "2026-10"}, BERLIN, "2026-10", at(2026, 9, 30, 22), at(2026, 10, 31, 23), 745),
        ({"month_raw": "2026-03"}, BERLIN, "2026-03", at(2026, 2, 28, 23), at(2026, 3, 31, 22), 743),
        ({"month_raw": "2026-11"}, BERLIN, "2026-11", at(2026, 10, 31, 23), at(2026, 11, 30, 23), 720),
        ({"month_raw": "2026-12"}, ZoneInfo("UTC"), "2026-12", at(2026, 12, 1), at(2027, 1, 1), 744),
        ({"quarter_raw": "2026-Q4"}, BERLIN, "2026-Q4", at(2026, 9, 30, 22), at(2026, 12, 31, 23), 2209),
        ({"quarter_raw": "2026-q1"}, ZoneInfo("UTC"), "2026-Q1", at(2026, 1, 1), at(2026, 4, 1), 2160),
        ({"start_raw": "2026-10-25", "end_raw": "2026-10-26"}, BERLIN, None,
         at(2026, 10, 24, 22), at(2026, 10, 25, 23), 25),
        ({"start_raw": "2026-10-01T00:00:00Z", "end_raw": "2026-10-01T06:00:00+02:00"}, BERLIN, None,
         at(2026, 10, 1), at(2026, 10, 1, 4), 4),
        ({}, BERLIN, "2026-11", at(2026, 10, 31, 23), at(2026, 11, 30, 23), 720),
    ],
)  # fmt: skip
def test_periods(
    kwargs: dict[str, str], tz: ZoneInfo, label: str | None, start: datetime, end: datetime, hours: float
) -> None:
    period = periods.choose(tz, NOW, **kwargs)
    assert (period.start, period.end) == (start, end)
    assert period.hours == hours
    assert period.timezone == tz.key
    if label is not None:
        assert period.label == label


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"month_raw": "2026-13"}, "month"),
        ({"month_raw": "October"}, "month"),
        ({"quarter_raw": "2026-Q5"}, "quarter"),
        ({"month_raw": "2026-10", "quarter_raw": "2026-Q4"}, "quarter"),
        ({"month_raw": "2026-10", "start_raw": "2026-10-01"}, "from"),
        ({"start_raw": "2026-10-02", "end_raw": "2026-10-01"}, "to"),
        ({"start_raw": "2026-10-01", "end_raw": "2026-10-01"}, "to"),
        ({"start_raw": "2026-10-01"}, "to"),
        ({"end_raw": "2026-10-01"}, "from"),
        ({"start_raw": "yesterday", "end_raw": "2026-10-01"}, "from"),
        ({"start_raw": "2020-01-01", "end_raw": "2026-10-01"}, "to"),
        ({"month_raw": "0999-01"}, "month"),
    ],
)
def test_bad_periods_name_the_field(kwargs: dict[str, str], field: str) -> None:
    with pytest.raises(periods.PeriodError) as caught:
        periods.choose(BERLIN, NOW, **kwargs)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("raw", "value"), [(None, None), ("", None), ("99.9", 99.9), ("100", 100.0), ("0.001", 0.001)]
)
def test_target(raw: str | None, value: float | None) -> None:
    assert sla.target(raw) == value


@pytest.mark.parametrize("raw", ["0", "-1", "100.0001", "nan", "inf", "abc", "99,9"])
def test_a_target_outside_0_100_is_refused(raw: str) -> None:
    with pytest.raises(sla.TargetError, match=r"^target: "):
        sla.target(raw)


def figures(
    mid: int, counted: float, down: float | None, incidents: int = 0, **extra: object
) -> sla.MonitorFigures:
    base: dict[str, object] = dict(
        monitor_id=mid, name=f"m{mid}", period_seconds=1000.0, counted_seconds=counted,
        uptime_percent=None if down is None else 100.0 * (1 - down / counted), downtime_seconds=down,
        maintenance_seconds=0.0, degraded_seconds=None if down is None else 0.0,
        checks=0 if down is None else 10, checks_up=0, incidents=incidents,
    )  # fmt: skip
    base.update(extra)
    return sla.MonitorFigures(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("monitors", "target", "expected"),
    [
        # one monitor: its own figures; 1000 s counted, 10 s down in 2 incidents, 99 %: 10 s allowed
        ([figures(1, 1000, 10, 2)], 99.0,
         {"uptime_percent": 99.0, "mttr_seconds": 5.0, "mtbf_seconds": 495.0, "budget_seconds": 10.0,
          "budget_left_seconds": 0.0, "budget_left_percent": 0.0, "breached": False}),
        # time-weighted: 900 s and 100 s counted, 0 and 50 s down: 95 %, not the mean 75 %
        ([figures(1, 900, 0), figures(2, 100, 50, 1)], 99.9,
         {"uptime_percent": 95.0, "downtime_seconds": 50.0, "counted_seconds": 1000.0, "incidents": 1,
          "mttr_seconds": 50.0, "mtbf_seconds": 950.0, "breached": True}),
        # a monitor without checks counts no time: its period is unknown time
        ([figures(1, 1000, 0), figures(2, 0, None)], 99.9,
         {"uptime_percent": 100.0, "counted_seconds": 1000.0, "unknown_seconds": 1000.0, "breached": False,
          "mttr_seconds": None, "mtbf_seconds": None}),
        # nothing counted: no uptime, no budget
        ([figures(1, 0, None)], 99.9,
         {"uptime_percent": None, "budget_seconds": None, "breached": None, "unknown_seconds": 1000.0}),
        # no target: no budget
        ([figures(1, 1000, 10)], None,
         {"budget_seconds": None, "budget_left_seconds": None, "breached": None}),
        # target 100: nothing allowed, any downtime breaches, no share of nothing
        ([figures(1, 1000, 1)], 100.0,
         {"budget_seconds": 0.0, "budget_left_seconds": -1.0, "budget_left_percent": None, "breached": True}),
        # maintenance is apart: counted + maintenance + unknown = period
        ([figures(1, 700, 7, maintenance_seconds=200.0)], 99.0,
         {"maintenance_seconds": 200.0, "unknown_seconds": 100.0, "budget_seconds": 7.0, "breached": False}),
        ([], 99.9, {"uptime_percent": None, "counted_seconds": 0, "incidents": 0}),
    ],
)  # fmt: skip
def test_summary(
    monitors: list[sla.MonitorFigures], target: float | None, expected: dict[str, object]
) -> None:
    summary = sla.summarize(monitors, target)
    for name, value in expected.items():
        got = getattr(summary, name)
        assert got == (pytest.approx(value) if isinstance(value, float) else value), name


def test_response_times_add_the_histograms() -> None:
    fast, slow = [0] * rollups.N_BUCKETS, [0] * rollups.N_BUCKETS
    fast[2], slow[10] = 90, 10  # 90 checks in 10-25 ms, 10 in 300-500 ms
    summary = sla.summarize(
        [figures(1, 10, 0, hist=fast, latency_max=25.0), figures(2, 10, 0, hist=slow, latency_max=480.0)]
    )
    assert summary.p50_ms == rollups.percentile([a + b for a, b in zip(fast, slow, strict=True)], 0.5, 480.0)
    assert summary.p95_ms is not None and 300 < summary.p95_ms <= 480


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "n/a"), (0.4, "0 s"), (5400.0, "5400 s (1 h 30 min)"), (59.6, "60 s (1 min)"),
     (90061.0, "90061 s (1 d 1 h)"), (-61.0, "-61 s (-1 min 1 s)")],
)  # fmt: skip
def test_seconds_text(value: float | None, text: str) -> None:
    assert documents.seconds_text(value) == text
