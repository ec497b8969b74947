"""The per-monitor state machine, a pure function.

Transition table (``n`` = consecutive failures after this check, ``c`` = confirm_after,
``s`` = consecutive successes while down after this check, ``r`` = recover_after):

    status   check  condition   -> status  event
    -------  -----  ----------     ------  -----
    unknown  ok                    up      none (a first success is not news)
    up       ok                    up      none
    down     ok     s < r          down    none (recovery not yet confirmed)
    down     ok     s >= r         up      "up" (the incident ends at the streak's first success)
    unknown  fail   n < c          unknown none (not yet confirmed)
    up       fail   n < c          up      none (not yet confirmed)
    unknown  fail   n >= c         down    "down" (incident starts at the streak's first failure)
    up       fail   n >= c         down    "down"
    down     fail                  down    none (a recovering streak starts over)

One success ends a failing streak; ``c`` failures in a row confirm an outage, so one lost
packet never wakes anybody (no crying wolf) and a real outage is never missed. Likewise
``r`` successes in a row confirm a recovery (Gatus's success-threshold), so a site that
answers once between failures does not send "up" and then "down" again; the outage still
ends when the confirming streak began, since that is when visitors were served again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Status = Literal["unknown", "up", "down"]


@dataclass(frozen=True)
class State:
    status: Status = "unknown"
    failures: int = 0
    # Time of the first failing check of the current streak.
    streak_started_at: datetime | None = None
    # While down: consecutive successes so far, and the time of the first of them.
    successes: int = 0
    recovering_since: datetime | None = None


@dataclass(frozen=True)
class Transition:
    kind: Literal["down", "up"]
    # For "down": the first failing check of the confirming streak; for "up": the first
    # successful check of the confirming streak.
    at: datetime


UNKNOWN = State()
UP = State("up", 0, None)


def step(
    state: State, ok: bool, at: datetime, confirm_after: int, recover_after: int = 1
) -> tuple[State, Transition | None]:
    if ok:
        if state.status != "down":
            return UP, None  # states are immutable: every monitor that is up shares one
        successes, since = state.successes + 1, state.recovering_since or at
        if successes >= recover_after:
            return UP, Transition("up", since)
        return State("down", state.failures, state.streak_started_at, successes, since), None
    failures = state.failures + 1
    streak_started_at = state.streak_started_at or at
    if state.status != "down" and failures >= confirm_after:
        return State("down", failures, streak_started_at), Transition("down", streak_started_at)
    return State(state.status, failures, streak_started_at), None
