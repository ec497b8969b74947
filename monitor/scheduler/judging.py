"""What a check's result means for its monitor: the state after it, as a pure step of the
state machine (``state.step``) given what the monitor's scheduler knows (its maintenance
windows, the monitors it depends on, and for a monitor checked from several locations, the
other locations' views and the quorum: ``quorum.py``), and handing it to the writer.

The tickers (``ticker.check``) and the heartbeat deadlines (``heartbeat.py``) both end here,
so confirm_after, reminders, windows, dependencies and quorums work the same for both; so do a
window's edges (``edges.py``), through :func:`cross`.

The window a result falls in is read from the calendar at the check's time, or at the latest
edge crossed if that is later (``TickerShared.edge_clock``): a check that started a moment
before a window opened and is judged after the edge's timer put its monitor in the window must
not take it out again (a stray "ended" and a second "started").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from monitor import logging as mlog
from monitor.checks.certificate import cert_not_after
from monitor.models import CheckResult, MonitorSpec
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
    Observation,
    Outcome,
    State,
    Window,
    confirm,
    edge,
    same_window,
    step,
)

if TYPE_CHECKING:
    from monitor.scheduler.ticker import TickerShared

log = mlog.get(__name__)


NOT_SEEN = Seen()


def restart_streak(state: State) -> State:
    return state if state.status == "down" else replace(state, failures=0, streak_started_at=None)


def judge(
    spec: MonitorSpec, shared: TickerShared, result: CheckResult, at: datetime
) -> tuple[State, Outcome]:
    """The monitor's state after ``result`` and what changed (``state.step``); nothing stored."""
    state = _current(spec, shared, result)
    return step(state, observe(spec, result, at, state, shared), spec.policy)


def _current(spec: MonitorSpec, shared: TickerShared, result: CheckResult) -> State:
    """The monitor's state as this result finds it, with the certificate expiry it saw."""
    state = shared.states.get(spec.id, UNKNOWN)
    expiry = cert_not_after(result.details)
    if expiry is not None and expiry != state.cert_not_after:
        state = replace(state, cert_not_after=expiry)
    return state


def judge_here(
    spec: MonitorSpec, shared: TickerShared, result: CheckResult, at: datetime
) -> tuple[State, Outcome, Located]:
    """A monitor checked from several locations: this location's confirmed state after
    ``result`` and, if this scheduler is its primary, the overall state after the quorum's
    verdict (quorum.py). A secondary returns the overall state as it was (it keeps none)."""
    overall = _current(spec, shared, result)
    obs = observe(spec, result, at, overall, shared)
    here, seen = shared.local.get(spec.id, (UNKNOWN, NOT_SEEN))
    here, changes = confirm(here, Observation(obs.ok, at, obs.degraded), location_policy(spec.policy))
    seen = seen_after(seen, here, changes, result.error)
    if spec.id in shared.secondary:
        return overall, NOTHING, Located(shared.location, here, seen, changes, primary=False)
    views = {**shared.remote.get(spec.id, {}), shared.location: seen}
    window = heard_for(spec.interval_seconds, spec.timeout_seconds)
    down_since = overall.streak_started_at if overall.status == "down" else None
    live = shared.live_locations | {shared.location}
    found = verdict(views, live, spec.quorum, spec.locations, at, window, down_since)
    if found is None:  # no quorum either way: the overall status stands, and is stepped as such
        if overall.status == "unknown":
            return overall, NOTHING, Located(shared.location, here, seen, changes)
        standing = (
            (obs.degraded or "degraded where a quorum saw it") if overall.status == "degraded" else None
        )
        judged = replace(obs, ok=overall.status != "down", degraded=standing, since=None)
        new, outcome = step(overall, judged, overall_policy(spec.policy))
        return new, outcome, Located(shared.location, here, seen, changes)
    since = found.since
    if since is not None and down_since is not None and since < down_since:
        since = None  # never before the outage began
    judged = replace(obs, ok=found.ok, degraded=found.degraded if found.ok else None, since=since)
    new, outcome = step(overall, judged, overall_policy(spec.policy))
    return (
        new,
        outcome,
        Located(shared.location, here, seen, changes, cause=None if found.ok else found.reason),
    )


