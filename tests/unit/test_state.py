"""The state machine, row by row of the tables in its docstring, then scenarios of each rule
and of each combination of maintenance, dependency and degraded with down and up; and the step
at a window's edge, without a check (``edge``)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from monitor.scheduler.calendar import ActiveWindow
from monitor.scheduler.state import (
    Alert,
    Change,
    Observation,
    Outcome,
    Policy,
    State,
    Window,
    edge,
    held_note,
    step,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)
T2 = T1 + timedelta(seconds=30)
SLOW = "response time 900 ms above 500 ms"
NIGHTLY = Window(1, "Nightly", T0 + timedelta(hours=1), notify=False)
ANNOUNCED = Window(2, "Upgrade", T0 + timedelta(hours=1), notify=True)


def ok(at: datetime = T1, **kw: Any) -> Observation:
    return Observation(True, at, **kw)


def fail(at: datetime = T1, **kw: Any) -> Observation:
    return Observation(False, at, **kw)


DOWN_TOLD = State("down", 3, T0, told="down", told_at=T0)


@pytest.mark.parametrize(
    ("before", "obs", "confirm", "recover", "after", "changes"),
    [
        pytest.param(State(), ok(), 2, 1, State("up"), [], id="unknown-ok"),
        pytest.param(State("up"), ok(), 2, 1, State("up"), [], id="up-ok"),
        pytest.param(State("up"), ok(degraded=SLOW), 2, 1, State("up", slow=1, slow_since=T1), [],
                     id="up-slow-unconfirmed"),
        pytest.param(State("up", slow=1, slow_since=T0), ok(degraded=SLOW), 2, 1,
                     State("degraded", slow=2, slow_since=T0, told="degraded"),
                     [Change("degraded", T0, SLOW)], id="up-slow-confirms"),
        pytest.param(State("degraded", slow=2, slow_since=T0, told="degraded"), ok(degraded=SLOW), 2, 1,
                     State("degraded", slow=3, slow_since=T0, told="degraded"), [], id="degraded-slow"),
        pytest.param(State("degraded", slow=2, slow_since=T0, told="degraded"), ok(), 2, 1, State("up"),
                     [Change("degraded_end", T1)], id="degraded-ok"),
        pytest.param(DOWN_TOLD, ok(), 2, 3, replace(DOWN_TOLD, successes=1, recovering_since=T1), [],
                     id="down-ok-unconfirmed"),
        pytest.param(replace(DOWN_TOLD, successes=2, recovering_since=T0), ok(), 2, 3, State("up"),
                     [Change("up", T0)], id="down-ok-confirms"),
        pytest.param(State(), fail(), 2, 1, State("unknown", 1, T1), [], id="unknown-fail-unconfirmed"),
        pytest.param(State("up"), fail(), 2, 1, State("up", 1, T1), [], id="up-fail-unconfirmed"),
        pytest.param(State("degraded", slow=2, slow_since=T0, told="degraded"), fail(), 2, 1,
                     State("degraded", 1, T1, told="degraded"), [], id="degraded-fail-unconfirmed"),
        pytest.param(State(), fail(), 1, 1, State("down", 1, T1, told="down", told_at=T1),
                     [Change("down", T1)], id="unknown-fail-confirms"),
        pytest.param(State("up", 1, T0), fail(), 2, 1, State("down", 2, T0, told="down", told_at=T1),
                     [Change("down", T0)], id="up-fail-confirms"),
        pytest.param(State("degraded", 1, T0, told="degraded"), fail(), 2, 1,
                     State("down", 2, T0, told="down", told_at=T1),
                     [Change("degraded_end", T0), Change("down", T0)], id="degraded-fail-confirms"),
        pytest.param(replace(DOWN_TOLD, successes=1, recovering_since=T0), fail(), 2, 3,
                     replace(DOWN_TOLD, failures=4), [], id="down-fail-restarts-recovery"),
    ],
)  # fmt: skip
def test_status_table(
    before: State, obs: Observation, confirm: int, recover: int, after: State, changes: list[Change]
) -> None:
    state, outcome = step(before, obs, Policy(confirm_after=confirm, recover_after=recover))
    assert state == after
    assert list(outcome.changes) == changes


@pytest.mark.parametrize(
    ("before", "obs", "after_told", "alerts"),
    [
        pytest.param(State("up", 1, T0), fail(), "down", [Alert("down", T0)], id="down-told"),
        pytest.param(State("up", 1, T0), fail(window=NIGHTLY), "up", [], id="down-held-by-window"),
        pytest.param(State("up", 1, T0), fail(blocked_by="Router"), "up", [], id="down-held-by-dependency"),
        pytest.param(
            State("down", 1, T0, held="Router was down"), fail(), "down",
            [Alert("down", T1, {"note": "Alert held while Router was down"})], id="held-down-told-when-free",
        ),
        pytest.param(DOWN_TOLD, ok(), "up", [Alert("up", T1)], id="up-told"),
        pytest.param(DOWN_TOLD, ok(window=NIGHTLY), "up", [Alert("up", T1)], id="up-told-in-window"),
        pytest.param(State("down", 1, T0, told="up", held="x"), ok(), "up", [], id="held-down-recovered"),
        pytest.param(State("up", slow=1, slow_since=T0), ok(degraded=SLOW), "degraded",
                     [Alert("degraded", T0, {"reason": SLOW})], id="degraded-told"),
        pytest.param(State("up", slow=1, slow_since=T0), ok(degraded=SLOW, window=NIGHTLY), "up", [],
                     id="degraded-held-by-window"),
        pytest.param(State("up", slow=1, slow_since=T0), ok(degraded=SLOW, blocked_by="Router"), "degraded",
                     [Alert("degraded", T0, {"reason": SLOW})], id="degraded-not-held-by-dependency"),
        pytest.param(State("degraded", told="degraded"), ok(), "up", [Alert("degraded_end", T1)],
                     id="degraded-end-told"),
        pytest.param(State("degraded", slow=1, told="up"), ok(degraded=SLOW), "degraded",
                     [Alert("degraded", T1, {"reason": SLOW})], id="held-degraded-told-after-window"),
        pytest.param(State("degraded", 1, T0, told="degraded"), fail(), "down", [Alert("down", T0)],
                     id="degraded-to-down"),
        pytest.param(State("degraded", 1, T0, told="degraded"), fail(window=NIGHTLY), "degraded", [],
                     id="degraded-to-down-in-window"),
    ],
)  # fmt: skip
def test_announcement_table(before: State, obs: Observation, after_told: str, alerts: list[Alert]) -> None:
    state, outcome = step(before, obs, Policy(confirm_after=2))
    assert state.told == after_told
    assert list(outcome.alerts) == alerts


def run(
    steps: list[tuple[float, bool, dict[str, Any]]], policy: Policy, state: State | None = None
) -> tuple[State, list[tuple[float, str]]]:
    """Checks at ``minutes`` after T0; the alerts they send, as (minutes, kind)."""
    state = state or State()
    told: list[tuple[float, str]] = []
    for minutes, good, extra in steps:
        state, outcome = step(state, Observation(good, T0 + timedelta(minutes=minutes), **extra), policy)
        told += [(minutes, a.kind) for a in outcome.alerts]
    return state, told


def minutes(start: float, end: float, good: bool, **extra: Any) -> list[tuple[float, bool, dict[str, Any]]]:
    return [(float(m), good, extra) for m in range(int(start), int(end))]


def test_reminders_count_and_spacing() -> None:
    policy = Policy(remind_every=timedelta(minutes=10), remind_max=3)
    state, told = run(minutes(0, 60, False), policy)
    assert told == [(0, "down"), (10, "remind"), (20, "remind"), (30, "remind")]
    assert state.reminders == 3


def test_reminders_stop_at_recovery_and_restart_with_the_next_outage() -> None:
    policy = Policy(remind_every=timedelta(minutes=10))
    _, told = run(minutes(0, 15, False) + minutes(15, 20, True) + minutes(20, 31, False), policy)
    assert told == [(0, "down"), (10, "remind"), (15, "up"), (20, "down"), (30, "remind")]


def test_reminders_carry_their_number() -> None:
    policy = Policy(remind_every=timedelta(minutes=5), remind_max=2)
    state = State()
    kinds = []
    for m in range(0, 11):
        state, outcome = step(state, fail(T0 + timedelta(minutes=m)), policy)
        kinds += [a.details for a in outcome.alerts if a.kind == "remind"]
    assert kinds == [{"reminder": 1, "reminder_max": 2}, {"reminder": 2, "reminder_max": 2}]


def test_no_reminder_in_a_window_or_while_a_dependency_is_down() -> None:
    policy = Policy(remind_every=timedelta(minutes=10))
    _, told = run(
        minutes(0, 5, False) + minutes(5, 25, False, window=NIGHTLY) + minutes(25, 30, False, blocked_by="R")
        + minutes(30, 31, False),
        policy,
    )  # fmt: skip
    assert told == [(0, "down"), (30, "remind")]


def test_down_across_a_window_alerts_when_it_ends() -> None:
    # Fails from minute 3 inside the window (minutes 0-10), still down after it: one down at 10.
    state, told = run(
        minutes(0, 3, True, window=NIGHTLY) + minutes(3, 10, False, window=NIGHTLY) + minutes(10, 12, False),
        Policy(confirm_after=2),
    )
    assert told == [(10, "down")]
    assert state.told == "down" and state.held is None


def test_down_that_recovers_inside_a_window_says_nothing() -> None:
    during = minutes(0, 5, False, window=NIGHTLY) + minutes(5, 12, True, window=NIGHTLY)
    _, told = run(during + minutes(12, 14, True), Policy(confirm_after=2))
    assert told == []


def test_window_start_and_end_messages_when_asked() -> None:
    _, told = run(minutes(0, 2, True) + minutes(2, 5, False, window=ANNOUNCED) + minutes(5, 7, False),
                  Policy(confirm_after=2))  # fmt: skip
    # maintenance_end comes before the held down
    assert told == [(2, "maintenance_start"), (5, "maintenance_end"), (5, "down")]


def test_dependency_holds_the_down_and_releases_it_when_the_parent_recovers() -> None:
    _, told = run(minutes(0, 5, False, blocked_by="Router") + minutes(5, 7, False), Policy())
    assert told == [(5, "down")]
    _, told = run(minutes(0, 5, False, blocked_by="Router") + minutes(5, 7, True), Policy())
    assert told == []


def test_flapping_sends_one_alert_then_silence_until_stable() -> None:
    policy = Policy(flap_threshold=3, flap_window=timedelta(minutes=10))
    flaps = [(float(m), m % 2 == 1, {}) for m in range(0, 8)]  # down at 0, up at 1, down at 2...
    state, told = run(flaps + minutes(8, 30, True), policy)
    # Told down at 2, up at 3 not told: the end of flapping, then the news it held back.
    assert told == [(0, "down"), (1, "up"), (2, "down"), (3, "flapping"), (17, "flapping_end"), (17, "up")]
    assert state.flapping is False and state.told == "up"


def test_flapping_that_ends_down_says_so_then_alerts_down() -> None:
    policy = Policy(flap_threshold=3, flap_window=timedelta(minutes=10))
    flaps = [(float(m), m % 2 == 1, {}) for m in range(0, 5)]  # ends down (minute 4)
    state, told = run(flaps + minutes(5, 20, False), policy)
    # Told down at 2, flapping from 3 (an up at 3 not told), stable down from 4: the status was
    # down when told last, so the end of flapping is the only message.
    assert told == [(0, "down"), (1, "up"), (2, "down"), (3, "flapping"), (14, "flapping_end")]
    assert state.told == "down"


def test_incidents_are_recorded_while_flapping() -> None:
    policy = Policy(flap_threshold=2, flap_window=timedelta(minutes=10))
    state = State()
    changes = []
    for m in range(0, 8):
        state, outcome = step(state, Observation(m % 2 == 1, T0 + timedelta(minutes=m)), policy)
        changes += [c.kind for c in outcome.changes]
    assert changes == ["down", "up"] * 4


# Each combination of maintenance, dependency and degraded with a down that ends up: what is told.
@pytest.mark.parametrize(
    ("during", "after", "expected"),
    [
        pytest.param({}, True, ["down", "up"], id="plain"),
        # Held and over before it was told: only that it is no longer degraded.
        pytest.param({"window": NIGHTLY}, True, ["degraded_end"], id="window"),
        pytest.param({"window": NIGHTLY}, False, ["down"], id="window-then-still-down"),
        pytest.param({"blocked_by": "R"}, True, ["degraded_end"], id="dependency"),
        pytest.param({"blocked_by": "R"}, False, ["down"], id="dependency-then-still-down"),
        pytest.param(
            {"window": NIGHTLY, "blocked_by": "R"}, True, ["degraded_end"], id="window-and-dependency"
        ),
        pytest.param({"window": NIGHTLY, "blocked_by": "R"}, False, ["down"], id="both-then-still-down"),
    ],
)
def test_combinations_with_down_and_up(during: dict[str, Any], after: bool, expected: list[str]) -> None:
    # Degraded first (told), then down under the condition, then after it either up or still down.
    steps = minutes(0, 2, True, degraded=SLOW) + minutes(2, 6, False, **during) + minutes(6, 8, after)
    if after:
        steps += minutes(8, 10, True)
    _, told = run(steps, Policy(confirm_after=2))
    assert [kind for _, kind in told] == ["degraded", *expected]


def test_degraded_by_a_condition_then_down_then_up_ends_up() -> None:
    state, told = run(
        minutes(0, 2, True, degraded=SLOW) + minutes(2, 4, False) + minutes(4, 5, True), Policy(2)
    )
    assert [kind for _, kind in told] == ["degraded", "down", "up"]
    assert state.told == "up" and state.status == "up"


def test_an_unchanged_monitor_keeps_its_state_object() -> None:
    # The hot path allocates nothing for a monitor that stays up.
    up = State("up")
    state, outcome = step(up, ok(), Policy())
    assert state is up and outcome == Outcome()


def test_a_window_read_back_after_a_restart_is_the_same_window() -> None:
    # The state read from the database holds a plain Window; a check finds the calendar's
    # ActiveWindow for the same span. Same window: no second start or end message.
    restored = State("down", 3, T0, told="down", told_at=T0, window=ANNOUNCED)
    active = ActiveWindow(ANNOUNCED.id, ANNOUNCED.name, ANNOUNCED.until, ANNOUNCED.notify, start=T0)
    for obs in (fail(window=active), ok(window=active)):
        _, outcome = step(restored, obs, Policy(confirm_after=2))
        assert not [a for a in outcome.alerts if a.kind.startswith("maintenance")], outcome


# -- a window's edge, without a check --------------------------------------------------------

HELD = "maintenance window 'Upgrade' was open"
REMIND = Policy(confirm_after=2, remind_every=timedelta(minutes=10))
LONG_AGO = T0 - timedelta(hours=1)


@pytest.mark.parametrize(
    ("before", "window", "policy", "told", "alerts"),
    [
        pytest.param(State("up"), ANNOUNCED, Policy(), "up",
                     [Alert("maintenance_start", T1, {"window": "Upgrade", "until": "2026-01-01T01:00:00Z"})],
                     id="opens-announced"),
        pytest.param(State("up"), NIGHTLY, Policy(), "up", [], id="opens-quietly"),
        pytest.param(State(), ANNOUNCED, Policy(), "up",
                     [Alert("maintenance_start", T1, {"window": "Upgrade", "until": "2026-01-01T01:00:00Z"})],
                     id="opens-before-a-first-check"),
        pytest.param(State("up", window=ANNOUNCED), None, Policy(), "up",
                     [Alert("maintenance_end", T1, {"window": "Upgrade"})], id="closes-announced"),
        pytest.param(State("down", 2, T0, held=HELD, window=ANNOUNCED), None, Policy(), "down",
                     [Alert("maintenance_end", T1, {"window": "Upgrade"}),
                      Alert("down", T1, {"note": "Alert held while maintenance window 'Upgrade' was open"})],
                     id="closes-with-the-held-down-told"),
        pytest.param(State("down", 2, T0, held=HELD, window=NIGHTLY), None, Policy(), "down",
                     [Alert("down", T1, {"note": "Alert held while maintenance window 'Upgrade' was open"})],
                     id="closes-quietly-held-down-told"),
        pytest.param(State("up", 1, T0, window=NIGHTLY), None, Policy(confirm_after=2), "up", [],
                     id="closes-on-an-unconfirmed-failure"),
        pytest.param(State("down", 2, T0, told="down", told_at=LONG_AGO, window=NIGHTLY), None, REMIND,
                     "down", [Alert("remind", T1, {"reminder": 1, "reminder_max": None})],
                     id="closes-with-a-held-reminder-due"),
        pytest.param(State("down", 2, T0, told="down", told_at=T1, window=NIGHTLY), None, REMIND, "down", [],
                     id="closes-before-a-reminder-is-due"),
        pytest.param(State("degraded", slow=2, slow_since=T0, told="up", window=NIGHTLY), None, Policy(),
                     "degraded", [Alert("degraded", T1, {"reason": None})], id="closes-with-a-held-degraded"),
        pytest.param(State("down", 2, T0, told="down", told_at=T0), NIGHTLY, REMIND, "down", [],
                     id="opens-on-a-told-down"),
    ],
)  # fmt: skip
def test_edge_table(
    before: State, window: Window | None, policy: Policy, told: str, alerts: list[Alert]
) -> None:
    state, outcome = edge(before, Observation(before.status != "down", T1, window=window), policy)
    assert list(outcome.alerts) == alerts
    assert outcome.changes == ()
    # Nothing was checked: the status and its streaks stay.
    kept = ("status", "failures", "streak_started_at", "successes", "recovering_since", "slow", "slow_since")
    assert {k: getattr(state, k) for k in kept} == {k: getattr(before, k) for k in kept}
    assert state.told == told and state.window == window
    if told == "down" and before.told != "down":
        assert state.held is None


def test_an_edge_then_the_checks_tell_nothing_twice() -> None:
    # Down inside an announced window: the window's edges say start, then end and the held
    # down; the checks around them, which see the same windows, add nothing.
    policy = Policy(confirm_after=2)
    state, told = State("up"), []
    state, outcome = edge(state, Observation(True, T0, window=ANNOUNCED), policy)
    told += [a.kind for a in outcome.alerts]
    for m in (1, 2, 3):
        state, outcome = step(state, fail(T0 + timedelta(minutes=m), window=ANNOUNCED), policy)
        told += [a.kind for a in outcome.alerts]
    assert state.held == HELD
    state, outcome = edge(state, Observation(False, T0 + timedelta(minutes=4)), policy)
    told += [a.kind for a in outcome.alerts]
    state, outcome = step(state, fail(T0 + timedelta(minutes=5)), policy)
    told += [a.kind for a in outcome.alerts]
    assert told == ["maintenance_start", "maintenance_end", "down"]


def test_one_wording_of_a_held_alert() -> None:
    assert held_note(HELD) == "Alert held while maintenance window 'Upgrade' was open"
    assert held_note("Router was down") == "Alert held while Router was down"


def test_the_plain_success_fast_path_reads_every_cleared_field() -> None:
    # state._same compares _CLEAR's fields by name, for speed: a field added to _CLEAR goes there too.
    from monitor.scheduler.state import _CLEAR

    assert set(_CLEAR) == {
        "failures",
        "successes",
        "slow",
        "streak_started_at",
        "recovering_since",
        "slow_since",
    }


@pytest.mark.parametrize(
    "state",
    [
        State(status="up"),
        State(status="up", cert_not_after=T2, told_at=T0, reminders=2, flapping=True),
        State(status="up", failures=1, streak_started_at=T0),
        State(status="up", slow=1, slow_since=T0),
        State(status="up", told="down"),
        State(status="up", held="Router was down"),
        State(status="up", flips=(T0,)),
        State(status="up", window=NIGHTLY),
        State(status="degraded"),
        State(status="unknown"),
    ],
)
@pytest.mark.parametrize("obs", [ok(), ok(degraded=SLOW), ok(window=NIGHTLY), ok(since=T0), fail()])
def test_the_quiet_shortcut_steps_as_the_general_path(state: State, obs: Observation) -> None:
    # step's first test returns an up state as it was; the general path must say the same.
    from monitor.scheduler import state as machine

    assert step(state, obs) == machine._step(state, obs, machine.DEFAULT_POLICY)
