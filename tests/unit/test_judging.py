"""The judging step's table: a result and what the scheduler knows of its monitor in, one judged
value out (``scheduler/judging.py``). Pure: no loop, no database, no clock."""

import ast
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from monitor.models import CheckResult, Failure, MonitorSpec, Policy
from monitor.scheduler import judging as judging_module
from monitor.scheduler.judging import Judged, Judging, conclude, cut_off, judge
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import Seen
from monitor.scheduler.state import NOTHING, UNKNOWN, State, Window

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WINDOW = Window(5, "Nightly", T + timedelta(hours=1))


def spec(**fields: Any) -> MonitorSpec:
    given: dict[str, Any] = {"policy": Policy(confirm_after=2)}
    given.update(fields)
    return MonitorSpec(1, "Site", "http", "https://site.example/", 60.0, 5.0, 2, False, **given)


class Calendar:
    def __init__(self, window: Window | None) -> None:
        self.window = window

    def window_at(
        self, monitor_id: int, tags: Any, at: datetime, account_id: int | None = None
    ) -> Window | None:
        return self.window


def failed(error: str | None = "status 500", **fields: Any) -> CheckResult:
    return CheckResult(1, T, ok=False, status_code=500, error=error, **fields)


def passed(**fields: Any) -> CheckResult:
    return CheckResult(1, T, ok=True, status_code=200, **{"latency_ms": 40.0, **fields})


@dataclass
class Row:
    result: CheckResult
    spec: MonitorSpec = field(default_factory=spec)
    # What the scheduler knows before it: states by monitor id, names, parents, the window.
    states: dict[int, State] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    window: Window | None = None
    # What comes out.
    status: str = "up"
    error: str | None = None
    changes: tuple[str, ...] = ()
    alerts: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)  # other fields of the state after it


ROUTER_DOWN = {2: State("down", 2, T - timedelta(minutes=5), told="down")}
CERT = {"certificate": {"not_after": "2026-03-04T00:00:00+00:00"}}

ROWS = [
    pytest.param(Row(passed()), id="first-success-is-no-news"),
    pytest.param(
        Row(failed(), status="unknown", error="status 500", state={"failures": 1}),
        id="first-failure-not-yet-confirmed",
    ),
    pytest.param(
        Row(
            failed(),
            states={1: State("up", 1, T - timedelta(minutes=1))},
            status="down",
            error="status 500",
            changes=("down",),
            alerts=("down",),
        ),
        id="second-failure-confirms-down",
    ),
    pytest.param(
        Row(passed(), states={1: State("up")}, status="up", state={"failures": 0}),
        id="quiet-success-stays-up",
    ),
    pytest.param(
        Row(
            failed("status 503"),
            spec=spec(depends_on=(2,)),
            names={2: "Router"},
            states={1: State("up", 1, T - timedelta(minutes=1)), **ROUTER_DOWN},
            status="down",
            error="depends on Router, which is down (status 503)",
            changes=("down",),
        ),
        id="failure-blamed-on-a-parent-down-is-held",
    ),
    pytest.param(
        Row(
            failed(error=None),
            spec=spec(depends_on=(2,)),
            states={2: State("up", 1, T)},
            status="unknown",
            error="depends on monitor 2, which is failing (check failed)",
        ),
        id="failure-blamed-on-a-parent-failing-unnamed",
    ),
    pytest.param(
        Row(passed(), spec=spec(depends_on=(2,)), names={2: "Router"}, states=ROUTER_DOWN),
        id="success-under-a-parent-down-blames-nobody",
    ),
    pytest.param(
        Row(
            passed(latency_ms=900.0),
            spec=spec(degraded_above_ms=500.0),
            states={1: State("up")},
            state={"slow": 1},
        ),
        id="slow-success-starts-a-degraded-streak",
    ),
    pytest.param(
        Row(
            passed(details=CERT),
            states={1: State("up")},
            state={"cert_not_after": datetime(2026, 3, 4, tzinfo=UTC), "slow": 1},
        ),
        id="certificate-near-expiry-is-kept-and-weighs",
    ),
    pytest.param(
        Row(
            failed(),
            states={1: State("up", 1, T - timedelta(minutes=1))},
            window=WINDOW,
            status="down",
            error="status 500",
            changes=("down",),
            state={"window": WINDOW},
        ),
        id="down-in-a-window-is-held",
    ),
    pytest.param(
        Row(
            failed("blocked: 10.0.0.5 (private address)", failure=Failure.REFUSED),
            status="unknown",
            error="blocked: 10.0.0.5 (private address)",
            state={"failures": 1},
        ),
        id="refused-target-fails-as-any-other",
    ),
    pytest.param(
        Row(
            passed(details={"degraded": "lcp_ms 3100 > 2500"}),
            states={1: State("up")},
            state={"slow": 1},
        ),
        id="success-the-check-calls-degraded-starts-a-degraded-streak",
    ),
    pytest.param(
        Row(passed(details={"degraded": ""}), states={1: State("up")}, state={"slow": 0}),
        id="empty-degraded-reason-is-no-reason",
    ),
    pytest.param(
        Row(passed(details={"degraded": True}), states={1: State("up")}, state={"slow": 0}),
        id="degraded-not-a-string-is-no-reason",
    ),
]


