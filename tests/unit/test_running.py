"""The scheduler's running set: a pull check's ticker and a heartbeat's deadline behind one
protocol (started, stopped, counted at a handover by one path), the heartbeats kept by id for the
pings' intake, and a heartbeat replaced by an edit carrying its deadline on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import asyncpg
import pytest

from monitor.aio import Slots
from monitor.checks import CheckContext
from monitor.models import MonitorSpec
from monitor.scheduler.judging import Judging
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.running import RunningSet
from monitor.scheduler.ticker import MonitorTicker, TickerShared

VERSION = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
async def running() -> AsyncIterator[RunningSet]:
    metrics = SchedulerMetrics()
    shared = TickerShared(
        ctx=cast(CheckContext, None),
        metrics=metrics,
        limit=Slots(10),
        judging=Judging(lambda *_: None, metrics),
    )
    # The pool is only read for monitors checked from several locations, and at cluster rounds.
    made = RunningSet(cast(asyncpg.Pool, None), shared, "timer", shared.metrics)
    yield made
    for monitor_id in list(made.tickers):
        made.stop(monitor_id)
    await asyncio.gather(*shared.in_flight, return_exceptions=True)


def spec(monitor_id: int, kind: str, interval: float = 60.0) -> MonitorSpec:
    return MonitorSpec(
        id=monitor_id,
        name=f"m{monitor_id}",
        type=kind,
        url="http://127.0.0.1:9/" if kind == "http" else "",
        interval_seconds=interval,
        timeout_seconds=5.0,
        confirm_after=1,
        paused=False,
    )


def row(last_check: datetime | None = None) -> dict[str, Any]:
    return {"status": None, "last_check_at": last_check, "updated_at": VERSION, "created_at": VERSION}


async def test_a_heartbeat_answers_the_tickers_protocol(running: RunningSet) -> None:
    # Checked by mypy as much as here: a heartbeat is a MonitorTicker like a pull check's ticker.
    ticker: MonitorTicker = running.make(spec(2, "heartbeat"), row(), None)
    assert running.heartbeats[2] is ticker
    assert ticker.busy() is None
    assert ticker.missed(time.time() - 3600, None) == 0


async def test_both_kinds_start_and_stop_by_one_path(running: RunningSet) -> None:
    pull, beat = spec(1, "http"), spec(2, "heartbeat")
    for made in (pull, beat):
        assert running.start(made, row(), "primary", None, since=None, joined=None, counted=False) == 0
    assert sorted(running.tickers) == [1, 2]
    assert list(running.heartbeats) == [2]  # the pings' intake finds only the heartbeat
    assert running.versions == {1: VERSION, 2: VERSION}
    assert running.busy(1) is None and running.busy(2) is None
    assert running.stop(1) is None
    stopped = running.stop(2)
    assert stopped is not None and stopped.spec is beat
    assert running.tickers == {} and running.heartbeats == {} and running.versions == {}


async def test_a_handover_counts_the_ticks_of_pull_checks_only(running: RunningSet) -> None:
    # Last checked ten intervals ago: about nine ticks were passed over.
    last = datetime.now(UTC) - timedelta(seconds=600)
    pull = running.start(spec(1, "http"), row(last), "primary", None, since=None, joined=None, counted=True)
    beat = running.start(
        spec(2, "heartbeat"), row(last), "primary", None, since=None, joined=None, counted=True
    )
    assert 8 <= pull <= 10
    assert beat == 0  # a deadline passed while nobody ran it fires; no ticks to pass over


async def test_a_replaced_heartbeat_keeps_its_deadline(running: RunningSet) -> None:
    last = datetime.now(UTC) - timedelta(seconds=30)
    running.start(spec(2, "heartbeat"), row(last), "primary", None, since=None, joined=None, counted=False)
    before = running.heartbeats[2].due
    previous = running.stop(2)
    # An edit of another field (the name): the same schedule, so the same deadline, not one
    # counted afresh from the row.
    edited = spec(2, "heartbeat")
    running.start(edited, row(), "primary", previous, since=None, joined=None, counted=False)
    assert running.heartbeats[2].due == before
    assert running.tickers[2] is running.heartbeats[2]
