"""The quorum of locations (monitor/scheduler/quorum.py), as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from monitor.scheduler.quorum import Seen, Verdict, fresh_after, required, seen_after, stored_time, verdict
from monitor.scheduler.state import UNKNOWN, Change, Observation, Policy, State, confirm, step

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def t(seconds: int) -> datetime:
    return T + timedelta(seconds=seconds)


UP0 = Seen("up", t(0))
EU_DOWN = Seen("down", t(10), "status 500")
US_DOWN = Seen("down", t(20), "timed out after 5s")


@pytest.mark.parametrize(
    ("views", "live", "quorum", "want"),
    [
        # Both up: up, since the later of them came up.
        ({"eu": UP0, "us": Seen("up", t(5))}, {"eu", "us"}, 2, Verdict(True, t(5))),
        # One of two failing: no verdict with a quorum of 2 (the overall state stays) ...
        ({"eu": UP0, "us": US_DOWN}, {"eu", "us"}, 2, None),
        # ... and down with a quorum of 1, since that location went down.
        ({"eu": UP0, "us": US_DOWN}, {"eu", "us"}, 1, Verdict(False, t(20), "us: timed out after 5s")),
        # Both failing: down since the second went down (when the quorum of 2 was reached).
        (
            {"eu": EU_DOWN, "us": US_DOWN},
            {"eu", "us"},
            2,
            Verdict(False, t(20), "eu: status 500; us: timed out after 5s"),
        ),
        # A quorum of 1 is reached when the first went down.
        (
            {"eu": EU_DOWN, "us": US_DOWN},
            {"eu", "us"},
            1,
            Verdict(False, t(10), "eu: status 500; us: timed out after 5s"),
        ),
        # Unset quorum: a majority. Two of three down is down; one of three is not.
        (
            {"eu": EU_DOWN, "us": US_DOWN, "asia": UP0},
            {"eu", "us", "asia"},
            None,
            Verdict(False, t(20), "eu: status 500; us: timed out after 5s"),
        ),
        ({"eu": EU_DOWN, "us": UP0, "asia": UP0}, {"eu", "us", "asia"}, None, Verdict(True, t(0))),
        # Only live locations count, and the quorum never exceeds them: with "us" gone, "eu"
        # alone decides a quorum of 2 (an outage is not missed while a location is away) ...
        ({"eu": EU_DOWN, "us": UP0}, {"eu"}, 2, Verdict(False, t(10), "eu: status 500")),
        # ... and a dead location's stale "down" says nothing.
        ({"eu": UP0, "us": US_DOWN}, {"eu"}, 1, Verdict(True, t(0))),
        # No live location: no verdict.
        ({"eu": UP0}, set(), 1, None),
        # A location not heard from yet (unknown) is neither: no verdict until a quorum agrees.
        ({"eu": UP0}, {"eu", "us"}, 2, None),
        ({"eu": UP0}, {"eu", "us"}, 1, Verdict(True, t(0))),
        # Degraded counts as up; degraded overall when a quorum is.
        (
            {"eu": Seen("degraded", t(3), "slow"), "us": UP0},
            {"eu", "us"},
            1,
            Verdict(True, t(3), None, "eu: slow"),
        ),
        ({"eu": Seen("degraded", t(3), "slow"), "us": UP0}, {"eu", "us"}, 2, Verdict(True, t(3))),
    ],
)
def test_verdict(views: dict[str, Seen], live: set[str], quorum: int | None, want: Verdict | None) -> None:
    locations = ("eu", "us", "asia") if "asia" in views else ("eu", "us")
    assert verdict(views, live, quorum, locations) == want


@pytest.mark.parametrize(
    ("quorum", "n", "want"), [(None, 1, 1), (None, 2, 2), (None, 3, 2), (None, 4, 3), (1, 3, 1)]
)
def test_required_is_a_majority_unless_set(quorum: int | None, n: int, want: int) -> None:
    assert required(quorum, ["x"] * n) == want


def test_a_view_not_heard_from_lately_counts_as_unknown() -> None:
    stale = Seen("down", t(0), "status 500", checked_at=t(0))
    fresh = Seen("up", t(0), checked_at=t(200))
    views = {"eu": fresh, "us": stale}
    # A location back after an absence is not judged by what it saw then ...
    assert verdict(views, {"eu", "us"}, 1, ("eu", "us"), fresh_after(t(200), 30, 10)) == Verdict(True, t(0))
    # ... but within two intervals, a timeout and half a minute it is.
    assert verdict(views, {"eu", "us"}, 1, ("eu", "us"), fresh_after(t(100), 30, 10)) == Verdict(
        False, t(0), "us: status 500"
    )


def test_a_location_confirms_its_own_streak() -> None:
    policy = Policy(confirm_after=2, recover_after=2)
    state, seen = UNKNOWN, Seen()
    timeline = [(0, True, "up"), (1, False, "up"), (2, False, "down"), (3, True, "down"), (4, True, "up")]
    for second, ok, want in timeline:
        state, changes = confirm(state, Observation(ok, t(second)), policy)
        seen = seen_after(seen, state, changes, None if ok else "status 500")
        assert state.status == want
    assert seen == Seen("up", t(3))  # up since the first success of the confirming streak


def test_seen_after_keeps_the_error_that_confirmed_the_outage() -> None:
    down = State(status="down")
    seen = seen_after(Seen("up", t(0)), down, (Change("down", t(1)),), "status 500")
    assert seen == Seen("down", t(1), "status 500")
    assert seen_after(seen, down, (), "status 502") is seen  # no change: the same view


def test_an_observation_since_earlier_dates_the_incident() -> None:
    # The primary sees the quorum at t(30), reached when the second location went down at t(20).
    state, outcome = step(State(status="up"), Observation(False, t(30), since=t(20)), Policy())
    assert state.status == "down"
    assert [(c.kind, c.at) for c in outcome.changes] == [("down", t(20))]


@pytest.mark.parametrize("index", [0, 1, 15])
def test_stored_time_keeps_two_locations_apart(index: int) -> None:
    at = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)
    stored = stored_time(at, index)
    assert stored.microsecond == 123400 + index
    assert abs((stored - at).total_seconds()) < 0.0001
