"""A monitor's drift-free ticks, and the check each tick runs.

Tick ``k`` is due at ``offset + k * interval`` seconds after the Unix epoch, where
``offset`` is a stable hash of the monitor id within the interval. Due times never
depend on how long earlier checks took, monitors created together are spread over
the interval, and a restarted scheduler keeps each monitor's rhythm. A check still
running at its next tick is not doubled: that tick is skipped and counted. Nor is a check
that would start more than ``cluster.LATEST`` (0.45) of an interval after its due time (a loop
busy starting, or every one of ``MONITOR_CHECK_CONCURRENCY`` taken): it would be nearer the
next tick than its own, so it is skipped too, and consecutive checks of a monitor stay more than
half an interval apart.

Offsets are whole *slots* (``MONITOR_TICK_SLOT_MS``, 100 ms by default) of the interval, so
the ticks of all monitors fall on one grid and those due in the same slot fire in one wake-up
of the loop. A wake-up of an idle process costs more CPU than a check's own work (on a
virtual machine, 65-140 us each, measured), so at 1,000 monitors every 10 s this grid cuts
the scheduler's CPU per check by more than half; the checks still start on time (their due
time is the slot), only spread over 100 steps of a 10 s interval instead of any instant.

What waits between two ticks has two shapes, picked by ``MONITOR_TICKER`` (``tickers.py``):
one task per monitor (the default) or the chain of loop timers here (``TimerTicker``). Both
share the due times, the skip rules, ``may_start`` and ``check``.

A ticker keeps time and nothing else: it runs each check within its hard deadline, stamps how
late it started and hands the result to ``judging.conclude``, which decides what it means.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from monitor import logging as mlog
from monitor.aio import Deadline, Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.cluster import missed_ticks, too_late
from monitor.scheduler.judging import Judging, conclude
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import stored_time

log = mlog.get(__name__)


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
    """What every ticker of one scheduler shares, held once rather than per monitor: what its
    checks run with and what keeps their time; ``judging`` is where their results go."""

    ctx: CheckContext
    metrics: SchedulerMetrics
    limit: Slots  # checks in flight
    judging: Judging
    slot: float = 0.0  # seconds; see the module docstring
    # Made in the scheduler's running loop: the loop every ticker uses, and one mapping of epoch
    # due times onto its monotonic clock, taken once so that wall-clock jumps do not bunch or
    # stall ticks, and shared so that ticks due at the same instant get the same timer deadline.
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop)
    mono_minus_wall: float = field(init=False)
    in_flight: set[asyncio.Task[None]] = field(default_factory=set)
    # Task tickers' sleeps by loop deadline (tickers.py): one loop timer per slot, not per monitor.
    sleepers: dict[float, list[asyncio.Future[None]]] = field(default_factory=dict)
    # Asked as each tick fires, before its check starts: False skips the tick (a scheduler whose
    # cluster lease lapsed, say after a SIGSTOP, must not check a tick another member now owns).
    may_start: Callable[[], bool] = field(default=always)

    def __post_init__(self) -> None:
        self.mono_minus_wall = self.loop.time() - time.time()


class MonitorTicker(Protocol):
    """What the scheduler asks of a monitor's ticker, whichever its shape (``tickers.py``) and
    whichever its kind: a heartbeat's deadline (``heartbeat.HeartbeatTicker``) answers the same."""

    spec: MonitorSpec

    def start(self, since: float | None = None) -> None: ...

    def stop(self) -> None: ...

    def busy(self) -> asyncio.Task[None] | None:
        """The task of the monitor's check in flight, if one is (to wait for its result)."""
        ...

    def missed(self, last_check: float | None, since: float | None) -> int:
        """The ticks a handover passed over: between the monitor's last stored check (epoch
        seconds) and its first tick here (the first due at or after ``since``, default now)."""
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

    def missed(self, last_check: float | None, since: float | None) -> int:
        return ticks_missed(self.spec, self._shared, last_check, since)

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
    shared.judging.parents[spec.id] = spec.depends_on
    offset = stable_offset(spec.id, spec.interval_seconds, shared.slot)
    return offset, first_tick(time.time() if since is None else since, offset, spec.interval_seconds)


