"""What a check's result means for its monitor, in one step: the result and what the
scheduler knows of the monitor (its state, its maintenance windows, the monitors it depends on,
and for a monitor checked from several locations the other locations' views and the quorum:
``quorum.py``) go in, one :class:`Judged` value comes out: the state after it (``state.step``),
the changes and alerts, the error as stored and told. Nothing rewrites the check's result.

:func:`judge` is that step, pure (a unit table: ``tests/unit/test_judging.py``);
:func:`conclude` is all a ticker hands a result to (``ticker.check``, and ``heartbeat.py`` for
pings and deadlines, so confirm_after, reminders, windows, dependencies and quorums work the
same for both): it counts the result, asks the connectivity guard about a failure that would
take the monitor down (:func:`cut_off` when the checker's own network is down), keeps the state
and hands the result and its judgement to the writer. A heavy check no worker finished
(``Failure.NOT_RUN``, ``dispatch.py``) is written and judged as unknown (:func:`not_run`): the
state as it was, nothing told. A window's edges (``edges.py``) are
judged here too, through :func:`cross`.

The window a result falls in is read from the calendar at the check's time, or at the latest
edge crossed if that is later (``Judging.edge_clock``): a check that started a moment before a
window opened and is judged after the edge's timer put its monitor in the window must not take
it out again (a stray "ended" and a second "started").

The quiet path (a monitor that stays as it was) allocates one :class:`Judged` per result, where
the ticker had a tuple of (state, outcome), and makes no call it did not make before.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from monitor import logging as mlog
from monitor.checks.certificate import cert_not_after
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.scheduler.connectivity import Guard
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import (
    Located,
    Seen,
    heard_for,
    location_policy,
    overall_policy,
    seen_after,
    verdict,
)
from monitor.scheduler.state import (
    NOTHING,
    UNKNOWN,
    Change,
    Observation,
    Outcome,
    State,
    Window,
    confirm,
    edge,
    same_window,
    step,
)

log = mlog.get(__name__)


NOT_SEEN = Seen()
# Before every instant: no edge crossed yet.
NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(slots=True)
class Judged:
    """One result judged: what is kept, stored and told after it."""

    # The monitor's state after it (for a monitor checked from several locations: the overall
    # state, as it was on a secondary), and the changes and alerts that calls for.
    state: State
    outcome: Outcome
    # The error as stored and told: the check's own, or with why its failure is blamed on a
    # monitor it depends on, or why it is unknown (the checker's network is down).
    error: str | None
    # A monitor checked from several locations: this location's state, view and changes.
    located: Located | None = None
    # Stored beside the check's own fields: how late it started, where it was checked from.
    lateness_ms: float | None = None
    checked_from: str | None = None

    @property
    def changes(self) -> tuple[Change, ...]:
        """The changes this result made to what it confirms (the location's, when located)."""
        return self.outcome.changes if self.located is None else self.located.changes

    def told(self, result: CheckResult) -> CheckResult:
        """What the alerts and incidents of this judgement read as their cause: ``result`` as
        stored, or, for a monitor failing by a quorum, with the locations' cause (this
        location's own answer may be fine)."""
        cause = self.located.cause if self.located is not None else None
        if cause is not None:
            status_code = None if result.ok else result.status_code
            return replace(
                result, error=cause, status_code=status_code, lateness_ms=self.lateness_ms,
                checked_from=self.checked_from,
            )  # fmt: skip
        return replace(result, error=self.error, lateness_ms=self.lateness_ms, checked_from=self.checked_from)


class ResultSink(Protocol):
    def __call__(self, spec: MonitorSpec, result: CheckResult, judged: Judged) -> None: ...


class WindowFinder(Protocol):
    """Which maintenance window, if any, a monitor is in (the scheduler's calendar)."""

    def window_at(
        self, monitor_id: int, tags: Sequence[str], at: datetime, account_id: int | None = None
    ) -> Window | None: ...


@dataclass
class Judging:
    """What judging reads and keeps across results, held once per scheduler: where results go,
    and the scheduler's knowledge of its monitors."""

    sink: ResultSink
    metrics: SchedulerMetrics
    # Whether the checker itself is cut off (None: never asked, as in benchmarks).
    guard: Guard | None = None
    calendar: WindowFinder | None = None
    # The latest window edge crossed (edges.py): a result judged after it reads its window no
    # earlier than that (window_of).
    edge_clock: datetime = NEVER
    # Per-monitor state, kept across a ticker's replacement when its monitor is edited,
    # so a check still in flight from before the edit updates the same state.
    states: dict[int, State] = field(default_factory=dict)
    # Monitor names by id (what a dependant's alert calls the monitor it depends on).
    names: dict[int, str] = field(default_factory=dict)
    # Each monitor's ``depends_on`` (set by its ticker), to find a monitor down further up a chain.
    parents: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Monitors checked from several locations (quorum.py): this scheduler's location, the live
    # locations of the cluster, each such monitor's state and view here, the other locations'
    # views of those it is primary for (read every cluster round), and those it is secondary for.
    location: str = "default"
    live_locations: frozenset[str] = frozenset()
    local: dict[int, tuple[State, Seen]] = field(default_factory=dict)
    remote: dict[int, dict[str, Seen]] = field(default_factory=dict)
    secondary: set[int] = field(default_factory=set)


def restart_streak(state: State) -> State:
    return state if state.status == "down" else replace(state, failures=0, streak_started_at=None)


def conclude(
    spec: MonitorSpec,
    result: CheckResult,
    at: datetime,
    judging: Judging,
    started: float | None = None,
    lateness_ms: float | None = None,
    checked_from: str | None = None,
) -> Awaitable[None] | None:
    """Count ``result``, judge it and hand it to the writer. A check's result (``started``: its
    start, epoch seconds) tells the connectivity guard whether its target answered; one whose
    failure would take the monitor down while the checker may be cut off is handed over only
    once the guard has said whether it is (returned: await it). None: handed over already."""
    failure = result.failure
    metrics = judging.metrics
    if result.ok:
        metrics.checks_up.inc()
    elif failure is Failure.NOT_RUN:  # says nothing of the target, nor of the network
        metrics.checks_not_run.inc()
        judged = judge(spec, result, at, judging, lateness_ms, checked_from)
        settle(spec, result, not_run(spec, judged, result.error, judging), judging)
        return None
    elif failure is Failure.REFUSED:
        metrics.checks_blocked.inc()
    else:
        metrics.checks_down.inc()
    # A heartbeat's result (no ``started``) says nothing of the network; nor does a target
    # refused before any packet left.
    guard = judging.guard if started is not None else None
    refused = failure is Failure.REFUSED or failure is Failure.INVALID_TARGET
    if guard is not None and not refused:
        guard.record(spec.id, result.ok or result.answered or result.status_code is not None, started or 0.0)
    judged = judge(spec, result, at, judging, lateness_ms, checked_from)
    if (
        guard is not None
        and not result.ok
        and not refused
        and (guard.outage is not None or any(c.kind == "down" for c in judged.changes))
    ):
        return _vouched(spec, result, judged, judging, guard)
    settle(spec, result, judged, judging)
    return None


async def _vouched(
    spec: MonitorSpec, result: CheckResult, judged: Judged, judging: Judging, guard: Guard
) -> None:
    """Before a failure takes a monitor down (or while the checker is known to be cut off): is
    it the checker's own network? Then the result is unknown (:func:`cut_off`)."""
    reason = await guard.cut_off(time.time())
    if reason is not None:
        judged = cut_off(spec, judged, reason, judging)
    settle(spec, result, judged, judging)


def cut_off(spec: MonitorSpec, judged: Judged, reason: str, judging: Judging) -> Judged:
    """``judged`` when the checker's own network is down (``reason``): the result is unknown,
    the streak starts again (read from ``judging`` now: other results may have been judged
    while the guard was asked), and monitors are judged from fresh checks once it is back. A
    monitor checked from several locations: this location's streak starts again, the others'
    verdicts stand."""
    error = f"unknown: the checker's network is down ({reason})"
    return unknown(spec, judged, error, judging, restart=True)


def not_run(spec: MonitorSpec, judged: Judged, error: str | None, judging: Judging) -> Judged:
    """``judged`` for a heavy check no worker finished (``Failure.NOT_RUN``): unknown, as when
    the checker is cut off, but the streak is not restarted either: the state stays as it was,
    nothing changes, nothing is told, and the error is stored as the result gives it. A monitor
    checked from several locations: this location's state and view stay as they were too."""
    return unknown(spec, judged, error, judging, restart=False)


def unknown(
    spec: MonitorSpec, judged: Judged, error: str | None, judging: Judging, *, restart: bool
) -> Judged:
    """``judged`` made unknown (:func:`cut_off`, :func:`not_run`): nothing changes or is told,
    the state is read from ``judging`` now (other results may have been judged meanwhile), its
    streak started again when ``restart``. A monitor checked from several locations: the
    overall state stands, and so do the other locations' verdicts; this location's state is
    its own, restarted when ``restart``."""
    keep = restart_streak if restart else _same
    state = judging.states.get(spec.id, UNKNOWN)
    located = judged.located
    if located is None:
        return replace(judged, state=keep(state), outcome=NOTHING, error=error)
    here, seen = judging.local.get(spec.id, (UNKNOWN, NOT_SEEN))
    located = replace(located, state=keep(here), seen=seen, changes=(), cause=None)
    return replace(judged, state=state, outcome=NOTHING, error=error, located=located)


def _same(state: State) -> State:
    return state


def judge(
    spec: MonitorSpec,
    result: CheckResult,
    at: datetime,
    judging: Judging,
    lateness_ms: float | None = None,
    checked_from: str | None = None,
) -> Judged:
    """The monitor's state after ``result`` at ``at``, what changed and what is stored; nothing
    kept, nothing written (``lateness_ms`` and ``checked_from`` are stored as given)."""
    state = judging.states.get(spec.id, UNKNOWN)
    expiry = cert_not_after(result.details) if result.details else None
    if expiry is not None and expiry != state.cert_not_after:
        state = replace(state, cert_not_after=expiry)
    down = down_above(spec.depends_on, judging, {spec.id}) if spec.depends_on else None
    obs = observe(spec, result, at, state, judging, down)
    error = result.error if down is None or result.ok else blamed(result.error, down, judging)
    if spec.locations:
        return _located(spec, error, at, state, obs, judging, lateness_ms, checked_from)
    new, outcome = step(state, obs, spec.policy)
    return Judged(new, outcome, error, None, lateness_ms, checked_from)


def blamed(error: str | None, down: int, judging: Judging) -> str:
    """A dependant's failure as stored and told: blamed on ``down``, further up its chain."""
    how = "down" if judging.states[down].status == "down" else "failing"
    return f"depends on {name_of(down, judging)}, which is {how} ({error or 'check failed'})"


def name_of(monitor_id: int, judging: Judging) -> str:
    return judging.names.get(monitor_id, f"monitor {monitor_id}")


def _located(
    spec: MonitorSpec,
    error: str | None,
    at: datetime,
    overall: State,
    obs: Observation,
    judging: Judging,
    lateness_ms: float | None,
    checked_from: str | None,
) -> Judged:
    """A monitor checked from several locations: this location's confirmed state after the
    result and, if this scheduler is its primary, the overall state after the quorum's verdict
    (quorum.py). A secondary returns the overall state as it was (it keeps none)."""
    location = judging.location
    here, seen = judging.local.get(spec.id, (UNKNOWN, NOT_SEEN))
    here, changes = confirm(here, Observation(obs.ok, at, obs.degraded), location_policy(spec.policy))
    seen = seen_after(seen, here, changes, error)
    if spec.id in judging.secondary:
        located = Located(location, here, seen, changes, primary=False)
        return Judged(overall, NOTHING, error, located, lateness_ms, checked_from)
    views = {**judging.remote.get(spec.id, {}), location: seen}
    window = heard_for(spec.interval_seconds, spec.timeout_seconds)
    down_since = overall.streak_started_at if overall.status == "down" else None
    live = judging.live_locations | {location}
    found = verdict(views, live, spec.quorum, spec.locations, at, window, down_since)
    if found is None:  # no quorum either way: the overall status stands, and is stepped as such
        if overall.status == "unknown":
            return Judged(
                overall, NOTHING, error, Located(location, here, seen, changes), lateness_ms, checked_from
            )
        standing = (
            (obs.degraded or "degraded where a quorum saw it") if overall.status == "degraded" else None
        )
        judged = replace(obs, ok=overall.status != "down", degraded=standing, since=None)
        new, outcome = step(overall, judged, overall_policy(spec.policy))
        return Judged(new, outcome, error, Located(location, here, seen, changes), lateness_ms, checked_from)
    since = found.since
    if since is not None and down_since is not None and since < down_since:
        since = None  # never before the outage began
    judged = replace(obs, ok=found.ok, degraded=found.degraded if found.ok else None, since=since)
    new, outcome = step(overall, judged, overall_policy(spec.policy))
    located = Located(location, here, seen, changes, cause=None if found.ok else found.reason)
    return Judged(new, outcome, error, located, lateness_ms, checked_from)


def settle(spec: MonitorSpec, result: CheckResult, judged: Judged, judging: Judging) -> None:
    """Keep the new state and hand the result and its judgement to the writer."""
    located = judged.located
    if located is None:
        judging.states[spec.id] = judged.state
    else:
        judging.local[spec.id] = (located.state, located.seen)
        if located.primary:
            judging.states[spec.id] = judged.state
        for change in located.changes:
            log.info(
                "location.state_changed", monitor_id=spec.id, location=located.location, kind=change.kind
            )
    judging.sink(spec, result, judged)
    for change in judged.outcome.changes:
        log.info(
            "monitor.state_changed",
            monitor_id=spec.id,
            kind=change.kind,
            status_code=result.status_code,
            error=judged.error,
        )


def observe(
    spec: MonitorSpec, result: CheckResult, at: datetime, state: State, judging: Judging, down: int | None
) -> Observation:
    """The check's outcome with what the state machine weighs it in: whether a success was good
    enough, the maintenance window, a monitor it depends on being down (``down``, from
    :func:`down_above`; :func:`blamed` makes it the recorded cause of its failure)."""
    degraded = degraded_by(spec, result, state.cert_not_after, at) if result.ok else None
    window = window_of(spec, judging, at)
    blocked_by = None if down is None else name_of(down, judging)
    if degraded is None and window is None and blocked_by is None:
        return Observation(result.ok, at)
    return Observation(result.ok, at, degraded, window, blocked_by)


def degraded_by(spec: MonitorSpec, result: CheckResult, expiry: datetime | None, at: datetime) -> str | None:
    """Why a successful ``result`` is not good enough (the check says so itself, as
    ``details["degraded"]``: a page-speed assertion of degraded severity; too slow; the
    certificate, which expires at ``expiry``, expires within ``cert_warn_days``), or None; pure."""
    details = result.details
    if details is not None:
        said = details.get("degraded")
        if isinstance(said, str) and said:
            return said
    if spec.degraded_above_ms is not None and (result.latency_ms or 0) > spec.degraded_above_ms:
        return f"response time {result.latency_ms:.0f} ms above {spec.degraded_above_ms:g} ms"
    left = (expiry - at).total_seconds() if expiry is not None else None
    if expiry is not None and left is not None and spec.cert_warn_days and left < spec.cert_warn_days * 86400:
        # Rounded: a 3-day certificate checked a second after issue expires "in 3 days".
        days = max(0, round(left / 86400))
        return f"certificate expires in {days} day{'s' if days != 1 else ''} ({expiry:%Y-%m-%d})"
    return None


def window_of(spec: MonitorSpec, judging: Judging, at: datetime) -> Window | None:
    """The maintenance window the monitor is in at ``at``, or at the latest edge crossed if
    that is later (see the module docstring)."""
    calendar = judging.calendar
    if calendar is None:
        return None
    when = at if at >= judging.edge_clock else judging.edge_clock
    return calendar.window_at(spec.id, spec.tags, when, spec.account_id)


def cross(spec: MonitorSpec, judging: Judging, at: datetime) -> tuple[State, Outcome] | None:
    """The monitor's state after a window's edge at ``at`` (``state.edge``), or None when its
    window did not change; nothing stored. A monitor checked from several locations is stepped
    with the overall policy, as its primary steps the quorum's verdict."""
    state = judging.states.get(spec.id, UNKNOWN)
    window = window_of(spec, judging, at)
    if same_window(state.window, window):
        return None
    down = down_above(spec.depends_on, judging, {spec.id}) if spec.depends_on else None
    blocked_by = None if down is None else name_of(down, judging)
    policy = overall_policy(spec.policy) if spec.locations else spec.policy
    return edge(state, Observation(state.status != "down", at, None, window, blocked_by), policy)


def down_above(parents: Sequence[int], judging: Judging, seen: set[int]) -> int | None:
    """The monitor furthest up the chains above ``parents`` that is down or failing, or None:
    what a dependant's failure is blamed on. A site that depends on a server that depends on a
    router is held by the router's outage, even while the server's own failures are not yet
    confirmed, as the router's DOWN (which lists the site among those it covers) promised.

    Failing counts too (a streak not yet confirmed): when the router dies, the router and
    everything behind it fail in the same second, and the order their checks happen to run in
    must not decide who pages; the dependant that confirmed first waits for the router's
    verdict. Should the router answer again unconfirmed, the hold lifts and a dependant still
    down alerts then."""
    for parent in parents:
        if parent in seen:
            continue
        seen.add(parent)
        higher = down_above(judging.parents.get(parent, ()), judging, seen)
        if higher is not None:
            return higher
        state = judging.states.get(parent)
        if state is not None and (state.status == "down" or state.failures):
            return parent
    return None
