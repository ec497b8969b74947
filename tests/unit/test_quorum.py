"""The quorum of locations (monitor/scheduler/quorum.py), as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from monitor.scheduler.quorum import (
    Seen,
    Verdict,
    heard_for,
    required,
    seen_after,
    stored_time,
    verdict,
)
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


W = heard_for(30, 10)  # 2 x 30 + 10 + 30 = 100 s


def test_a_view_not_heard_from_lately_counts_as_unknown() -> None:
    stale = Seen("down", t(0), "status 500", checked_at=t(0))
    fresh = Seen("up", t(0), checked_at=t(200))
    views = {"eu": fresh, "us": stale}
    # A location back after an absence is not judged by what it saw then ...
    assert verdict(views, {"eu", "us"}, 1, ("eu", "us"), t(200), W) == Verdict(True, t(0))
    # ... but within two intervals, a timeout and half a minute it is.
    assert verdict(views, {"eu", "us"}, 1, ("eu", "us"), t(100), W) == Verdict(False, t(0), "us: status 500")


def test_a_location_between_schedulers_keeps_counting_for_a_restart() -> None:
    # A rolling restart of the only scheduler in "us": no member there for a while. Its last
    # "up" still counts, so "eu" failing alone does not take the monitor down (quorum 2).
    eu_down = Seen("down", t(0), "status 500")  # this member's own view: always fresh
    us_up = Seen("up", t(0), checked_at=t(250))
    assert verdict({"eu": eu_down, "us": us_up}, {"eu"}, 2, ("eu", "us"), t(300), W) is None
    # Gone for longer (its last check 150 s ago): only "eu" counts, and decides; the outage
    # starts when "us" stopped counting (its last check and the window), not when "eu" began
    # to fail, long before.
    gone = Seen("up", t(0), checked_at=t(150))
    assert verdict({"eu": eu_down, "us": gone}, {"eu"}, 2, ("eu", "us"), t(300), W) == Verdict(
        False, t(250), "eu: status 500"
    )
    # A normal outage keeps its start, however long its confirmation took.
    both = {"eu": eu_down, "us": Seen("down", t(5), "timed out", checked_at=t(290))}
    assert verdict(both, {"eu", "us"}, 2, ("eu", "us"), t(300), W) == Verdict(
        False, t(5), "eu: status 500; us: timed out"
    )


@pytest.mark.parametrize(
    ("ups", "quorum", "still_down", "outage", "want"),
    [
        # quorum 1 of 2: eu failed at 10 (us fine since 0); eu back at 30: up at 30, not at 0.
        ({"eu": 30, "us": 0}, 1, 0, 10, 30),
        # quorum 1 of 3, all three failed; back at 30, 40, 50 within one round: up when the
        # last came back (down wins while any is down).
        ({"eu": 30, "us": 40, "ap": 50}, 1, 0, 10, 50),
        # quorum 2 of 3, all failed; back at 30, 40, 50: up at 40 (two up, one down).
        ({"eu": 30, "us": 40, "ap": 50}, 2, 0, 10, 40),
        # quorum 2 of 3, two failed, "ap" fine since 0; "eu" back at 30 (one still down): 30.
        ({"eu": 30, "ap": 0}, 2, 1, 20, 30),
        # Not down before: since the q-th came up.
        ({"eu": 30, "us": 40}, 2, 0, None, 40),
    ],
)
def test_when_an_outage_ends(
    ups: dict[str, int], quorum: int, still_down: int, outage: int | None, want: int
) -> None:
    views = {loc: Seen("up", t(since)) for loc, since in ups.items()}
    views |= {f"down{n}": Seen("down", t(5), "x") for n in range(still_down)}
    places = tuple(views)
    found = verdict(views, set(places), quorum, places, down_since=None if outage is None else t(outage))
    assert found == Verdict(True, t(want))


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