@pytest.mark.parametrize("row", ROWS)
def test_judge(row: Row) -> None:
    judging = Judging(
        sink=lambda *_: None, metrics=SchedulerMetrics(), calendar=Calendar(row.window),
        states=dict(row.states), names=dict(row.names),
    )  # fmt: skip
    before = (row.result.error, row.result.lateness_ms, row.result.checked_from)
    judged = judge(row.spec, row.result, T, judging, 12.5, "eu")
    assert judged.state.status == row.status
    assert judged.error == row.error
    assert tuple(c.kind for c in judged.outcome.changes) == row.changes
    assert tuple(a.kind for a in judged.outcome.alerts) == row.alerts
    for name, value in row.state.items():
        assert getattr(judged.state, name) == value, name
    assert (judged.lateness_ms, judged.checked_from, judged.located) == (12.5, "eu", None)
    # Nothing rewrites the check's result, nor what the scheduler knows (settle keeps it).
    assert (row.result.error, row.result.lateness_ms, row.result.checked_from) == before
    assert judging.states == row.states


def located_judging(**fields: Any) -> Judging:
    return Judging(sink=lambda *_: None, metrics=SchedulerMetrics(), location="eu", **fields)


EU_US = spec(locations=("eu", "us"), quorum=2)


def test_a_secondary_keeps_its_location_and_leaves_the_overall_state() -> None:
    judging = located_judging(states={1: State("up")}, secondary={1})
    judged = judge(EU_US, failed(), T, judging)
    assert judged.state == State("up") and judged.outcome is NOTHING
    assert judged.located is not None and not judged.located.primary
    assert judged.located.state.failures == 1 and judged.error == "status 500"


def test_a_primary_goes_down_by_the_quorum_and_tells_its_cause() -> None:
    us = Seen("down", T - timedelta(minutes=2), "us: status 502", checked_at=T)
    judging = located_judging(
        states={1: State("up")}, local={1: (State("up", 1, T - timedelta(minutes=1)), Seen("up"))},
        remote={1: {"us": us}}, live_locations=frozenset({"eu", "us"}),
    )  # fmt: skip
    result = failed()
    judged = judge(EU_US, result, T, judging, 3.0, "eu")
    assert judged.state.status == "down" and [c.kind for c in judged.changes] == ["down"]
    assert judged.located is not None and judged.located.cause is not None
    told = judged.told(result)
    assert (told.error, told.status_code, told.lateness_ms) == (judged.located.cause, 500, 3.0)
    assert result.error == "status 500"  # the told copy is a copy


def test_cut_off_makes_the_result_unknown_and_restarts_the_streak() -> None:
    judging = Judging(sink=lambda *_: None, metrics=SchedulerMetrics(), states={1: State("up", 1, T)})
    judged = judge(spec(), failed(), T, judging)
    assert [c.kind for c in judged.changes] == ["down"]
    unknown = cut_off(spec(), judged, "2 of 2 reference targets failed", judging)
    assert unknown.error == "unknown: the checker's network is down (2 of 2 reference targets failed)"
    assert unknown.state == State("up") and unknown.outcome is NOTHING


