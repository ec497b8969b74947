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