def ticks_missed(
    spec: MonitorSpec, shared: TickerShared, last_check: float | None, since: float | None
) -> int:
    """``MonitorTicker.missed`` of a ticking monitor, whichever the ticker's shape."""
    if last_check is None:
        return 0
    interval = spec.interval_seconds
    offset = stable_offset(spec.id, interval, shared.slot)
    first_due = offset + first_tick(time.time() if since is None else since, offset, interval) * interval
    return missed_ticks(last_check, first_due, interval)


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


async def run_check(
    spec: MonitorSpec, ctx: CheckContext, at: datetime, loop: asyncio.AbstractEventLoop
) -> CheckResult:
    """The monitor's check run once with ``ctx``, within its hard deadline: its result, a
    timeout's or a crash's (a bug in a check must not kill its caller). A trial check
    (``trials.py``) runs through here; a tick's (``check``) runs the same lines inline, a
    coroutine fewer on the path every check takes (tests/unit/test_check_cost.py)."""
    # The check bounds itself by its timeout; this cuts off one that fails to.
    deadline = Deadline(loop, spec.timeout_seconds + HARD_TIMEOUT_MARGIN)
    try:
        return await REGISTRY.get(spec.type).run(spec, ctx, at)
    except (asyncio.CancelledError, Exception) as exc:
        return failed_run(spec, at, exc, deadline)
    finally:
        deadline.cancel()


def failed_run(spec: MonitorSpec, at: datetime, exc: BaseException, deadline: Deadline) -> CheckResult:
    """What a check that raised stands for: a timeout when its hard deadline cancelled it, an
    internal error for a crash; any other cancellation goes on (raised again)."""
    if isinstance(exc, asyncio.CancelledError):
        if not deadline.caused():
            raise exc
        error = f"timed out after {spec.timeout_seconds:g}s"
        return CheckResult(spec.id, at, ok=False, error=error, failure=Failure.TIMEOUT)
    log.error("check.crashed", monitor_id=spec.id, exc_info=exc)
    error = f"internal error: {type(exc).__name__}"
    return CheckResult(spec.id, at, ok=False, error=error, failure=Failure.CHECKER)


async def check(spec: MonitorSpec, shared: TickerShared, due_wall: float) -> None:
    """One tick's check, due at ``due_wall`` (epoch seconds), from start to judged: take a slot
    of ``shared.limit`` (not for a heavy type's, which a worker runs), run it within its hard
    deadline and hand the result, with how late it started, to ``judging.conclude``."""
    limit = shared.limit
    judging = shared.judging
    location = judging.location
    kind = REGISTRY.get(spec.type)
    # A heavy check waits for a worker (``dispatch.py``) and takes no slot: a queue's wait
    # must not starve the checks this scheduler runs itself.
    heavy = kind.heavy
    if not heavy and not limit.try_acquire():
        await limit.acquire()
    try:
        started = time.time()
        lateness = max(0.0, started - due_wall)
        if too_late(lateness, spec.interval_seconds):  # it would be nearer the next tick's check
            skip(spec, shared, "scheduler fell behind")
            return
        at = datetime.fromtimestamp(started, UTC)
        if spec.locations:
            places = spec.locations
            at = stored_time(at, places.index(location) if location in places else len(places))
        deadline = Deadline(shared.loop, spec.timeout_seconds + HARD_TIMEOUT_MARGIN)
        try:  # run_check's lines, inline
            result = await kind.run(spec, shared.ctx, at)
        except (asyncio.CancelledError, Exception) as exc:
            result = failed_run(spec, at, exc, deadline)
        finally:
            deadline.cancel()
        duration = time.time() - started
    finally:
        if not heavy:
            limit.release()
    shared.metrics.lateness.observe(lateness)
    shared.metrics.check_duration.observe(duration)
    # Where it was checked from: kept unless it is the default location of a monitor that names
    # none (most installations: an empty column).
    checked_from = location if spec.locations or location != "default" else None
    # A heavy check ran on a worker's network, which says nothing of this scheduler's: the
    # connectivity guard neither counts it nor is asked about it (no ``started``).
    vouching = conclude(
        spec, result, at, judging, None if heavy else started, round(lateness * 1000, 3), checked_from
    )
    if vouching is not None:
        await vouching
