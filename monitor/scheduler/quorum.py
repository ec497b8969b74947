"""Checks from several locations, and the quorum that decides: pure.

A monitor may name ``locations`` (sql/015). Each of them checks it every tick (its own member,
cluster.py) and confirms its own streak with the monitor's ``confirm_after`` and
``recover_after``, exactly as a monitor checked from one place would (``state.confirm``): a
location is *down* only after ``confirm_after`` failures in a row there, *up* again after
``recover_after`` successes. That view, with when it began and why, is a :class:`Seen`.

The monitor's primary (the member in the first live location of its list) weighs every live
location's view at each of its ticks (:func:`verdict`):

    locations down >= q        -> failing (since the q-th of them went down)
    else locations up >= q     -> ok, since enough came back (degraded when q of them are)
    else                            -> no verdict: the overall state stays as it is

``q`` is the monitor's ``quorum`` (a majority of its locations when unset), but never more than
the locations that count: those with a live scheduler, and, for two intervals, the timeout and
half a minute after its latest check, one whose last scheduler left, so that a rolling restart
of a location's only scheduler does not hand the verdict to the others for a moment (where one
failing alone would page). A location gone for longer says nothing, and the others decide
without it (a quorum of two with one location left is that location's verdict, so an outage
is not missed while a location is away). Down wins a tie, which only a quorum of at most half
the locations allows (``quorum: 1`` of two: either location failing is an outage). With no
verdict, the overall state is stepped as it stands (reminders, windows and flapping go on).

The verdict then goes through the monitor's usual state machine (``state.step``) with
``confirm_after`` and ``recover_after`` of 1, since each location confirmed already, and with
everything else as configured (reminders, flapping, maintenance, dependencies): so a target
failing from one location of two gives no alert with ``quorum: 2`` and one with ``quorum: 1``
(``tests/e2e/test_quorum_locations.py``). The other locations' views reach the primary through
``location_state``, read every cluster round (a lease / 4), so a verdict is at most a round
and a write behind the location that saw it last.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache

from monitor.models import Policy
from monitor.scheduler.state import Change, State, Status


@dataclass(frozen=True, slots=True)
class Seen:
    """One location's confirmed view of a monitor."""

    status: Status = "unknown"
    # When it took this status: the first check of the streak that confirmed it.
    since: datetime | None = None
    # Why it is down or degraded.
    reason: str | None = None
    # Its latest check, for another location's view (as read from ``location_state``); None
    # for this member's own, always fresh.
    checked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    # When it became true (failing: the q-th earliest start among the locations down; ok: once
    # q were up and fewer than q down). None: not known.
    since: datetime | None
    # Failing: which locations and why ("us: status 500"); ok: why it is degraded, if it is.
    reason: str | None = None
    degraded: str | None = None


@dataclass(frozen=True, slots=True)
class Located:
    """What a check from one location adds to the writer's row: that location's confirmed state
    and view after it, its changes (``location_incidents``), and whether this member is the
    monitor's primary (it writes the overall state) and why the monitor fails, if it does."""

    location: str
    state: State
    seen: Seen
    changes: tuple[Change, ...] = ()
    primary: bool = True
    cause: str | None = None


def required(quorum: int | None, locations: Sequence[str]) -> int:
    """The monitor's quorum: as set, or a majority of its locations."""
    return quorum if quorum is not None else len(locations) // 2 + 1


