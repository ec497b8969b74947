"""The per-monitor state machine, a pure function.

A check moves two things. The monitor's **status** is the truth as visitors saw it, and its
changes are recorded (incidents, degradations) whatever else is going on. What the monitor's
channels were last **told** (``announced``) follows the status only when nothing holds the
news back: a maintenance window, a monitor it depends on being down, or flapping. When the
hold lifts and the status still differs from what was said, it is said then; when the status
came back in the meantime, nothing is said at all.

Status (``n`` = consecutive failures after this check, ``c`` = confirm_after, ``s`` =
consecutive successes while down, ``r`` = recover_after, ``w`` = consecutive successful but
degraded checks (slow, or a certificate near expiry)):

    status    check          condition   -> status    change
    --------  -------------  ---------      --------  ------------------------------------
    unknown   ok                            up        none (a first success is not news)
    up        ok                            up        none
    up        ok, degraded   w < c          up        none (not yet confirmed)
    up        ok, degraded   w >= c         degraded  "degraded" (from the streak's first)
    degraded  ok, degraded                  degraded  none
    degraded  ok                            up        "degraded_end"
    down      ok             s < r          down      none (recovery not yet confirmed)
    down      ok             s >= r         up        "up" (the incident ends at the streak's first success)
    any       fail           n < c          same      none (not yet confirmed)
    unknown   fail           n >= c         down      "down" (from the streak's first failure)
    up        fail           n >= c         down      "down"
    degraded  fail           n >= c         down      "degraded_end", "down"
    down      fail                          down      none (a recovering streak starts over)

Announcements (after the status; ``hold`` = in a maintenance window, or a monitor it depends
on is down; nothing is announced at all while flapping):

    status    told      condition                     -> alert (and told becomes)
    --------  --------  ---------------------------      -----------------------------------
    down      not down  no hold                          "down" (with why it was held, if it was)
    down      not down  hold                             none: held
    down      down      remind_every passed, no hold     "remind" (at most remind_max)
    up/degr.  down                                       "up" (also in a window: good news)
    degraded  up        not in a window                  "degraded"
    up        degraded                                   "degraded_end"
    unknown   any                                        none

Flapping: every change between down and not down is remembered for ``flap_window``; more than
``flap_threshold`` of them within it sends one "flapping" alert, then none until no change has
happened for a whole window ("flapping_end", with the status then, followed by what the
announcements above then say). Windows: a monitor entering or leaving a window whose owner
asked for messages gets "maintenance_start" / "maintenance_end" (before any held alert).

A window opens and closes at its own instants, not at a check: :func:`edge` is the step at such
an instant. The status and its streaks stay as they are (nothing was checked); the window
changes, and the announcements follow from it as after a check: at a window's end a held down
is told ("Alert held while maintenance window 'Nightly' was open"), a reminder held by the
window is sent if it is due, a held degraded is told.

``c`` failures in a row confirm an outage, so one lost packet never wakes anybody (no crying
wolf) and a real outage is never missed. Likewise ``r`` successes in a row confirm a recovery
(Gatus's success-threshold), so a site that answers once between failures does not send "up"
and then "down" again; the outage still ends when the confirming streak began, since that is
when visitors were served again. Degraded is not downtime: the site serves its visitors, only
not well enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from monitor.models import DEFAULT_POLICY, Policy
from monitor.times import rfc3339

Status = Literal["unknown", "up", "degraded", "down"]
Told = Literal["up", "degraded", "down"]


@dataclass(frozen=True)
class Window:
    """The maintenance window a check fell in."""

    id: int
    name: str
    until: datetime
    notify: bool = False


@dataclass(frozen=True)
class Observation:
    """One check's outcome and the circumstances the state machine weighs it in."""

    ok: bool
    at: datetime
    # Why this successful check is not good enough (slow, certificate near expiry); None if it is.
    degraded: str | None = None
    window: Window | None = None
    # The name of a monitor this one depends on that is down now.
    blocked_by: str | None = None
    # When this outcome began, if before ``at``: a quorum of locations agreeing (quorum.py)
    # started failing or succeeding then, and an incident starts (or ends) there.
    since: datetime | None = None


@dataclass(frozen=True)
class State:
    status: Status = "unknown"
    failures: int = 0
    # Time of the first failing check of the current streak.
    streak_started_at: datetime | None = None
    # While down: consecutive successes so far, and the time of the first of them.
    successes: int = 0
    recovering_since: datetime | None = None
    # While not down: consecutive degraded successes, and the time of the first of them.
    slow: int = 0
    slow_since: datetime | None = None
    # What the channels were last told; when (the last down or reminder); reminders sent since.
    told: Told = "up"
    told_at: datetime | None = None
    reminders: int = 0
    # Why a down is not told yet ("maintenance window 'Nightly' was open", "Router was down").
    held: str | None = None
    # Times of changes between down and not down within the flap window; flapping now?
    flips: tuple[datetime, ...] = ()
    flapping: bool = False
    # The maintenance window of the last check, if any.
    window: Window | None = None
    # Not judged here, kept with the state to be stored with it: the certificate's expiry as
    # last seen in a TLS handshake (a reused connection shows none).
    cert_not_after: datetime | None = None


