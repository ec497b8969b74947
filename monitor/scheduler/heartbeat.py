"""Heartbeat monitors in the scheduler: a deadline timer per monitor, and the pings' intake.

A heartbeat monitor is not checked; it waits. ``HeartbeatTicker`` keeps one loop timer at the
monitor's deadline (``checks/heartbeat.py``: the last ping plus the period or the next cron
time, plus the grace time), as ``TimerTicker`` keeps one at the next tick, and a monitor
costs the same while it waits. It answers the scheduler's ticker protocol
(``ticker.MonitorTicker``) as a pull check's ticker does, so the running set (running.py)
starts, stops and hands both over by one path. The deadline passing in silence is a failing
result; a ping is a result too. Both go through the same state machine and writer as checks
(``judging.conclude``), so confirm_after, reminders, maintenance windows, dependencies and
flapping apply as they do to any monitor. The connectivity guard does not: a job that did not
ping says nothing about the checker's network.

``PingIntake`` reads the ``pings`` rows the api inserted (woken by ``NOTIFY pings_added``, and
every few seconds in case a notification was missed) in id order and hands each to its
monitor's ticker. The writer deletes a ping's row in the transaction that writes its result
(``Writer.take_pings``): a ping is never lost, and a crash before that commit leaves the row to
be read again. A ping for a monitor this scheduler has not loaded (created a moment ago, its
NOTIFY not yet applied) is kept aside and offered again for up to ``PARK_SECONDS``; a paused
or deleted monitor's pings are dropped at once (the api stores them: its cache cannot know of a
pause as it happens).

A deadline does not fire at once: the intake first reads the pings already in the table, so
a ping that came just before its deadline (or while no scheduler ran) is counted first, and a
miss is recorded only if the deadline still stands. Results of one monitor keep their order:
a ping read after a later result is recorded just after it.

A ticker replaced by an edit of its monitor hands its deadline, last ping and started run to
the new one (a new schedule counts again from the last ping). At start a ticker knows the
monitor's last result (``monitor_state``): after a ping (ok or ``/fail``) the deadline counts
from it, after a miss the next miss is a period later, with no result yet it counts from the
monitor's creation, and after a pause from its resumption (a job that pinged into a paused
monitor is not down the moment it resumes). A deadline passed while no scheduler ran fires
once the pings waiting in the table are read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.checks.heartbeat import HeartbeatSettings, Schedule, missed, ping_result, schedule_of
from monitor.models import MonitorSpec
from monitor.scheduler.judging import conclude
from monitor.scheduler.ticker import TickerShared
from monitor.scheduler.writer import Writer

log = mlog.get(__name__)

BATCH = 1000
POLL_SECONDS = 5.0
PARK_SECONDS = 60.0
# The start of a miss's cause (checks/heartbeat.py), to tell a stored miss from a /fail.
MISSED = "no ping"


class HeartbeatTicker:
    """A heartbeat monitor's deadline, as one pending loop timer."""

    __slots__ = (
        "_drain",
        "_handle",
        "_last_at",
        "_last_ping",
        "_shared",
        "_started_at",
        "_stopped",
        "due",
        "schedule",
        "spec",
    )
    due: datetime
    schedule: Schedule
    _last_at: datetime | None
    _last_ping: datetime | None
    _started_at: datetime | None

    def __init__(
        self,
        spec: MonitorSpec,
        shared: TickerShared,
        row: Any = None,
        *,
        previous: HeartbeatTicker | None = None,
        drain: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.spec = spec
        self._shared = shared
        self._drain = drain
        settings = spec.options
        if not isinstance(settings, HeartbeatSettings):
            settings = HeartbeatSettings.model_validate({})
        self.schedule: Schedule = schedule_of(settings, spec.interval_seconds)
        self._handle: asyncio.TimerHandle | None = None
        self._stopped = False
        if previous is not None:
            self._last_ping, self._started_at, self._last_at = (
                previous._last_ping,
                previous._started_at,
                previous._last_at,
            )
            if previous.schedule == self.schedule:
                self.due = previous.due
            else:
                self.due = self.schedule.deadline(self._last_ping or datetime.now(UTC))
            return
        self._started_at = None
        get = row.get if row is not None else {}.get
        last: datetime | None = get("last_check_at")
        self._last_at = last
        missed_last = last is not None and not get("last_ok") and (get("last_error") or "").startswith(MISSED)
        self._last_ping = last if last is not None and not missed_last else None
        if last is None:
            self.due = self.schedule.deadline(get("created_at") or datetime.now(UTC))
        elif missed_last:
            self.due = self.schedule.next_miss(last)
        else:
            self.due = self.schedule.deadline(last)
        resumed: datetime | None = get("resumed_at")
        if resumed is not None and (last is None or resumed > last):
            self.due = max(self.due, self.schedule.deadline(resumed))

    def start(self, since: float | None = None) -> None:
        self._shared.judging.parents[self.spec.id] = self.spec.depends_on
        self._arm()

    def stop(self) -> None:
        self._stopped = True
        self._disarm()

    def busy(self) -> asyncio.Task[None] | None:
        """None: a heartbeat runs no check. A ping is judged as it is read; a miss being
        confirmed (reading the stored pings first) is not waited for at a handover or a new
        role: the monitor's next owner reads the same pings."""
        return None

    def missed(self, last_check: float | None, since: float | None) -> int:
        """Zero: a heartbeat has no ticks to pass over; a deadline passed while nobody ran it
        fires once the pings in the table are read."""
        return 0

    def _disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._disarm()
        shared = self._shared
        self._handle = shared.loop.call_at(self.due.timestamp() + shared.mono_minus_wall, self._deadline)

    def _deadline(self) -> None:
        self._handle = None
        shared = self._shared
        task = shared.loop.create_task(self._confirm_miss())
        shared.in_flight.add(task)
        task.add_done_callback(shared.in_flight.discard)

    async def _confirm_miss(self) -> None:
        if self._drain is not None:
            await self._drain()  # the pings already stored come first
        if self._stopped or self._handle is not None:
            return  # stopped, or a ping read by the drain moved the deadline and armed it again
        # The loop's clock may wake the timer a hair before the wall clock reaches it.
        at = self._after_last(max(datetime.now(UTC), self.due))
        self._settle(missed(self.spec.id, at, self._last_ping, self.schedule), at)
        following = self.schedule.next_miss(self.due)
        self.due = following if following > at else self.schedule.next_miss(at)
        self._started_at = None
        self._arm()

    def ping(self, kind: str, at: datetime, body: str | None, body_truncated: bool) -> None:
        """A ping of this monitor: a result (``ok``, ``fail``) or the start of a run."""
        if kind == "start":
            self._started_at = at
            return
        at = self._after_last(at)
        result = ping_result(self.spec.id, at, kind, body, body_truncated, self._started_at)
        self._started_at = None
        self._last_ping = at
        self._settle(result, at)
        self.due = max(self.due, self.schedule.deadline(at))
        if not self._stopped:
            self._arm()

    def _after_last(self, at: datetime) -> datetime:
        """``at``, or just after the last result when that is later: results stay in order."""
        if self._last_at is not None and at <= self._last_at:
            at = self._last_at + timedelta(microseconds=1)
        self._last_at = at
        return at

    def _settle(self, result: Any, at: datetime) -> None:
        conclude(self.spec, result, at, self._shared.judging)


class PingIntake:
    """Reads the api's ``pings`` rows and hands each to its monitor's ticker.

    Row ids are handed out at INSERT and seen at COMMIT, so two api connections can commit
    id 11 before id 10: the intake does not read "after the last id" but every row it has not
    handed over yet (``_handed``: until the writer has deleted them, a few seconds' worth).
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        writer: Writer,
        tickers: Mapping[int, object],
        heartbeats: Mapping[int, HeartbeatTicker],
        owns: Callable[[int], bool] | None = None,
    ) -> None:
        self._pool = pool
        self._writer = writer
        # Every ticker (a monitor loaded here), and the heartbeats' among them (the pings' own).
        self._tickers = tickers
        self._heartbeats = heartbeats
        # With several schedulers, whether a monitor is this one's (cluster.py); the others'
        # pings are left in the table for them (``_elsewhere`` until the division changes).
        self._owns = owns
        self._elsewhere: set[int] = set()
        self._handed: set[int] = set()
        # Rows of monitors not loaded here (yet): the row and when it was first read.
        self._waiting: dict[int, tuple[asyncpg.Record, float]] = {}
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()

    def wake(self, *_: Any) -> None:
        self._wake.set()

    def redivided(self) -> None:
        """The monitors were divided again: read the pings left for others afresh (those handed
        over stay handed: their rows are deleted with their results)."""
        self._elsewhere.clear()
        self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=POLL_SECONDS)
            except TimeoutError:
                pass
            self._wake.clear()
            await self.drain()

    async def drain(self) -> None:
        """Hand every stored ping over now; a database error is logged (the next round retries)."""
        async with self._lock:
            try:
                while await self.take() == BATCH:
                    pass
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("pings.read_failed", error=str(exc) or type(exc).__name__)
            except Exception:  # a bug must not end the intake: pings would pile up unread
                log.exception("pings.intake_failed")

    async def take(self) -> int:
        """Hand the pings not handed over yet to their tickers; how many rows were read."""
        if self._handed:
            still = await self._pool.fetch(
                "SELECT id FROM pings WHERE id = ANY($1::bigint[])", list(self._handed)
            )
            self._handed = {r["id"] for r in still}
        if self._elsewhere or self._waiting:
            # Rows left for another member, or parked, may be gone meanwhile (taken by the
            # monitor's owner): a parked row handed over after that would be counted twice.
            still = {
                r["id"]
                for r in await self._pool.fetch(
                    "SELECT id FROM pings WHERE id = ANY($1::bigint[])", [*self._elsewhere, *self._waiting]
                )
            }
            self._elsewhere &= still
            for gone in [i for i in self._waiting if i not in still]:
                del self._waiting[gone]
        rows = await self._pool.fetch(
            """SELECT id, monitor_id, time, kind, body, body_truncated FROM pings
               WHERE id <> ALL($1::bigint[]) ORDER BY id LIMIT $2""",
            [*self._handed, *self._waiting, *self._elsewhere],
            BATCH,
        )
        read = len(rows)
        if self._owns is not None:
            others = {r["id"] for r in rows if not self._owns(r["monitor_id"])}
            self._elsewhere.update(others)
            rows = [r for r in rows if r["id"] not in others]
        now = time.monotonic()
        pending = [*self._waiting.values(), *((r, now) for r in rows)]
        unloaded = {r["monitor_id"] for r, _ in pending if r["monitor_id"] not in self._tickers}
        # Of the monitors not loaded here, those a ping may still be for (active heartbeats the
        # scheduler is about to load); a paused or deleted monitor's pings go at once.
        coming = await self._active(unloaded) if unloaded else set()
        taken: list[int] = []
        for row, first_seen in pending:
            ticker = self._heartbeats.get(row["monitor_id"])
            if ticker is not None:
                ticker.ping(row["kind"], row["time"], row["body"], row["body_truncated"])
            elif row["monitor_id"] in coming and now - first_seen < PARK_SECONDS:
                self._waiting.setdefault(row["id"], (row, first_seen))
                continue
            else:
                log.info("pings.dropped", monitor_id=row["monitor_id"], reason="paused, deleted or elsewhere")
            self._waiting.pop(row["id"], None)
            taken.append(row["id"])
        if taken:
            self._handed.update(taken)
            self._writer.take_pings(taken)
        return read

    async def _active(self, monitor_ids: set[int]) -> set[int]:
        rows = await self._pool.fetch(
            "SELECT id FROM monitors WHERE id = ANY($1::bigint[]) AND type = 'heartbeat' AND NOT paused",
            list(monitor_ids),
        )
        return {r["id"] for r in rows}
