"""A monitor's drift-free ticks, and the check each tick runs.

Tick ``k`` is due at ``offset + k * interval`` seconds after the Unix epoch, where
``offset`` is a stable hash of the monitor id within the interval. Due times never
depend on how long earlier checks took, monitors created together are spread over
the interval, and a restarted scheduler keeps each monitor's rhythm. A check still
running at its next tick is not doubled: that tick is skipped and counted.

Offsets are whole *slots* (``MONITOR_TICK_SLOT_MS``, 100 ms by default) of the interval, so
the ticks of all monitors fall on one grid and those due in the same slot fire in one wake-up
of the loop. A wake-up of an idle process costs more CPU than a check's own work (on a
virtual machine, 65-140 us each, measured), so at 1,000 monitors every 10 s this grid cuts
the scheduler's CPU per check by more than half; the checks still start on time (their due
time is the slot), only spread over 100 steps of a 10 s interval instead of any instant.

What waits between two ticks has two shapes, picked by ``MONITOR_TICKER`` (``tickers.py``):
one task per monitor (the default) or the chain of loop timers here (``TimerTicker``). Both
share the due times, the skip rules, ``may_start`` and ``check``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from monitor import logging as mlog
from monitor.aio import Deadline, Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.connectivity import Guard
from monitor.scheduler.judging import NOT_SEEN, judge, judge_here, restart_streak, settle
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import Located, Seen, stored_time
from monitor.scheduler.state import NOTHING, UNKNOWN, Outcome, State, Window

log = mlog.get(__name__)


class ResultSink(Protocol):
    def __call__(
        self,
        spec: MonitorSpec,
        result: CheckResult,
        state: State,
        outcome: Outcome,
        located: Located | None = None,
    ) -> None: ...


class WindowFinder(Protocol):
    """Which maintenance window, if any, a monitor is in (the scheduler's calendar)."""

    def window_at(
        self, monitor_id: int, tags: Sequence[str], at: datetime, account_id: int | None = None
    ) -> Window | None: ...


# Before every instant: no edge crossed yet.
NEVER = datetime.min.replace(tzinfo=UTC)
# Beyond the check's own timeout, the most a check may take before it is cut off.
HARD_TIMEOUT_MARGIN = 5.0


def stable_offset(monitor_id: int, interval: float, slot: float = 0.0) -> float:
    """The monitor's offset within ``interval``: a stable hash of its id, rounded down to a
    whole ``slot`` (the interval is cut into ``interval // slot`` equal steps; a slot of 0,
    or one longer than the interval, leaves the hash as it is)."""
    digest = int.from_bytes(hashlib.blake2b(str(monitor_id).encode(), digest_size=8).digest(), "big")
    steps = int(interval / slot + 1e-9) if slot > 0 else 0
    if steps < 2:
        return (digest % 1_000_000) / 1_000_000 * interval
    return (digest % steps) * (interval / steps)


def first_tick(now: float, offset: float, interval: float) -> int:
    """The index of the first tick due at or after ``now`` (epoch seconds)."""
    return math.ceil((now - offset) / interval)


def always() -> bool:
    """``TickerShared.may_start`` of a scheduler alone: every tick is its own."""
    return True


@dataclass
class TickerShared:
    """What every ticker of one scheduler shares, held once rather than per monitor."""

    ctx: CheckContext
    sink: ResultSink
    metrics: SchedulerMetrics
    limit: Slots  # checks in flight
    slot: float = 0.0  # seconds; see the module docstring
    # Made in the scheduler's running loop: the loop every ticker uses, and one mapping of epoch
    # due times onto its monotonic clock, taken once so that wall-clock jumps do not bunch or
    # stall ticks, and shared so that ticks due at the same instant get the same timer deadline.
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop)
    mono_minus_wall: float = field(init=False)
    # Per-monitor state, kept across a ticker's replacement when its monitor is edited,
    # so a check still in flight from before the edit updates the same state.
    states: dict[int, State] = field(default_factory=dict)
    # Monitor names by id (what a dependant's alert calls the monitor it depends on).
    names: dict[int, str] = field(default_factory=dict)
    # Each monitor's ``depends_on`` (set by its ticker), to find a monitor down further up a chain.
    parents: dict[int, tuple[int, ...]] = field(default_factory=dict)
    calendar: WindowFinder | None = None
    # The latest window edge crossed (edges.py): a result judged after it reads its window no
    # earlier than that (judging.window_of).
    edge_clock: datetime = NEVER
    # Whether the checker itself is cut off (None: never asked, as in benchmarks).
    guard: Guard | None = None
    in_flight: set[asyncio.Task[None]] = field(default_factory=set)
    # Task tickers' sleeps by loop deadline (tickers.py): one loop timer per slot, not per monitor.
    sleepers: dict[float, list[asyncio.Future[None]]] = field(default_factory=dict)
    # Asked as each tick fires, before its check starts: False skips the tick (a scheduler whose
    # cluster lease lapsed, say after a SIGSTOP, must not check a tick another member now owns).
    may_start: Callable[[], bool] = field(default=always)
    # Monitors checked from several locations (quorum.py): this scheduler's location, the live
    # locations of the cluster, each such monitor's state and view here, the other locations'
    # views of those it is primary for (read every cluster round), and those it is secondary for.
    location: str = "default"
    live_locations: frozenset[str] = frozenset()
    local: dict[int, tuple[State, Seen]] = field(default_factory=dict)
    remote: dict[int, dict[str, Seen]] = field(default_factory=dict)
    secondary: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.mono_minus_wall = self.loop.time() - time.time()