@dataclass(frozen=True)
class Change:
    """A change of status, recorded whatever is announced: opens or closes an incident
    ("down", "up") or a degradation ("degraded", "degraded_end")."""

    kind: Literal["down", "up", "degraded", "degraded_end"]
    # When it happened (the first check of the confirming streak).
    at: datetime
    reason: str | None = None


@dataclass(frozen=True)
class Alert:
    """Something to tell the monitor's channels."""

    kind: str  # down, up, remind, degraded, degraded_end, flapping, flapping_end, maintenance_*
    at: datetime
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    changes: tuple[Change, ...] = ()
    alerts: tuple[Alert, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes or self.alerts)


UNKNOWN = State()
NOTHING = Outcome()


def step(state: State, obs: Observation, policy: Policy = DEFAULT_POLICY) -> tuple[State, Outcome]:
    """The state after one check, the changes it makes and the alerts they call for."""
    if (  # the commonest case of the quiet one below, without its calls: up, staying up as it was
        obs.ok
        and obs.degraded is None
        and obs.window is None
        and state.status == "up"
        and state.told == "up"
        and state.window is None
        and state.held is None
        and not state.flips
        and state.failures == 0
        and state.successes == 0
        and state.slow == 0
        and state.streak_started_at is None
        and state.recovering_since is None
        and state.slow_since is None
    ):
        return state, NOTHING
    return _step(state, obs, policy)


def _step(state: State, obs: Observation, policy: Policy) -> tuple[State, Outcome]:
    """:func:`step` without its shortcut (tests/unit/test_state.py compares the two)."""
    status, changes, fields = _judge(state, obs, policy)
    quiet = (
        not changes
        and state.told == _told(status)
        and not state.flips
        and state.held is None
        and same_window(state.window, obs.window)
        and not (policy.remind_every and status == "down")
    )
    if quiet:  # the common case, a monitor that stays as it was: no allocation beyond the state
        return (state if _same(state, status, fields) else replace(state, status=status, **fields)), NOTHING
    return _after(state, obs, policy, status, changes, fields)


def edge(state: State, obs: Observation, policy: Policy = DEFAULT_POLICY) -> tuple[State, Outcome]:
    """The state at a window's edge (``obs.window``: the window open from ``obs.at`` on, or
    None), without a check: the status and streaks stay, ``obs.ok`` is not read; the window's
    notices and what the end of its hold lets out, as :func:`step` would say them."""
    return _after(state, obs, policy, state.status, [], {})


def _after(
    state: State,
    obs: Observation,
    policy: Policy,
    status: Status,
    changes: list[Change],
    fields: dict[str, Any],
) -> tuple[State, Outcome]:
    """What :func:`step` and :func:`edge` share once the status is known: the window, flapping
    and the announcements."""
    at = obs.at
    alerts: list[Alert] = []
    new = replace(state, status=status, **fields)

    if not same_window(new.window, obs.window):
        if new.window is not None and new.window.notify:
            alerts.append(Alert("maintenance_end", at, {"window": new.window.name}))
        if obs.window is not None and obs.window.notify:
            until = rfc3339(obs.window.until)
            alerts.append(Alert("maintenance_start", at, {"window": obs.window.name, "until": until}))
        new = replace(new, window=obs.window)

    flipped = any(c.kind in ("down", "up") for c in changes)
    if policy.flap_threshold is not None or new.flips:
        since = at - policy.flap_window
        flips = tuple(t for t in new.flips if t > since) + ((at,) if flipped else ())
        new = replace(new, flips=flips)
        threshold = policy.flap_threshold
        if not new.flapping and threshold is not None and len(flips) > threshold:
            window_minutes = round(policy.flap_window.total_seconds() / 60)
            alerts.append(Alert("flapping", at, {"changes": len(flips), "window_minutes": window_minutes}))
            new = replace(new, flapping=True)
        elif new.flapping and not flips:
            window_minutes = round(policy.flap_window.total_seconds() / 60)
            alerts.append(Alert("flapping_end", at, {"status": status, "window_minutes": window_minutes}))
            new = replace(new, flapping=False)

    if not new.flapping:
        new = _announce(new, obs, policy, changes, alerts)
    return new, Outcome(tuple(changes), tuple(alerts))


def confirm(state: State, obs: Observation, policy: Policy) -> tuple[State, tuple[Change, ...]]:
    """The status part of :func:`step` alone, without announcements: what one location of a
    monitor checked from several confirms on its own (quorum.py)."""
    status, changes, fields = _judge(state, obs, policy)
    new = state if _same(state, status, fields) else replace(state, status=status, **fields)
    return new, tuple(changes)


