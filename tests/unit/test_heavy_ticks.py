"""A heavy check's tick (``ticker.check``): handed to ``CheckContext.dispatch``, it holds no slot
of ``MONITOR_CHECK_CONCURRENCY`` while it waits for a worker, and its result (a NOT_RUN too) is
judged and handed to the writer like any other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel

from monitor.aio import Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.checks.heavy import HeavyCheck
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler import ticker
from monitor.scheduler.judging import Judged, Judging
from monitor.scheduler.metrics import SchedulerMetrics


class Page(HeavyCheck):
    kind = "test-heavy"
    Settings = BaseModel


@pytest.fixture
def heavy_type() -> Iterator[None]:
    REGISTRY.register(Page)
    try:
        yield
    finally:
        del REGISTRY._checks[Page.kind]


def spec() -> MonitorSpec:
    return MonitorSpec(1, "page", Page.kind, "https://site.example/", 300.0, 5.0, 1, False)


async def test_a_heavy_tick_waits_without_a_slot_and_is_judged(heavy_type: None) -> None:
    release = asyncio.Event()
    asked: list[datetime] = []

    async def dispatch(monitor: MonitorSpec, started: datetime) -> CheckResult:
        asked.append(started)
        await release.wait()
        return CheckResult(monitor.id, started, ok=False, error="not run: x", failure=Failure.NOT_RUN)

    handed: list[tuple[CheckResult, Judged]] = []
    limit = Slots(1)
    shared = ticker.TickerShared(
        ctx=CheckContext(session=None, policy=None, dispatch=dispatch),  # type: ignore[arg-type]
        metrics=SchedulerMetrics(),
        limit=limit,
        judging=Judging(lambda _s, got, judged: handed.append((got, judged)), SchedulerMetrics()),
    )
    waiting = asyncio.create_task(ticker.check(spec(), shared, time.time()))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(asked) == 1 and limit.free == 1  # waiting for a worker, holding no slot
    release.set()
    await waiting
    ((result, judged),) = handed
    assert result.failure is Failure.NOT_RUN and judged.outcome.changes == () and limit.free == 1


def test_only_the_heavy_types_are_heavy() -> None:
    kinds: dict[str, Any] = {k: REGISTRY.get(k).heavy for k in REGISTRY.kinds}
    assert not any(heavy for kind, heavy in kinds.items() if kind in {"http", "tcp", "tls", "dns", "ping"})


class Guard:
    """The connectivity guard as judging asks it: what it was told, and always connected."""

    outage = None

    def __init__(self) -> None:
        self.told: list[int] = []

    def record(self, monitor_id: int, answered: bool, at: float) -> None:
        self.told.append(monitor_id)

    async def cut_off(self, now: float) -> str | None:
        raise AssertionError("a heavy check's failure says nothing of the scheduler's network")


async def test_a_heavy_failure_is_not_the_schedulers_network(heavy_type: None) -> None:
    async def dispatch(monitor: MonitorSpec, started: datetime) -> CheckResult:
        return CheckResult(monitor.id, started, ok=False, error="timed out", failure=Failure.TIMEOUT)

    guard = Guard()
    handed: list[tuple[CheckResult, Judged]] = []
    shared = ticker.TickerShared(
        ctx=CheckContext(session=None, policy=None, dispatch=dispatch),  # type: ignore[arg-type]
        metrics=SchedulerMetrics(),
        limit=Slots(1),
        judging=Judging(
            lambda _s, got, judged: handed.append((got, judged)),
            SchedulerMetrics(),
            guard=guard,  # type: ignore[arg-type]
        ),
    )
    await ticker.check(spec(), shared, time.time())
    ((_, judged),) = handed
    assert guard.told == [] and [c.kind for c in judged.changes] == ["down"]