class MonitorTicker(Protocol):
    """What the scheduler asks of a monitor's ticker, whichever its shape (``tickers.py``)."""

    spec: MonitorSpec

    def start(self, since: float | None = None) -> None: ...

    def stop(self) -> None: ...

    def busy(self) -> asyncio.Task[None] | None:
        """The task of the monitor's check in flight, if one is (to wait for its result)."""
        ...


class TimerTicker:
    """A monitor's ticks as a chain of loop timers (``call_at``), one pending at a time: no
    task, coroutine or future waits between ticks, so a monitor costs little memory while it
    waits and one timer callback when its tick comes. Each check runs in a task of its own."""

    __slots__ = ("_current", "_handle", "_k", "_offset", "_shared", "spec")

    def __init__(self, spec: MonitorSpec, shared: TickerShared) -> None:
        self.spec = spec
        self._shared = shared
        self._current: asyncio.Task[None] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._k = 0
        self._offset = 0.0

    def start(self, since: float | None = None) -> None:
        """Start ticking from the first tick due at or after ``since`` (epoch seconds, default now).

        A scheduler that is still loading its monitors passes its own start time, so every
        monitor's first check falls within one interval of the start however long loading took.
        """
        self._offset, self._k = begin(self.spec, self._shared, since)
        self._schedule()

    def stop(self) -> None:
        """Stop ticking; a check in flight runs to its end and is still written."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def busy(self) -> asyncio.Task[None] | None:
        current = self._current
        return current if current is not None and not current.done() else None

    def _schedule(self) -> None:
        shared = self._shared
        due_wall = self._offset + self._k * self.spec.interval_seconds
        self._handle = shared.loop.call_at(due_wall + shared.mono_minus_wall, self._tick)

    def _tick(self) -> None:
        spec, shared = self.spec, self._shared
        loop = shared.loop
        interval = spec.interval_seconds
        due_wall = self._offset + self._k * interval
        current = self._current
        if current is not None and not current.done():
            skip(spec, shared, "previous check still running")
        elif owned(spec, shared):
            current = self._current = loop.create_task(check(spec, shared, due_wall))
            shared.in_flight.add(current)
            current.add_done_callback(shared.in_flight.discard)
        self._k += 1
        # A loop that fell more than a tick behind skips the missed ticks rather than bursting.
        if loop.time() - (due_wall + shared.mono_minus_wall) > interval:
            behind = first_tick(time.time() - interval, self._offset, interval)
            if behind > self._k:
                skip(spec, shared, "scheduler fell behind", behind - self._k)
                self._k = behind
        self._schedule()


def begin(spec: MonitorSpec, shared: TickerShared, since: float | None) -> tuple[float, int]:
    """A ticker's start: its monitor's offset and the index of its first tick (at or after
    ``since``, epoch seconds, default now); its parents recorded for ``down_above``."""
    shared.parents[spec.id] = spec.depends_on
    offset = stable_offset(spec.id, spec.interval_seconds, shared.slot)
    return offset, first_tick(time.time() if since is None else since, offset, spec.interval_seconds)


def skip(spec: MonitorSpec, shared: TickerShared, reason: str, ticks: int | None = None) -> None:
    """Count ``ticks`` (default one) of the monitor's ticks as skipped, and say why."""
    shared.metrics.skipped.inc(1 if ticks is None else ticks)
    if ticks is None:
        log.warning("check.skipped", monitor_id=spec.id, reason=reason)
    else:
        log.warning("check.skipped", monitor_id=spec.id, reason=reason, ticks=ticks)


