"""The state machine, row by row of the transition table in its docstring."""

from datetime import UTC, datetime, timedelta

import pytest

from monitor.scheduler.state import State, Transition, step

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)


@pytest.mark.parametrize(
    ("before", "ok", "confirm", "after", "transition"),
    [
        pytest.param(State(), True, 2, State("up"), None, id="unknown-ok"),
        pytest.param(State("up"), True, 2, State("up"), None, id="up-ok"),
        pytest.param(State("down", 3, T0), True, 2, State("up"), Transition("up", T1), id="down-ok"),
        pytest.param(State(), False, 2, State("unknown", 1, T1), None, id="unknown-fail-unconfirmed"),
        pytest.param(State("up"), False, 2, State("up", 1, T1), None, id="up-fail-unconfirmed"),
        pytest.param(
            State("up", 1, T0), False, 2, State("down", 2, T0), Transition("down", T0), id="up-fail-confirms"
        ),
        pytest.param(
            State(), False, 1, State("down", 1, T1), Transition("down", T1), id="unknown-fail-confirm-1"
        ),
        pytest.param(State("down", 2, T0), False, 2, State("down", 3, T0), None, id="down-fail"),
    ],
)
def test_transition_table(
    before: State, ok: bool, confirm: int, after: State, transition: Transition | None
) -> None:
    assert step(before, ok, T1, confirm) == (after, transition)


def test_one_success_breaks_a_streak() -> None:
    state, _ = step(State("up"), False, T0, 3)
    state, _ = step(state, False, T0, 3)
    state, _ = step(state, True, T1, 3)
    state, transition = step(state, False, T1, 3)
    assert transition is None and state.failures == 1


T2 = T1 + timedelta(seconds=30)


@pytest.mark.parametrize(
    ("before", "ok", "recover", "after", "transition"),
    [
        pytest.param(State("down", 3, T0), True, 1, State("up"), Transition("up", T2), id="down-ok-r1"),
        pytest.param(
            State("down", 3, T0), True, 3, State("down", 3, T0, 1, T2), None, id="down-ok-unconfirmed"
        ),
        pytest.param(
            State("down", 3, T0, 1, T1),
            True,
            3,
            State("down", 3, T0, 2, T1),
            None,
            id="down-ok-still-unconfirmed",
        ),
        pytest.param(
            State("down", 3, T0, 2, T1), True, 3, State("up"), Transition("up", T1), id="down-ok-confirms"
        ),
        pytest.param(
            State("down", 3, T0, 2, T1),
            False,
            3,
            State("down", 4, T0),
            None,
            id="down-fail-restarts-recovery",
        ),
        pytest.param(State("up"), True, 3, State("up"), None, id="up-ok-needs-no-confirmation"),
        pytest.param(State(), True, 3, State("up"), None, id="unknown-ok-is-up-at-once"),
    ],
)
def test_recovery_table(
    before: State, ok: bool, recover: int, after: State, transition: Transition | None
) -> None:
    # The incident ends at the confirming streak's first success (T1 in down-ok-confirms).
    assert step(before, ok, T2, 2, recover) == (after, transition)


def test_a_success_between_failures_sends_nothing_with_recover_after() -> None:
    # Down; one good answer between failures; then three good ones: one "up", at the third's start.
    state, transition = step(State(), False, T0, 1, 3)
    assert transition == Transition("down", T0)
    events = []
    for at, ok in [(T1, True), (T1 + timedelta(seconds=1), False), (T2, True),
                   (T2 + timedelta(seconds=1), True), (T2 + timedelta(seconds=2), True)]:  # fmt: skip
        state, transition = step(state, ok, at, 1, 3)
        events.append(transition)
    assert events == [None, None, None, None, Transition("up", T2)] and state == State("up")
