"""The per-monitor state machine, a pure function.

Transition table (``n`` = consecutive failures after this check, ``c`` = confirm_after):

    status   check  condition   -> status  event
    -------  -----  ----------     ------  -----
    unknown  ok                    up      none (a first success is not news)
    up       ok                    up      none
    down     ok                    up      "up" (closes the incident at this check)
    unknown  fail   n < c          unknown none (not yet confirmed)
    up       fail   n < c          up      none (not yet confirmed)
    unknown  fail   n >= c         down    "down" (incident starts at the streak's first failure)
    up       fail   n >= c         down    "down"
    down     fail                  down    none

One success ends a streak; ``c`` failures in a row confirm an outage, so one lost
packet never wakes anybody (no crying wolf) and a real outage is never missed.
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


@dataclass(frozen=True)
class Transition:
    kind: Literal["down", "up"]
    # For "down": the first failing check of the confirming streak; for "up": the recovering check.
    at: datetime


UNKNOWN = State()
UP = State("up", 0, None)


def step(state: State, ok: bool, at: datetime, confirm_after: int) -> tuple[State, Transition | None]:
    if ok:
        # States are immutable: every monitor that is up shares one.
        return UP, Transition("up", at) if state.status == "down" else None
    failures = state.failures + 1
    streak_started_at = state.streak_started_at or at
    if state.status != "down" and failures >= confirm_after:
        return State("down", failures, streak_started_at), Transition("down", streak_started_at)
    return State(state.status, failures, streak_started_at), None