def settle(
    spec: MonitorSpec,
    shared: TickerShared,
    result: CheckResult,
    new: State,
    outcome: Outcome,
    located: Located | None = None,
) -> None:
    """Keep the new state and hand the result, state and changes to the writer."""
    if located is None:
        shared.states[spec.id] = new
    else:
        shared.local[spec.id] = (located.state, located.seen)
        if located.primary:
            shared.states[spec.id] = new
        for change in located.changes:
            log.info(
                "location.state_changed", monitor_id=spec.id, location=located.location, kind=change.kind
            )
    shared.sink(spec, result, new, outcome, located)
    for change in outcome.changes:
        log.info(
            "monitor.state_changed",
            monitor_id=spec.id,
            kind=change.kind,
            status_code=result.status_code,
            error=result.error,
        )


def observe(
    spec: MonitorSpec, result: CheckResult, at: datetime, state: State, shared: TickerShared
) -> Observation:
    """The check's outcome with what the state machine weighs it in: whether a success was good
    enough, the maintenance window, a monitor it depends on being down (which also becomes the
    recorded cause of its failure)."""
    degraded = None
    if result.ok:
        expiry = state.cert_not_after
        if spec.degraded_above_ms is not None and (result.latency_ms or 0) > spec.degraded_above_ms:
            degraded = f"response time {result.latency_ms:.0f} ms above {spec.degraded_above_ms:g} ms"
        elif (
            expiry is not None
            and spec.cert_warn_days
            and (expiry - at).total_seconds() < spec.cert_warn_days * 86400
        ):
            # Rounded: a 3-day certificate checked a second after issue expires "in 3 days".
            days = max(0, round((expiry - at).total_seconds() / 86400))
            degraded = f"certificate expires in {days} day{'s' if days != 1 else ''} ({expiry:%Y-%m-%d})"
    window = window_of(spec, shared, at)
    blocked_by = None
    down = down_above(spec.depends_on, shared, {spec.id}) if spec.depends_on else None
    if down is not None:
        blocked_by = shared.names.get(down, f"monitor {down}")
        if not result.ok:
            how = "down" if shared.states[down].status == "down" else "failing"
            result.error = f"depends on {blocked_by}, which is {how} ({result.error or 'check failed'})"
    if degraded is None and window is None and blocked_by is None:
        return Observation(result.ok, at)
    return Observation(result.ok, at, degraded, window, blocked_by)


def window_of(spec: MonitorSpec, shared: TickerShared, at: datetime) -> Window | None:
    """The maintenance window the monitor is in at ``at``, or at the latest edge crossed if
    that is later (see the module docstring)."""
    if shared.calendar is None:
        return None
    when = at if at >= shared.edge_clock else shared.edge_clock
    return shared.calendar.window_at(spec.id, spec.tags, when, spec.account_id)


def cross(spec: MonitorSpec, shared: TickerShared, at: datetime) -> tuple[State, Outcome] | None:
    """The monitor's state after a window's edge at ``at`` (``state.edge``), or None when its
    window did not change; nothing stored. A monitor checked from several locations is stepped
    with the overall policy, as its primary steps the quorum's verdict."""
    state = shared.states.get(spec.id, UNKNOWN)
    window = window_of(spec, shared, at)
    if same_window(state.window, window):
        return None
    down = down_above(spec.depends_on, shared, {spec.id}) if spec.depends_on else None
    blocked_by = None if down is None else shared.names.get(down, f"monitor {down}")
    policy = overall_policy(spec.policy) if spec.locations else spec.policy
    return edge(state, Observation(state.status != "down", at, None, window, blocked_by), policy)


def down_above(parents: Sequence[int], shared: TickerShared, seen: set[int]) -> int | None:
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
        higher = down_above(shared.parents.get(parent, ()), shared, seen)
        if higher is not None:
            return higher
        state = shared.states.get(parent)
        if state is not None and (state.status == "down" or state.failures):
            return parent
    return None
