"""The timers at maintenance windows' edges (monitor/scheduler/edges.py) on the event loop: a
window's notices and its held down at its start and end instants, whatever the monitors'
intervals; only the monitors it covers and this scheduler runs as primary; nothing while the
lease does not hold; ``sweep`` for a monitor whose stored window is stale; a check judged after
an edge reads its window no earlier than the edge."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from support import wait_for

from monitor.aio import Slots
from monitor.checks import CheckContext
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler.calendar import Calendar
from monitor.scheduler.edges import Edges
from monitor.scheduler.judging import Judging, judge
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.state import Outcome, State, Window
from monitor.scheduler.ticker import TickerShared

LEAD = 0.3  # seconds from now to the window's start
LENGTH = 0.4  # the window's length
TOLERANCE = 0.15  # how late an edge may be stepped on a test machine


@dataclass
class Ticker:
    spec: MonitorSpec


@dataclass
class Sink:
    """What the edges handed to the writer: (monitor id, alert kinds, wall time, edge instant)."""

    seen: list[tuple[int, list[str], float, datetime]] = field(default_factory=list)

    def __call__(self, spec: MonitorSpec, state: State, outcome: Outcome, at: datetime) -> None:
        self.seen.append((spec.id, [a.kind for a in outcome.alerts], time.time(), at))

    def kinds(self, monitor_id: int) -> list[str]:
        return [k for m, kinds, _, _ in self.seen if m == monitor_id for k in kinds]


def spec(monitor_id: int, tags: tuple[str, ...] = (), **fields: Any) -> MonitorSpec:
    return MonitorSpec(
        id=monitor_id, name=f"m{monitor_id}", type="http", url="http://127.0.0.1:9/", interval_seconds=60.0,
        timeout_seconds=5.0, confirm_after=1,
        paused=False, tags=tags, account_id=1, **fields,
    )  # fmt: skip


def window(start: datetime, end: datetime, **fields: Any) -> dict[str, Any]:
    return {"id": 1, "account_id": 1, "name": "Deploy", "kind": "once", "starts_at": start, "ends_at": end,
            "monitor_ids": [], "tags": [], "notify": True, **fields}  # fmt: skip


@dataclass
class World:
    shared: TickerShared
    calendar: Calendar
    running: dict[int, Ticker]
    sink: Sink
    edges: Edges
    start: datetime
    end: datetime


@pytest.fixture
async def world() -> AsyncIterator[World]:
    calendar = Calendar()
    metrics = SchedulerMetrics()
    judging = Judging(sink=lambda *_: None, metrics=metrics, calendar=calendar)
    shared = TickerShared(ctx=cast(CheckContext, None), metrics=metrics, limit=Slots(10), judging=judging)
    running: dict[int, Ticker] = {}
    sink = Sink()
    edges = Edges(calendar, shared, lambda: running, sink)
    start = datetime.now(UTC) + timedelta(seconds=LEAD)
    yield World(shared, calendar, running, sink, edges, start, start + timedelta(seconds=LENGTH))
    edges.close()


async def test_notices_and_the_held_down_go_at_the_edges(world: World) -> None:
    world.calendar.replace([window(world.start, world.end, monitor_ids=[1], tags=["db"])], {})
    for s in (spec(1), spec(2, ("db",)), spec(3, ("web",)), spec(4)):
        world.running[s.id] = Ticker(s)
    world.shared.judging.states[1] = State("up")
    world.edges.arm()
    assert len(world.edges) == 1
    await wait_for(lambda: world.shared.judging.states.get(1, State()).window is not None, timeout=5)
    # Down inside the window (a check's doing): held.
    result = CheckResult(1, world.start + timedelta(seconds=0.1), ok=False, error="status 500")
    judged = judge(world.running[1].spec, result, result.time, world.shared.judging)
    held, outcome = judged.state, judged.outcome
    assert held.held is not None and not outcome.alerts
    world.shared.judging.states[1] = held
    await wait_for(lambda: len(world.sink.seen) >= 4, timeout=5, message="both edges of both monitors")
    assert world.sink.kinds(1) == ["maintenance_start", "maintenance_end", "down"]
    assert world.sink.kinds(2) == ["maintenance_start", "maintenance_end"]  # by its tag
    assert {m for m, *_ in world.sink.seen} == {1, 2}  # not 3 (another tag) nor 4 (not named)
    for _, _, when, at in world.sink.seen:
        assert at in (world.start, world.end)
        assert 0 <= when - at.timestamp() < TOLERANCE, (when, at)
    assert world.shared.judging.states[1].told == "down" and world.shared.judging.states[1].window is None
    assert len(world.edges) == 0  # a one-off window never opens again


async def test_only_the_primary_steps_and_only_while_the_lease_holds(world: World) -> None:
    world.calendar.replace([window(world.start, world.end, monitor_ids=[1, 2])], {})
    world.running.update({1: Ticker(spec(1)), 2: Ticker(spec(2))})
    world.shared.judging.secondary.add(2)
    world.edges.arm()
    await wait_for(lambda: world.sink.kinds(1) == ["maintenance_start"], timeout=5)
    world.shared.may_start = lambda: False  # the lease lapsed: another member runs them now
    await wait_for(lambda: time.time() > world.end.timestamp() + TOLERANCE, timeout=5)
    assert world.sink.kinds(1) == ["maintenance_start"] and world.sink.kinds(2) == []
    assert world.edges.sweep([world.running[1].spec]) == 0


async def test_a_sweep_steps_a_monitor_whose_stored_window_is_stale(world: World) -> None:
    now = datetime.now(UTC)
    world.calendar.replace([window(now - timedelta(hours=1), now + timedelta(hours=1), monitor_ids=[1])], {})
    gone = Window(9, "Deleted", now + timedelta(hours=1), notify=True)
    world.shared.judging.states.update({1: State("up"), 2: State("up", window=gone)})
    assert world.edges.sweep([spec(1), spec(2), spec(3)]) == 2
    assert world.sink.kinds(1) == ["maintenance_start"] and world.sink.kinds(2) == ["maintenance_end"]
    assert world.edges.sweep([spec(1), spec(2), spec(3)]) == 0  # said once


async def test_a_check_judged_after_an_edge_stays_in_the_window(world: World) -> None:
    world.calendar.replace([window(world.start, world.end, monitor_ids=[1])], {})
    world.running[1] = Ticker(spec(1))
    world.shared.judging.states[1] = State("up")
    world.edges.arm()
    await wait_for(lambda: world.sink.kinds(1) == ["maintenance_start"], timeout=5)
    # A check that started just before the window opened, judged now: no "ended", no second start.
    before = world.start - timedelta(seconds=0.05)
    judged = judge(world.running[1].spec, CheckResult(1, before, ok=True), before, world.shared.judging)
    state, outcome = judged.state, judged.outcome
    assert state.window is not None and not outcome.alerts
