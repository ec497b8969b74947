"""Heartbeat monitors in the scheduler: a deadline timer per monitor, and the pings' intake.

A heartbeat monitor is not checked; it waits. ``HeartbeatTicker`` keeps one loop timer at the
monitor's deadline (``checks/heartbeat.py``: the last ping plus the period or the next cron
time, plus the grace time), as ``MonitorTicker`` keeps one at the next tick, and a monitor
costs the same while it waits. The deadline passing in silence is a failing result; a ping
is a result too. Both go through the same state machine and writer as checks (``ticker.judge``
and ``ticker.settle``), so confirm_after, reminders, maintenance windows, dependencies and
flapping apply as they do to any monitor. The connectivity guard does not: a job that did not
ping says nothing about the checker's network.

``PingIntake`` reads the ``pings`` rows the api inserted (woken by ``NOTIFY pings_added``, and
every few seconds in case a notification was missed) in id order and hands each to its
monitor's ticker. The writer deletes a ping's row in the transaction that writes its result
(``Writer.take_pings``): a ping is never lost, and a crash before that commit leaves the row to
be read again. A ping for a monitor this scheduler has not loaded (created a moment ago, its
NOTIFY not yet applied) is kept aside and offered again for ``PARK_SECONDS`` before it is
dropped (a paused or deleted monitor's pings are dropped then).

At start a ticker knows the monitor's last result (``monitor_state``): after an ok ping the
deadline counts from it; after a failure (a miss or a ``/fail``) the next miss is a period
later; with no result yet, from the monitor's creation. A deadline passed while no scheduler
ran fires at once.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.checks.heartbeat import HeartbeatSettings, Schedule, missed, ping_result, schedule_of
from monitor.models import MonitorSpec
from monitor.scheduler.ticker import TickerShared, count, judge, settle
from monitor.scheduler.writer import Writer

log = mlog.get(__name__)

BATCH = 1000
POLL_SECONDS = 5.0
PARK_SECONDS = 60.0


class HeartbeatTicker:
    """A heartbeat monitor's deadline, as one pending loop timer."""

    __slots__ = ("_handle", "_last_ping", "_shared", "_started_at", "due", "schedule", "spec")

    def __init__(self, spec: MonitorSpec, shared: TickerShared, row: Any = None) -> None:
        self.spec = spec
        self._shared = shared
        settings = spec.options
        if not isinstance(settings, HeartbeatSettings):
            settings = HeartbeatSettings.model_validate({})
        self.schedule: Schedule = schedule_of(settings, spec.interval_seconds)
        self._handle: asyncio.TimerHandle | None = None
        self._started_at: datetime | None = None
        last = row.get("last_check_at") if row is not None else None
        self._last_ping: datetime | None = last if last is not None and row.get("last_ok") else None
        if last is None:
            created = row.get("created_at") if row is not None else None
            self.due = self.schedule.deadline(created or datetime.now(UTC))
        elif row.get("last_ok"):
            self.due = self.schedule.deadline(last)
        else:
            self.due = self.schedule.next_miss(last)

    def start(self, since: float | None = None) -> None:
        self._shared.parents[self.spec.id] = self.spec.depends_on
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self) -> None:
        self.stop()
        shared = self._shared
        self._handle = shared.loop.call_at(self.due.timestamp() + shared.mono_minus_wall, self._missed)

    def _missed(self) -> None:
        # The loop's clock may wake the timer a hair before the wall clock reaches it.
        now = max(datetime.now(UTC), self.due)
        result = missed(self.spec.id, now, self._last_ping, self.schedule)
        self._settle(result, now)
        following = self.schedule.next_miss(self.due)
        self.due = following if following > now else self.schedule.next_miss(now)
        self._started_at = None
        self._schedule()

    def ping(self, kind: str, at: datetime, body: str | None, body_truncated: bool) -> None:
        """A ping of this monitor: a result (``ok``, ``fail``) or the start of a run."""
        if kind == "start":
            self._started_at = at
            return
        result = ping_result(self.spec.id, at, kind, body, body_truncated, self._started_at)
        self._started_at = None
        self._last_ping = at
        self._settle(result, at)
        self.due = self.schedule.deadline(at)
        self._schedule()

    def _settle(self, result: Any, at: datetime) -> None:
        shared = self._shared
        count(shared.metrics, result)
        new, outcome = judge(self.spec, shared, result, at)
        settle(self.spec, shared, result, new, outcome)


class PingIntake:
    """Reads the api's ``pings`` rows and hands each to its monitor's ticker."""

    def __init__(self, pool: asyncpg.Pool, writer: Writer, tickers: dict[int, Any]) -> None:
        self._pool = pool
        self._writer = writer
        self._tickers = tickers
        self._after = 0  # the last ping id read
        self._parked: dict[int, tuple[asyncpg.Record, float]] = {}
        self._wake = asyncio.Event()

    def wake(self, *_: Any) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=POLL_SECONDS)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                while await self.take() == BATCH:
                    pass
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("pings.read_failed", error=str(exc) or type(exc).__name__)

    async def take(self) -> int:
        """Hand the pings not read yet to their tickers; how many rows were read."""
        rows = await self._pool.fetch(
            """SELECT id, monitor_id, time, kind, body, body_truncated FROM pings
               WHERE id > $1 ORDER BY id LIMIT $2""",
            self._after,
            BATCH,
        )
        now = time.monotonic()
        taken: list[int] = []
        for row in [*(r for r, _ in self._parked.values()), *rows]:
            ticker = self._tickers.get(row["monitor_id"])
            if isinstance(ticker, HeartbeatTicker):
                ticker.ping(row["kind"], row["time"], row["body"], row["body_truncated"])
                self._parked.pop(row["id"], None)
                taken.append(row["id"])
            elif now - self._parked.setdefault(row["id"], (row, now))[1] > PARK_SECONDS:
                log.info("pings.dropped", monitor_id=row["monitor_id"], reason="no such monitor here")
                self._parked.pop(row["id"])
                taken.append(row["id"])
        if rows:
            self._after = rows[-1]["id"]
        if taken:
            self._writer.take_pings(taken)
        return len(rows)
