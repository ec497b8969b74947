"""Both shapes of a monitor's ticker (``MONITOR_TICKER``: a task per monitor, or a timer chain)
on the event loop, with a check type of the test's own: due times on the grid, the skip rules,
``stop()`` sparing a check in flight, and ``may_start`` (a lapsed cluster lease) refusing ticks."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

import pytest
from support import wait_for

from monitor.aio import Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.checks.base import Check
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler.cluster import LATEST
from monitor.scheduler.judging import Judged, Judging
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.ticker import MonitorTicker, TickerShared, first_tick, stable_offset
from monitor.scheduler.tickers import TICKERS, TickerKind, make_ticker

KINDS: list[TickerKind] = ["task", "timer"]
SLOT = 0.05


@dataclass
class Probe:
    """What the test's check type does and saw: how long a check takes, when each started and
    its due time (started minus lateness, from the written result), and the most at once."""

    duration: float = 0.0
    started: list[float] = field(default_factory=list)
    written: list[tuple[float, float]] = field(default_factory=list)  # (started, due)
    running: int = 0
    most: int = 0


class ProbeCheck(Check):
    kind = "ticker-probe"
    probe = Probe()

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        probe = self.probe
        probe.started.append(time.time())
        probe.running += 1
        probe.most = max(probe.most, probe.running)
        try:
            await asyncio.sleep(probe.duration)
        finally:
            probe.running -= 1
        return CheckResult(monitor.id, started, ok=True, latency_ms=probe.duration * 1000)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Probe:
    fresh = Probe()
    monkeypatch.setattr(ProbeCheck, "probe", fresh)
    monkeypatch.setitem(REGISTRY._checks, ProbeCheck.kind, ProbeCheck())
    return fresh


@pytest.fixture
async def shared(probe: Probe) -> AsyncIterator[TickerShared]:
    def sink(spec: MonitorSpec, result: CheckResult, judged: Judged) -> None:
        due = result.time.timestamp() - (judged.lateness_ms or 0) / 1000
        probe.written.append((result.time.timestamp(), due))

    metrics = SchedulerMetrics()
    made = TickerShared(
        ctx=cast(CheckContext, None),
        metrics=metrics,
        limit=Slots(100),
        judging=Judging(sink, metrics),
        slot=SLOT,
    )
    yield made
    for task in list(made.in_flight):
        task.cancel()
    await asyncio.gather(*made.in_flight, return_exceptions=True)


def spec(monitor_id: int = 1, interval: float = 0.2) -> MonitorSpec:
    return MonitorSpec(
        id=monitor_id,
        name=f"m{monitor_id}",
        type=ProbeCheck.kind,
        url="probe://",
        interval_seconds=interval,
        timeout_seconds=5.0,
        confirm_after=1,
        paused=False,
    )


def test_every_kind_is_tested() -> None:
    assert sorted(TICKERS) == KINDS


def skipped(shared: TickerShared) -> float:
    return shared.metrics.registry.get_sample_value("monitor_checks_skipped_total") or 0.0


@pytest.mark.parametrize("kind", KINDS)
async def test_ticks_fall_on_the_grid_once_each(kind: TickerKind, probe: Probe, shared: TickerShared) -> None:
    s = spec(interval=0.2)
    ticker = make_ticker(kind, s, shared)
    ticker.start()
    await wait_for(lambda: len(probe.written) >= 5, timeout=10, message="five checks written")
    ticker.stop()
    offset = stable_offset(s.id, s.interval_seconds, SLOT)
    dues = [due for _, due in probe.written]
    ks = [(due - offset) / s.interval_seconds for due in dues]
    # Every due time is offset + k * interval (to the ms of lateness_ms), each k once, in order.
    assert all(abs(k - round(k)) < 0.01 for k in ks), ks
    assert [round(k) for k in ks] == list(range(round(ks[0]), round(ks[0]) + len(ks))), ks
    assert probe.most == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_check_running_at_its_next_tick_skips_that_tick(
    kind: TickerKind, probe: Probe, shared: TickerShared
) -> None:
    probe.duration = 0.5  # two and a half intervals
    ticker = make_ticker(kind, spec(interval=0.2), shared)
    ticker.start()
    await wait_for(lambda: len(probe.written) >= 3, timeout=15, message="three checks written")
    ticker.stop()
    assert probe.most == 1, "never two checks of one monitor at once"
    assert skipped(shared) >= 4  # at least two ticks skipped during each of the first two checks
    starts = probe.started
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(starts)), starts


@pytest.mark.parametrize("kind", KINDS)
async def test_stop_spares_a_check_in_flight_and_ends_the_ticks(
    kind: TickerKind, probe: Probe, shared: TickerShared
) -> None:
    probe.duration = 0.3
    ticker = make_ticker(kind, spec(interval=0.2), shared)
    ticker.start()
    await wait_for(lambda: probe.running == 1, timeout=10, message="a check in flight")
    ticker.stop()
    await wait_for(lambda: not shared.in_flight, timeout=10, message="the check in flight ended")
    assert len(probe.written) == len(probe.started) >= 1, "the check in flight was written"
    started = len(probe.started)
    await asyncio.sleep(0.6)  # three intervals in which nothing may start
    assert len(probe.started) == started


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tick_not_owned_is_skipped_and_counted(
    kind: TickerKind, probe: Probe, shared: TickerShared
) -> None:
    owned = False
    shared.may_start = lambda: owned
    ticker = make_ticker(kind, spec(interval=0.1), shared)
    ticker.start()
    await wait_for(lambda: skipped(shared) >= 3, timeout=10, message="ticks refused")
    assert probe.started == [] and not shared.in_flight
    owned = True
    await wait_for(lambda: len(probe.written) >= 2, timeout=10, message="checks once owned again")
    ticker.stop()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_loop_fallen_behind_skips_rather_than_bursts(
    kind: TickerKind, probe: Probe, shared: TickerShared
) -> None:
    ticker = make_ticker(kind, spec(interval=0.1), shared)
    ticker.start()
    await wait_for(lambda: len(probe.written) >= 2, timeout=10, message="ticking")
    before = len(probe.written)
    time.sleep(0.55)  # noqa: ASYNC251 (the loop is blocked for five and a half ticks)
    woke = time.time()
    await wait_for(lambda: len(probe.written) > before + 1, timeout=10, message="ticking again")
    ticker.stop()
    # Of the ticks that came due while the loop was blocked, at most one is checked late (less
    # than half an interval: cluster.LATEST), the rest skipped.
    overdue = [due for _, due in probe.written[before:] if due < woke]
    assert len(overdue) <= 1, (woke, probe.written[before:])
    assert all(at - due <= LATEST * 0.1 + 0.002 for at, due in probe.written), probe.written
    assert skipped(shared) >= 4


@pytest.mark.parametrize("kind", KINDS)
async def test_a_check_that_would_start_over_half_an_interval_late_is_skipped(
    kind: TickerKind, probe: Probe, shared: TickerShared
) -> None:
    """Every slot of the limit taken until 0.6 of an interval after a tick: its check would be
    nearer the next tick than its own, so it is skipped, and the next tick is checked on time."""
    s = spec(interval=1.0)
    shared.limit = Slots(1)
    shared.limit.try_acquire()
    offset = stable_offset(s.id, s.interval_seconds, SLOT)
    ticker = make_ticker(kind, s, shared)
    since = time.time()
    ticker.start(since)
    due = offset + first_tick(since, offset, s.interval_seconds) * s.interval_seconds
    await wait_for(lambda: time.time() >= due + 0.6, timeout=10, message="0.6 s after the first tick")
    shared.limit.release()
    await wait_for(lambda: probe.written, timeout=10, message="the next tick checked")
    ticker.stop()
    assert [round(d - due, 3) for _, d in probe.written] == [1.0], probe.written
    assert skipped(shared) == 1


async def test_task_tickers_of_one_slot_share_one_wakeup(probe: Probe, shared: TickerShared) -> None:
    # 40 monitors of 1 s on a grid of 20 slots: at most 20 loop timers, however many wait.
    tickers: list[MonitorTicker] = [make_ticker("task", spec(i, interval=1.0), shared) for i in range(1, 41)]
    for ticker in tickers:
        ticker.start()
    await asyncio.sleep(0)
    assert 0 < len(shared.sleepers) <= 20
    assert sum(len(waiting) for waiting in shared.sleepers.values()) == 40
    for ticker in tickers:
        ticker.stop()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    # A stopped ticker's wait is dropped at once, not kept until its deadline.
    assert sum(len(waiting) for waiting in shared.sleepers.values()) == 0