def _judge(state: State, obs: Observation, policy: Policy) -> tuple[Status, list[Change], dict[str, Any]]:
    """The status after the check, its changes, and the streak fields to set."""
    at = obs.since or obs.at
    if obs.ok:
        if state.status == "down":
            successes, since = state.successes + 1, state.recovering_since or at
            if successes >= policy.recover_after:
                return "up", [Change("up", since)], _CLEAR
            return (
                "down",
                [],
                {
                    **_CLEAR_SLOW,
                    "successes": successes,
                    "recovering_since": since,
                    "failures": state.failures,
                    "streak_started_at": state.streak_started_at,
                },
            )
        if obs.degraded is None:
            if state.status == "degraded":
                return "up", [Change("degraded_end", at)], _CLEAR
            return "up", [], _CLEAR
        slow, since = state.slow + 1, state.slow_since or at
        fields = {**_CLEAR_FAIL, "slow": slow, "slow_since": since}
        if state.status != "degraded" and slow >= policy.confirm_after:
            return "degraded", [Change("degraded", since, obs.degraded)], fields
        return ("degraded" if state.status == "degraded" else "up"), [], fields
    failures, started = state.failures + 1, state.streak_started_at or at
    fields = {
        **_CLEAR_SLOW,
        "failures": failures,
        "streak_started_at": started,
        "successes": 0,
        "recovering_since": None,
    }
    if state.status != "down" and failures >= policy.confirm_after:
        changes = [Change("degraded_end", started)] if state.status == "degraded" else []
        return "down", [*changes, Change("down", started)], fields
    return state.status, [], fields


_CLEAR_FAIL: dict[str, Any] = {
    "failures": 0,
    "streak_started_at": None,
    "successes": 0,
    "recovering_since": None,
}
_CLEAR_SLOW: dict[str, Any] = {"slow": 0, "slow_since": None}
_CLEAR: dict[str, Any] = {**_CLEAR_FAIL, **_CLEAR_SLOW}


def _same(state: State, status: Status, fields: dict[str, Any]) -> bool:
    if state.status != status:
        return False
    if fields is _CLEAR:  # a plain success, most checks: _CLEAR's fields read as attributes
        return (
            state.failures == 0
            and state.successes == 0
            and state.slow == 0
            and state.streak_started_at is None
            and state.recovering_since is None
            and state.slow_since is None
        )
    return all(getattr(state, k) == v for k, v in fields.items())


def same_window(a: Window | None, b: Window | None) -> bool:
    """The same window, by its fields whatever the class: a state read back after a restart
    holds a plain ``Window``, a check finds the calendar's subclass, and dataclasses of two
    classes never compare equal (a restart inside a window would announce it again)."""
    if a is None or b is None:
        return a is b
    return (a.id, a.name, a.until, a.notify) == (b.id, b.name, b.until, b.notify)


def held_by_window(name: str) -> str:
    """Why a down is held in a window: the ``held`` of the state."""
    return f"maintenance window '{name}' was open"


def held_note(held: str) -> str:
    """The note a held down carries when it is told at last, the one wording of it (the
    channels show it as it is; docs/webhooks.md quotes it): "Alert held while maintenance
    window 'Nightly' was open", "Alert held while Router was down"."""
    return f"Alert held while {held}"


def _told(status: Status) -> Told:
    return "up" if status == "unknown" else status


def _announce(
    state: State, obs: Observation, policy: Policy, changes: list[Change], alerts: list[Alert]
) -> State:
    at, status = obs.at, state.status
    if status == "unknown":
        return state
    hold = held_by_window(obs.window.name) if obs.window else None
    if hold is None and obs.blocked_by is not None:
        hold = f"{obs.blocked_by} was down"
    change_at = {c.kind: c.at for c in changes}
    if status == "down":
        if state.told != "down":
            if hold is not None:
                return replace(state, held=state.held or hold)
            details = {"note": held_note(state.held)} if state.held else {}
            alerts.append(Alert("down", change_at.get("down", at), details))
            return replace(state, told="down", told_at=at, reminders=0, held=None)
        due = (
            policy.remind_every is not None
            and hold is None
            and (policy.remind_max is None or state.reminders < policy.remind_max)
            and (state.told_at is None or at - state.told_at >= policy.remind_every)
        )
        if due:
            n = state.reminders + 1
            alerts.append(Alert("remind", at, {"reminder": n, "reminder_max": policy.remind_max}))
            return replace(state, told_at=at, reminders=n)
        return state
    state = replace(state, held=None)
    if state.told == "down":
        alerts.append(Alert("up", change_at.get("up", at)))
        state = replace(state, told="up", told_at=None, reminders=0)
    if status == "degraded" and state.told == "up" and obs.window is None:
        reason = next((c.reason for c in changes if c.kind == "degraded"), None) or obs.degraded
        alerts.append(Alert("degraded", change_at.get("degraded", at), {"reason": reason}))
        state = replace(state, told="degraded")
    elif status == "up" and state.told == "degraded":
        alerts.append(Alert("degraded_end", change_at.get("degraded_end", at)))
        state = replace(state, told="up")
    return state