def test_told_is_the_result_as_stored() -> None:
    result = failed()
    told = Judged(
        State("down"), NOTHING, "depends on Router, which is down (status 500)", None, 1.0, "us"
    ).told(result)
    assert (told.error, told.lateness_ms, told.checked_from, told.status_code) == (
        "depends on Router, which is down (status 500)", 1.0, "us", 500,
    )  # fmt: skip
    assert result.error == "status 500"


@pytest.mark.parametrize(
    ("result", "counted"),
    [
        pytest.param(passed(), "up", id="ok"),
        pytest.param(failed(), "down", id="failed"),
        pytest.param(failed("blocked: x", failure=Failure.REFUSED), "blocked", id="refused-by-policy"),
        pytest.param(
            failed("invalid target: x", failure=Failure.INVALID_TARGET), "down", id="invalid-target"
        ),
        pytest.param(failed("not run: x", failure=Failure.NOT_RUN), "not_run", id="not-run"),
    ],
)
def test_conclude_counts_keeps_and_hands_over(result: CheckResult, counted: str) -> None:
    handed: list[tuple[CheckResult, Judged]] = []
    metrics = SchedulerMetrics()
    judging = Judging(sink=lambda _spec, got, judged: handed.append((got, judged)), metrics=metrics)
    assert conclude(spec(), result, T, judging) is None  # no guard: handed over at once
    assert [got for got, _ in handed] == [result]
    assert judging.states[1] == handed[0][1].state
    counts = {k: metrics.checks._counts[k] for k in ("up", "down", "blocked", "not_run")}
    assert counts == {k: 1 if k == counted else 0 for k in counts}


NOT_RUN = CheckResult(1, T, ok=False, error="not run: no worker took it within 63 s", failure=Failure.NOT_RUN)
STREAK = State("up", 1, T - timedelta(minutes=1))
DOWN = State("down", 3, T - timedelta(minutes=10), told="down")
SLOW = State("degraded", 0, None, slow=2, slow_since=T - timedelta(minutes=10))


@pytest.mark.parametrize(
    ("before", "located"),
    [
        pytest.param(None, False, id="never-checked-stays-unknown"),
        pytest.param(State("up"), False, id="up-stays-up"),
        pytest.param(STREAK, False, id="a-failing-streak-neither-steps-nor-restarts"),
        pytest.param(DOWN, False, id="down-stays-down-no-recovery"),
        pytest.param(SLOW, False, id="degraded-stays-degraded"),
        pytest.param(STREAK, True, id="located-keeps-this-locations-view"),
    ],
)
def test_a_check_not_run_is_written_and_judged_as_unknown(before: State | None, located: bool) -> None:
    handed: list[tuple[CheckResult, Judged]] = []
    states = {1: before} if before is not None else {}
    here = (State("up", 1, T - timedelta(minutes=1)), Seen("up"))
    judging = Judging(
        sink=lambda _spec, got, judged: handed.append((got, judged)), metrics=SchedulerMetrics(),
        states=dict(states), location="eu", local={1: here} if located else {},
        live_locations=frozenset({"eu", "us"}),
    )  # fmt: skip
    monitor = spec(locations=("eu", "us"), quorum=1) if located else spec()
    assert conclude(monitor, NOT_RUN, T, judging, 0.0, 3.0, None) is None
    ((got, judged),) = handed  # written: no missing tick
    assert got is NOT_RUN and judged.error == NOT_RUN.error and judged.outcome is NOTHING
    assert judging.states.get(1, UNKNOWN) == (before or UNKNOWN)
    if located:
        assert judged.located is not None and judged.located.changes == ()
        assert judging.local[1] == here
    assert judging.metrics.checks._counts["not_run"] == 1


def test_judging_does_not_import_the_ticker() -> None:
    tree = ast.parse(Path(judging_module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "monitor.scheduler.ticker" not in imported