def verdict(
    seen: Mapping[str, Seen],
    live: Collection[str],
    quorum: int | None,
    locations: Sequence[str],
    at: datetime | None = None,
    window: timedelta | None = None,
    down_since: datetime | None = None,
) -> Verdict | None:
    """The overall verdict at ``at`` from the views of the locations that count (see the
    module docstring). A view counts for ``window`` after its latest check (``heard``): a
    location whose only scheduler restarts keeps counting meanwhile, one gone for longer stops;
    a location with a ``live`` scheduler always counts, but a view of it older than that is
    not heard from (unknown), so a location back after a long absence is not judged by what it
    saw then. ``down_since``: when the monitor's current outage began, if it is down (when it
    ended is worked out from it)."""
    horizon = at - window if at is not None and window is not None else None
    views: list[tuple[str, Seen]] = []
    gone: list[datetime] = []  # when each location that stopped counting did
    for loc in locations:
        view = seen.get(loc, UNSEEN)
        checked = view.checked_at
        heard = horizon is None or checked is None or checked >= horizon
        if loc in live or (heard and checked is not None):
            views.append((loc, view if heard else UNSEEN))
        elif checked is not None and window is not None:
            gone.append(checked + window)
    if not views:
        return None
    q = min(required(quorum, locations), len(views))
    down = [(loc, s) for loc, s in views if s.status == "down"]
    if len(down) >= q:
        reason = "; ".join(f"{loc}: {s.reason or 'failing'}" for loc, s in down)
        since = _quorum_since(down, q)
        if since is not None and q < required(quorum, locations) and gone and since < max(gone):
            since = max(gone)  # reached when a location stopped counting, not back then
        return Verdict(False, since, reason)
    up = [(loc, s) for loc, s in views if s.status in ("up", "degraded")]
    if len(up) >= q:
        since = _recovered_since(up, q, len(down), down_since)
        slow = [(loc, s) for loc, s in up if s.status == "degraded"]
        degraded = None
        if len(slow) >= q:
            degraded = "; ".join(f"{loc}: {s.reason or 'degraded'}" for loc, s in slow)
            slow_since = _quorum_since(slow, q)
            if down_since is None and slow_since is not None and (since is None or slow_since > since):
                since = slow_since  # degraded since q of them were (an outage ends when it ends)
        return Verdict(True, since, None, degraded)
    return None


UNSEEN = Seen()


def heard_for(interval: float, timeout: float) -> timedelta:
    """How long a location's view counts after its latest check: two of its intervals, its
    timeout and half a minute (a location's scheduler checks the same ticks, so a live one's
    view is never older than an interval and a write; a restart of its only scheduler, or a
    missed tick, fits well inside)."""
    return timedelta(seconds=2 * interval + timeout + 30)


def _quorum_since(agreeing: list[tuple[str, Seen]], q: int) -> datetime | None:
    """When ``q`` of these were first all failing: the q-th earliest of their starts."""
    times = sorted(s.since for _, s in agreeing if s.since is not None)
    return times[q - 1] if len(times) >= q else None


def _recovered_since(
    up: list[tuple[str, Seen]], q: int, still_down: int, down_since: datetime | None
) -> datetime | None:
    """When the monitor was up by the quorum again: once ``q`` locations were up (the q-th
    earliest of their starts) and, since down wins, once fewer than ``q`` were down, which
    happened when enough of those that came back during the outage had come back: the
    (q - 1 - still_down + 1)-th latest of their returns."""
    times = sorted(s.since for _, s in up if s.since is not None)
    since = times[q - 1] if len(times) >= q else None
    if down_since is None:
        return since
    returns = sorted((t for t in times if t > down_since), reverse=True)
    may_stay = q - 1 - still_down
    if 0 <= may_stay < len(returns) and (since is None or returns[may_stay] > since):
        since = returns[may_stay]
    return since


def seen_after(before: Seen, state: State, changes: Sequence[Change], error: str | None) -> Seen:
    """A location's view after one of its checks confirmed ``state`` with ``changes``."""
    if not changes and state.status == before.status:
        return before
    since = changes[-1].at if changes else before.since
    reason = None
    if state.status == "down":
        reason = error
    elif state.status == "degraded":
        reason = next((c.reason for c in changes if c.kind == "degraded"), before.reason)
    return Seen(state.status, since, reason)


@lru_cache(maxsize=256)
def location_policy(policy: Policy) -> Policy:
    """What a location confirms its own streak with: the monitor's confirm and recover counts."""
    return Policy(confirm_after=policy.confirm_after, recover_after=policy.recover_after)


@lru_cache(maxsize=256)
def overall_policy(policy: Policy) -> Policy:
    """What the primary steps the overall state with: each location confirmed already."""
    return replace(policy, confirm_after=1, recover_after=1)


def stored_time(at: datetime, index: int) -> datetime:
    """The time a located check is stored at: its start, with the location's place in the
    monitor's list as the microseconds' last two digits, so that two locations checking the
    same tick in the same instant keep both rows (``checks`` is keyed by time and monitor)."""
    return at.replace(microsecond=at.microsecond - at.microsecond % 100 + index)
