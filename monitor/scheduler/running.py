"""The scheduler's running set: one ticker per monitor it runs, whichever the monitor's kind.

A pull check's ticker (``tickers.py``: a task or a timer chain per monitor) and a heartbeat's
deadline (``heartbeat.HeartbeatTicker``) answer one protocol (``ticker.MonitorTicker``: start,
stop, the check in flight, the ticks a handover passed over), so a monitor is started, stopped,
waited for and handed over by one path whatever it is. The one place that tells the kinds apart
is :meth:`RunningSet.make`, by the check type's registration (``Check.scheduled``); it also keeps
the heartbeats by id, for the pings' intake to hand each ping to its monitor.

Besides the tickers, this module keeps what a running monitor shares with the others
(``TickerShared``: its state, name, role and its locations' views) as monitors start, stop
and move between members (sharing.py). Which monitors to start, from which rows, is the
catalogue's (catalogue.py); the process around both is service.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.checks import REGISTRY
from monitor.models import MonitorSpec
from monitor.scheduler import locations
from monitor.scheduler.cluster import Role, View, resume_since
from monitor.scheduler.heartbeat import HeartbeatTicker
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.sharing import DB_ERRORS, read_foreign_parents
from monitor.scheduler.state import State, Window
from monitor.scheduler.ticker import MonitorTicker, TickerShared, stable_offset
from monitor.scheduler.tickers import TickerKind, make_ticker

log = mlog.get(__name__)


class RunningSet:
    """The monitors running here: their tickers, the version each started from, and the
    shared parts that follow a monitor's start and stop."""

    def __init__(
        self, pool: asyncpg.Pool, shared: TickerShared, kind: TickerKind, metrics: SchedulerMetrics
    ) -> None:
        self._pool = pool
        self.shared = shared
        self._kind = kind
        self._metrics = metrics
        self.tickers: dict[int, MonitorTicker] = {}
        # The heartbeats among them (the pings' intake hands each ping to one).
        self.heartbeats: dict[int, HeartbeatTicker] = {}
        # The monitor row's version each ticker was started from.
        self.versions: dict[int, datetime] = {}
        # Monitors run elsewhere whose stored status is in the shared states (a dependant here
        # is held by them): not a state to start from if they move here.
        self._foreign: set[int] = set()
        # What a heartbeat reads first when its deadline passes: the pings stored (PingIntake).
        self.drain: Callable[[], Awaitable[None]] | None = None

    # -- one monitor -------------------------------------------------------------------

    def make(self, spec: MonitorSpec, row: Any, previous: HeartbeatTicker | None) -> MonitorTicker:
        """The ticker of ``spec``: a pull check's in the shape of ``MONITOR_TICKER``, or a
        heartbeat's deadline, which carries on from the ``previous`` one of its monitor and is
        kept among the heartbeats (its caller puts it in the tickers, with no await between)."""
        if REGISTRY.get(spec.type).scheduled:
            return make_ticker(self._kind, spec, self.shared)
        heartbeat = self.heartbeats[spec.id] = HeartbeatTicker(
            spec, self.shared, row, previous=previous, drain=self.drain
        )
        return heartbeat

    def start(
        self,
        spec: MonitorSpec,
        row: Any,
        role: Role,
        previous: HeartbeatTicker | None,
        *,
        since: float | None,
        joined: float | None,
        counted: bool,
    ) -> int:
        """Run ``spec`` here in ``role``, from its stored state in ``row`` (``monitor_state``'s
        columns); the ticks its handover passed over, when ``counted``. One checked from several
        locations is left unstarted, for :meth:`start_located` once its locations' state is read.
        With ``joined`` (``Sharing.joined_whole``), it goes on from the tick after its last
        stored check."""
        shared = self.shared
        shared.judging.names[spec.id] = spec.name
        if role == "secondary":
            shared.judging.secondary.add(spec.id)
        else:
            shared.judging.secondary.discard(spec.id)
        if spec.id in self._foreign:  # a status read for a dependant here, not its state
            self._foreign.discard(spec.id)
            shared.judging.states.pop(spec.id, None)
        if spec.id not in shared.judging.states and row["status"] is not None:
            shared.judging.states[spec.id] = stored_state(row)
        ticker = self.make(spec, row, previous)
        last = row["last_check_at"].timestamp() if row["last_check_at"] is not None else None
        start_at = since
        if not spec.locations:
            if joined is not None:
                now = time.time() if since is None else since
                start_at = resume_since(last, joined, now, self._offset(spec), spec.interval_seconds)
            ticker.start(start_at)
        self.tickers[spec.id] = ticker
        self.versions[spec.id] = row["updated_at"]
        handed = joined is not None and last is not None and last >= joined
        return ticker.missed(last, start_at) if counted or handed else 0

    async def start_located(
        self, located: Mapping[int, MonitorSpec], since: float | None, closing: bool
    ) -> None:
        """Start the monitors checked from several locations once their state here is read; read
        or not, none is left unstarted in the tickers (a later load retries)."""
        read = False
        try:
            await locations.load(self._pool, self.shared.judging, located)
            read = True
        finally:
            for monitor_id, spec in located.items():
                waiting = self.tickers.get(monitor_id)
                if waiting is None or waiting.spec is not spec:
                    continue  # stopped or replaced while it read
                if read and not closing:
                    waiting.start(since)
                else:
                    self.stop(monitor_id)

    def stop(self, monitor_id: int) -> HeartbeatTicker | None:
        """Stop the monitor's ticker, if it runs; a heartbeat's is returned, for the ticker that
        replaces it to carry its deadline on."""
        # Its state stays (a check in flight still updates it; a paused monitor that others
        # depend on is not down), its name too (their alerts still name it); but not the
        # overall state a secondary holds, which it never kept up (read again if it leads).
        if monitor_id in self.shared.judging.secondary:
            self.shared.judging.states.pop(monitor_id, None)
        ticker = self.tickers.pop(monitor_id, None)
        heartbeat = self.heartbeats.pop(monitor_id, None)
        self.versions.pop(monitor_id, None)
        if ticker is not None:
            ticker.stop()
        return heartbeat

    def busy(self, monitor_id: int) -> asyncio.Task[None] | None:
        """The task of the monitor's check in flight here, if one is."""
        ticker = self.tickers.get(monitor_id)
        return ticker.busy() if ticker is not None else None

    def running_as(self, monitor_id: int) -> Role:
        """The role a running monitor was started in here."""
        return "secondary" if monitor_id in self.shared.judging.secondary else "primary"

    def forget_located(self, monitor_id: int) -> None:
        """The monitor is not run here any more: its locations' state is its next owner's."""
        locations.forget(self.shared.judging, (monitor_id,))

    def forget(self, monitor_id: int) -> None:
        """A monitor gone from the table: nothing of it is kept."""
        self.forget_located(monitor_id)
        self.shared.judging.states.pop(monitor_id, None)
        self.shared.judging.names.pop(monitor_id, None)
        self.shared.judging.parents.pop(monitor_id, None)

    def _offset(self, spec: MonitorSpec) -> float:
        return stable_offset(spec.id, spec.interval_seconds, self.shared.slot)

    # -- the division of the monitors among schedulers (sharing.py) -------------------

    async def let_go(self, ids: set[int]) -> None:
        """Stop monitors that moved to another scheduler, and wait for their checks in flight
        (each ends within its timeout) so that their results are written before the next owner
        starts."""
        in_flight = []
        for monitor_id in ids:
            busy = self.busy(monitor_id)
            if busy is not None:
                in_flight.append(busy)
            self.stop(monitor_id)
        if in_flight:
            await asyncio.wait(in_flight)
        self.forget_states(ids)
        log.info("cluster.handed_over", monitors=len(ids))

    def forget_states(self, ids: set[int]) -> None:
        """The states of monitors that move (away, or here: each starts from its stored state)."""
        for monitor_id in ids:
            self.shared.judging.states.pop(monitor_id, None)
        locations.forget(self.shared.judging, ids)

    def count_handover(self, missed: int, monitors: int) -> None:
        if missed:  # one line for the handover, not one per monitor
            self._metrics.skipped.inc(missed)
            log.info("check.skipped", reason="handover", monitors=monitors, ticks=missed)

    async def each_round(self, located: Mapping[int, Sequence[str]], view: View | None) -> None:
        """After each cluster round: the other locations' views of the monitors this member is
        primary for (of those ``located``), and the status of parents run elsewhere."""
        if view is None or len(view.members) <= 1:
            return
        shared = self.shared
        primary = [m for m in located if m in self.tickers and m not in shared.judging.secondary]
        try:
            views = await locations.read_remote(self._pool, shared.judging.location, primary)
            # Not for those stopped, or turned secondary, while it read.
            shared.judging.remote.update(
                (m, v) for m, v in views.items() if m in self.tickers and m not in shared.judging.secondary
            )
            # One run here as a secondary keeps no overall state: as a parent, its stored status is
            # read, like one run elsewhere.
            running = (
                {m for m in self.tickers if m not in shared.judging.secondary}
                if shared.judging.secondary
                else self.tickers
            )
            self._foreign |= await read_foreign_parents(self._pool, shared.judging, running)
        except DB_ERRORS as exc:
            log.warning("cluster.round_read_failed", error=str(exc) or type(exc).__name__)


def stored_state(row: Any) -> State:
    """A monitor's state as the writer stored it (``monitor_state``'s columns)."""
    window = row["maintenance"]
    return replace(
        locations.stored(row),
        told=row["told"],
        told_at=row["told_at"],
        reminders=row["reminders"],
        held=row["held"],
        flips=tuple(row["flips"] or ()),
        flapping=row["flapping"],
        window=None
        if window is None
        else Window(window["id"], window["name"], datetime.fromisoformat(window["until"]), window["notify"]),
        cert_not_after=row["cert_not_after"],
    )
