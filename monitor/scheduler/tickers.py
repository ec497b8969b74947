"""The two shapes of a monitor's ticker, and the setting that picks one (``MONITOR_TICKER``).

``task`` (the design card's shape): one asyncio task per monitor, which sleeps until its next
tick is due and runs the check in place. ``timer`` (``ticker.TimerTicker``): a chain of loop
timers, one pending per monitor, each check in a task of its own. Both keep the same due times
(``offset + k * interval`` on the slot grid), the same skip rules and the same check
(``ticker.check``); they differ only in what waits between ticks.

Measured (bench/README.md, "Issue 16"; medians of alternating runs of one commit): at 1,000
monitors every 10 s, 0.206 CPU-s per 1,000 checks for the task against 0.210 for the timer chain;
at 100,000 idle monitors, 2.30 KiB per monitor against 1.57. The issue keeps the task unless it
costs more than 10 % CPU per check or 1 KiB per idle monitor more than the timers: it costs
neither, so ``task`` is the default. Two choices keep it there: the check runs in the monitor's
own task (no task per check), and the sleeps due at one deadline share one loop timer
(``sleep_until``); with a timer per sleep a waiting task cost 1.03 KiB more than a timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

from monitor import logging as mlog
from monitor.models import MonitorSpec
from monitor.scheduler.ticker import (
    MonitorTicker,
    TickerShared,
    TimerTicker,
    begin,
    check,
    first_tick,
    owned,
    skip,
    ticks_missed,
)

log = mlog.get(__name__)

TickerKind = Literal["task", "timer"]


def sleep_until(shared: TickerShared, when: float) -> asyncio.Future[None]:
    """A future done at loop time ``when``. The futures due at one deadline share one loop
    timer: ticks fall on the slot grid, so many monitors wait for the same instant, and
    uvloop's timer handle (about 640 bytes each, measured) would be most of a waiting
    monitor's memory if each had its own. Call ``forget`` should the wait be cancelled."""
    waiter: asyncio.Future[None] = shared.loop.create_future()
    sleepers = shared.sleepers.get(when)
    if sleepers is None:
        sleepers = shared.sleepers[when] = []
        shared.loop.call_at(when, _ring, shared.sleepers, when)
    sleepers.append(waiter)
    return waiter


def forget(shared: TickerShared, when: float, waiter: asyncio.Future[None]) -> None:
    """Drop a cancelled wait (a stopped ticker), so it is not kept until its deadline."""
    sleepers = shared.sleepers.get(when)
    if sleepers is not None and waiter in sleepers:
        sleepers.remove(waiter)


def _ring(sleepers: dict[float, list[asyncio.Future[None]]], when: float) -> None:
    for waiter in sleepers.pop(when):
        if not waiter.done():
            waiter.set_result(None)


class TaskTicker:
    """A monitor's ticks as one task of its own: it sleeps until a tick is due, checks it in
    place and sleeps again. A tick that comes due while the check runs is skipped (counted when
    the check ends); ``stop()`` cancels the sleep, never a check in flight, which runs to its end
    and is written, after which the task ends."""

    __slots__ = ("_shared", "_stopped", "_task", "_waiter", "spec")

    def __init__(self, spec: MonitorSpec, shared: TickerShared) -> None:
        self.spec = spec
        self._shared = shared
        self._task: asyncio.Task[None] | None = None
        # Set while the task sleeps: then, and only then, stop() may cancel it.
        self._waiter: asyncio.Future[None] | None = None
        self._stopped = False

    def start(self, since: float | None = None) -> None:
        """Start ticking from the first tick due at or after ``since`` (epoch seconds, default now).

        A scheduler that is still loading its monitors passes its own start time, so every
        monitor's first check falls within one interval of the start however long loading took.
        """
        offset, k = begin(self.spec, self._shared, since)
        self._task = self._shared.loop.create_task(self._run(offset, k))

    def stop(self) -> None:
        """Stop ticking; a check in flight runs to its end and is still written."""
        self._stopped = True
        if self._waiter is not None and self._task is not None:
            self._task.cancel()

    def busy(self) -> asyncio.Task[None] | None:
        task = self._task
        return task if task is not None and task in self._shared.in_flight else None

    def missed(self, last_check: float | None, since: float | None) -> int:
        return ticks_missed(self.spec, self._shared, last_check, since)

    async def _run(self, offset: float, k: int) -> None:
        spec, shared = self.spec, self._shared
        interval = spec.interval_seconds
        while not self._stopped:
            due_wall = offset + k * interval
            # The loop deadline of an epoch due time through the shared mapping, as the timer
            # chain does: wall-clock jumps neither bunch nor stall ticks.
            # Rounded, so that ticks of one slot share one deadline whatever float error
            # their intervals bring (uvloop's timers have millisecond resolution anyway).
            when = round(due_wall + shared.mono_minus_wall, 6)
            waiter = self._waiter = sleep_until(shared, when)
            try:
                await waiter
            finally:
                self._waiter = None
                if waiter.cancelled():
                    forget(shared, when, waiter)
            # A loop that fell more than a tick behind skips the missed ticks rather than bursting.
            k = self._catch_up(offset, k + 1, "scheduler fell behind")
            if owned(spec, shared):
                task = self._task
                assert task is not None
                shared.in_flight.add(task)
                try:
                    await check(spec, shared, due_wall)
                except Exception:  # a bug after the check's own guard must not end the ticker
                    log.exception("check.crashed", monitor_id=spec.id)
                finally:
                    shared.in_flight.discard(task)
                if self._stopped:
                    return
                # The ticks that came due while it ran were not checked, as with the timer chain.
                k = self._catch_up(offset, k, "previous check still running")

    def _catch_up(self, offset: float, k: int, reason: str) -> int:
        """The first tick at or after ``k`` that is not yet overdue; those before it are skipped."""
        shared = self._shared
        interval = self.spec.interval_seconds
        due = first_tick(shared.loop.time() - shared.mono_minus_wall, offset, interval)
        if due > k:
            skip(self.spec, shared, reason, due - k)
            return due
        return k


TICKERS: dict[str, Callable[[MonitorSpec, TickerShared], MonitorTicker]] = {
    "task": TaskTicker,
    "timer": TimerTicker,
}


def make_ticker(kind: TickerKind, spec: MonitorSpec, shared: TickerShared) -> MonitorTicker:
    """The ticker of ``spec`` in the shape ``kind`` (the ``MONITOR_TICKER`` setting)."""
    return TICKERS[kind](spec, shared)
