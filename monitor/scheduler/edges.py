"""Maintenance windows at their edges: one loop timer per window, at its next start or end.

A check used to be what noticed a window: ``maintenance.started`` came with the first check
inside it and a held DOWN with the first check after it (14 s and 29 s late, seen on a monitor
checked every 30 s; up to an interval late in general). Now each window of the calendar has one
pending loop timer, at its next edge (``Calendar.edges_after``); when it fires, each monitor this
scheduler runs that the window covers is stepped at that instant with ``state.edge`` (through
``judging.cross``): its window changes, and the notices and what the end of the hold lets out (a
held down, a reminder that fell due inside) go to the writer at once with the monitor's state,
stored in ``monitor_state`` like a check's (``Writer.add_edge``), so that neither a restart nor
the monitor's next owner says them again. A timer per window, not per monitor: a window over
10,000 monitors is one timer, and a scheduler with no window has none.

Only the scheduler that runs a monitor (its primary, for one checked from several locations)
steps it, and only while its lease holds (``TickerShared.may_start``), so schedulers sharing
the monitors send one notice per edge between them. A monitor that starts here (the scheduler's
start, an edit, a takeover) is stepped at once when its stored window is not the calendar's
(``sweep``): an edge that passed while nobody ran it, or while its old owner handed it over, is
said then, once, by its new owner; every load of the calendar sweeps all the monitors, so a
window made, moved or deleted while open is said at once too. A check still notices a changed
window (``judging.observe``), so an edge that no timer could act on (a lapsed lease) is said by
the next check, as before.

Edges fire on the loop's clock through the mapping the tickers use (``mono_minus_wall``), and
each crossed edge moves ``Judging.edge_clock`` on (see ``judging``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Protocol

from monitor import logging as mlog
from monitor.models import MonitorSpec
from monitor.scheduler.calendar import Calendar
from monitor.scheduler.judging import cross
from monitor.scheduler.state import Outcome, State
from monitor.scheduler.ticker import TickerShared

log = mlog.get(__name__)


class EdgeSink(Protocol):
    """Where a monitor's state after an edge goes (``Writer.add_edge``)."""

    def __call__(self, spec: MonitorSpec, state: State, outcome: Outcome, at: datetime) -> None: ...


class Running(Protocol):
    """A running monitor's ticker, as far as edges need it."""

    @property
    def spec(self) -> MonitorSpec: ...


class Edges:
    """The timers at the windows' edges of one scheduler, and the monitors they step."""

    def __init__(
        self,
        calendar: Calendar,
        shared: TickerShared,
        running: Callable[[], Mapping[int, Running]],
        sink: EdgeSink,
    ) -> None:
        self._calendar = calendar
        self._shared = shared
        self._running = running
        self._sink = sink
        self._timers: dict[int, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._timers)

    def now(self) -> datetime:
        """The wall-clock time by the loop's clock, as ticks and edges are due."""
        shared = self._shared
        return datetime.fromtimestamp(shared.loop.time() - shared.mono_minus_wall, UTC)

    def arm(self) -> None:
        """One timer per window at its next edge after now (again after each load of the
        calendar, which may have added, moved or dropped any)."""
        self.close()
        for window_id, when in self._calendar.edges_after(self.now()).items():
            self._arm(window_id, when)

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def sweep(self, specs: Iterable[MonitorSpec]) -> int:
        """Step those of ``specs`` whose window now is not the one their state holds; how many."""
        if not self._shared.may_start():
            return 0
        at = self.now()
        self._advance(at)
        return self._step(specs, at)

    def _arm(self, window_id: int, when: datetime) -> None:
        shared = self._shared
        deadline = when.timestamp() + shared.mono_minus_wall
        self._timers[window_id] = shared.loop.call_at(deadline, self._fire, window_id, when)

    def _fire(self, window_id: int, at: datetime) -> None:
        self._timers.pop(window_id, None)
        self._advance(at)
        if self._shared.may_start():
            stepped = self._step(self._covered(window_id), at)
            log.info("maintenance.edge", window_id=window_id, at=at.isoformat(), monitors=stepped)
        else:  # another member may run these monitors now; their next check says it otherwise
            log.warning("maintenance.edge_skipped", window_id=window_id, reason="not owned")
        following = self._calendar.edge_after(window_id, at)
        if following is not None:
            self._arm(window_id, following)

    def _covered(self, window_id: int) -> list[MonitorSpec]:
        """The running monitors the window applies to: those it names, looked up, and with tags
        every running monitor looked at (once per edge)."""
        running = self._running()
        named, tagged = self._calendar.reach(window_id)
        tickers = running.values() if tagged else (running[m] for m in named if m in running)
        covers = self._calendar.covers
        return [t.spec for t in tickers if covers(window_id, t.spec.id, t.spec.tags, t.spec.account_id)]

    def _advance(self, at: datetime) -> None:
        judging = self._shared.judging
        if at > judging.edge_clock:
            judging.edge_clock = at

    def _step(self, specs: Iterable[MonitorSpec], at: datetime) -> int:
        judging, touches = self._shared.judging, self._calendar.touches
        stepped = 0
        for spec in specs:
            if spec.id in judging.secondary:  # its primary, elsewhere, keeps the overall state
                continue
            state = judging.states.get(spec.id)
            if (state is None or state.window is None) and not touches(spec.id, spec.tags):
                continue  # in no window, and none could apply: most monitors of a sweep
            crossed = cross(spec, judging, at)
            if crossed is None:
                continue
            state, outcome = crossed
            judging.states[spec.id] = state
            self._sink(spec, state, outcome, at)
            stepped += 1
        return stepped