def owned(spec: MonitorSpec, shared: TickerShared) -> bool:
    """Whether this scheduler may check the tick firing now (``TickerShared.may_start``), asked
    at the instant the tick fires: a process frozen past its lease wakes with overdue ticks,
    which another member may own by then. A tick not owned is skipped (counted, logged at debug)."""
    if shared.may_start():
        return True
    shared.metrics.skipped.inc()
    log.debug("check.skipped", monitor_id=spec.id, reason="not owned")
    return False


async def check(spec: MonitorSpec, shared: TickerShared, due_wall: float) -> None:
    """One tick's check, due at ``due_wall`` (epoch seconds), from start to written: take a
    slot of ``shared.limit``, run it within its hard deadline, judge the result, ask the guard
    whether a failure is the checker's own network, and hand it to the writer."""
    limit = shared.limit
    if not limit.try_acquire():
        await limit.acquire()
    try:
        started = time.time()
        lateness = max(0.0, started - due_wall)
        at = datetime.fromtimestamp(started, UTC)
        if spec.locations:
            places = spec.locations
            at = stored_time(at, places.index(shared.location) if shared.location in places else len(places))
        # The check bounds itself by its timeout; this cuts off one that fails to.
        deadline = Deadline(shared.loop, spec.timeout_seconds + HARD_TIMEOUT_MARGIN)
        try:
            result = await REGISTRY.get(spec.type).run(spec, shared.ctx, at)
        except asyncio.CancelledError:
            if not deadline.caused():
                raise
            error = f"timed out after {spec.timeout_seconds:g}s"
            result = CheckResult(spec.id, at, ok=False, error=error, failure=Failure.TIMEOUT)
        except Exception as exc:  # a bug in a check must not kill the ticker
            log.exception("check.crashed", monitor_id=spec.id)
            error = f"internal error: {type(exc).__name__}"
            result = CheckResult(spec.id, at, ok=False, error=error, failure=Failure.CHECKER)
        finally:
            deadline.cancel()
        duration = time.time() - started
    finally:
        limit.release()
    result.lateness_ms = round(lateness * 1000, 3)
    # Where it was checked from: kept unless it is the default location of a monitor that names
    # none (most installations: an empty column).
    result.checked_from = shared.location if spec.locations or shared.location != "default" else None
    shared.metrics.lateness.observe(lateness)
    shared.metrics.check_duration.observe(duration)
    failure = result.failure
    blocked = failure is Failure.REFUSED
    # A target refused before any packet left says nothing of the network.
    refused = blocked or failure is Failure.INVALID_TARGET
    count(shared.metrics, result, blocked)
    guard = shared.guard
    if guard is not None and not refused:
        guard.record(spec.id, result.ok or result.answered or result.status_code is not None, started)
    located: Located | None = None
    if spec.locations:
        new, outcome, located = judge_here(spec, shared, result, at)
    else:
        new, outcome = judge(spec, shared, result, at)
    changes = outcome.changes if located is None else located.changes
    if (
        guard is not None
        and not result.ok
        and not refused
        and (guard.outage is not None or any(c.kind == "down" for c in changes))
    ):
        # Before a failure takes a monitor down (or while the checker is known to be cut
        # off): is it the checker's own network? Then the result is unknown, the streak
        # starts again, and monitors are judged from fresh checks once it is back.
        reason = await guard.cut_off(time.time())
        if reason is not None:
            result.error = f"unknown: the checker's network is down ({reason})"
            if located is None:
                new, outcome = restart_streak(shared.states.get(spec.id, UNKNOWN)), NOTHING
            else:  # this location's streak starts again; the others' verdicts stand
                here, seen = shared.local.get(spec.id, (UNKNOWN, NOT_SEEN))
                located = replace(located, state=restart_streak(here), seen=seen, changes=(), cause=None)
                new, outcome = shared.states.get(spec.id, UNKNOWN), NOTHING
    settle(spec, shared, result, new, outcome, located)


def count(metrics: SchedulerMetrics, result: CheckResult, blocked: bool = False) -> None:
    if result.ok:
        metrics.checks_up.inc()
    elif blocked:
        metrics.checks_blocked.inc()
    else:
        metrics.checks_down.inc()
