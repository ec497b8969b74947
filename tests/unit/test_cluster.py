"""The division of monitors among schedulers (monitor/scheduler/cluster.py), as tables."""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import UTC, datetime

import pytest

from monitor.scheduler.cluster import (
    Member,
    Ownership,
    Role,
    View,
    missed_ticks,
    owner,
    plan,
    resume_since,
    role,
    tick_of,
    too_late,
    weight,
)
from monitor.scheduler.ticker import first_tick

T = datetime(2026, 12, 1, tzinfo=UTC)


def view(generation: int, *members: tuple[str, int]) -> View:
    return View(generation, tuple(Member(n, i, "default", acked, T) for i, (n, acked) in enumerate(members)))


def test_weight_is_the_same_in_every_process() -> None:
    # Fixed values: a salted or platform-dependent hash would divide differently per member.
    assert weight("a", 1) == weight("a", 1)
    assert weight("a", 1) != weight("b", 1)
    assert weight("host:1", 42) == int.from_bytes(
        hashlib.blake2b(b"42\x00host:1", digest_size=8).digest(), "big"
    )


@pytest.mark.parametrize("members", [1, 2, 3, 5, 8])
def test_each_member_gets_an_even_share(members: int) -> None:
    names = [f"host-{n}:100{n}" for n in range(members)]
    counts = Counter(owner(m, names) for m in range(1, 30_001))
    assert set(counts) == set(names)
    for count in counts.values():
        assert abs(count - 30_000 / members) < 30_000 / members * 0.05, counts


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (["a", "b", "c"], ["a", "b", "c", "d"]),  # a join
        (["a", "b", "c", "d"], ["a", "b", "c"]),  # a leave
        (["a", "b", "c"], ["a", "c"]),  # a member in the middle leaves
    ],
)
def test_a_join_or_leave_moves_only_that_members_share(before: list[str], after: list[str]) -> None:
    ids = range(1, 20_001)
    moved = [m for m in ids if owner(m, before) != owner(m, after)]
    changed = set(before) ^ set(after)
    # Every monitor that moved came from, or went to, the member that left or joined.
    assert all(owner(m, before) in changed or owner(m, after) in changed for m in moved)
    share = len(ids) / max(len(before), len(after))
    assert abs(len(moved) - share) < share * 0.06


def test_no_members_no_owner_and_order_does_not_matter() -> None:
    assert owner(7, []) is None
    assert owner(7, ["a", "b", "c"]) == owner(7, ["c", "a", "b"])


def test_a_view_is_settled_when_every_member_acked_its_generation() -> None:
    assert view(3, ("a", 3), ("b", 4)).settled()
    assert not view(3, ("a", 3), ("b", 2)).settled()
    assert view(3).settled()  # no members: nothing to wait for
    assert view(3, ("b", 3), ("a", 3)).names == ("a", "b")


@pytest.mark.parametrize(
    ("settled", "running", "want_stop", "want_start"),
    [
        # Settled: stop what moved away, start what is ours and not running.
        (True, set(), set(), {"mine"}),
        (True, {"mine", "theirs"}, {"theirs"}, set()),
        # Not settled: moved monitors stop at once, none start until every member acked.
        (False, {"theirs"}, {"theirs"}, set()),
        (False, set(), set(), set()),
        # A running monitor no longer wanted (deleted) but still ours is reconcile's to stop.
        (True, {"mine", "gone-mine"}, set(), set()),
    ],
)
def test_plan(settled: bool, running: set[str], want_stop: set[str], want_start: set[str]) -> None:
    ids = {"mine": 1, "theirs": 2, "gone-mine": 3}
    names = {v: k for k, v in ids.items()}
    wanted = {1, 2}
    stop, start = plan(
        lambda m: "primary" if m in (1, 3) else None, settled, wanted, {ids[r] for r in running}
    )
    assert {names[m] for m in stop} == want_stop
    assert {names[m] for m in start} == want_start


def test_plan_stops_a_monitor_whose_role_changed_and_starts_it_again_once_settled() -> None:
    # Monitor 1 runs here as a secondary; its first location lost its members: primary now.
    def own(m: int) -> Role | None:
        return "primary"

    def running_as(m: int) -> Role:
        return "secondary" if m == 1 else "primary"

    assert plan(own, True, {1, 2}, {1, 2}, running_as) == ({1}, set())
    assert plan(own, True, {1, 2}, {2}, running_as) == (set(), {1})


M = [("eu-1", "eu"), ("eu-2", "eu"), ("us-1", "us")]


@pytest.mark.parametrize(
    ("locations", "members", "want"),
    [
        # No locations: one member of all runs it, wherever it is.
        ((), M, {"one of all": 1}),
        # Two locations: one member in each; the first live location's is primary.
        (("eu", "us"), M, {"eu": "primary", "us": "secondary"}),
        (("us", "eu"), M, {"us": "primary", "eu": "secondary"}),
        # The first location has no live member: the next one leads.
        (("asia", "us", "eu"), M, {"us": "primary", "eu": "secondary"}),
        (("eu", "us"), [("us-1", "us")], {"us": "primary"}),
        # A location the monitor does not name checks nothing.
        (("us",), M, {"us": "primary"}),
        (("asia",), M, {}),
    ],
)
def test_roles_by_location(
    locations: tuple[str, ...], members: list[tuple[str, str]], want: dict[str, object]
) -> None:
    for monitor_id in range(1, 200):
        roles = {name: role(monitor_id, locations, name, members) for name, _ in members}
        roles = {name: r for name, r in roles.items() if r is not None}
        where = dict(members)
        if not locations:
            assert list(roles.values()) == ["primary"]
            continue
        # One member per location named, in the role the table gives that location.
        assert {where[name]: r for name, r in roles.items()} == want
        assert len(roles) == len(want)


def test_ownership_answers_with_roles_and_forgets_a_monitor_whose_locations_changed() -> None:
    places: dict[int, tuple[str, ...]] = {}
    own = Ownership("us-1", lambda m: places.get(m, ()))
    own.use(View(1, tuple(Member(n, i, loc, 1, T) for i, (n, loc) in enumerate(M))))
    assert own.live_locations == {"eu", "us"}
    assert own(7) == role(7, (), "us-1", sorted(M))
    places[7] = ("eu", "us")
    assert own(7) == role(7, (), "us-1", sorted(M))  # remembered until told
    own.forget(7)
    assert own(7) == "secondary"
    places[7] = ("us",)
    own.forget(7)
    assert own(7) == "primary"


def test_ownership_is_remembered_until_the_members_change() -> None:
    own = Ownership("a")
    own.use(view(1, ("a", 1)))
    assert all(own(m) for m in range(1, 100))
    own.use(view(2, ("a", 2), ("b", 2)))
    mine = {m for m in range(1, 1001) if own(m)}
    assert mine == {m for m in range(1, 1001) if owner(m, ["a", "b"]) == "a"}
    assert 400 < len(mine) < 600
    own.use(view(3, ("b", 3), ("a", 3)))  # same names, another generation: same answers
    assert {m for m in range(1, 1001) if own(m)} == mine


@pytest.mark.parametrize(
    ("last", "first_due", "interval", "missed"),
    [
        (None, 100.0, 5.0, 0),  # never checked: nothing missed
        (95.02, 100.0, 5.0, 0),  # the next tick: nothing missed
        (95.0, 100.0, 5.0, 0),
        (94.9996, 100.0, 5.0, 0),  # started a hair before its due time (clock drift)
        (90.3, 100.0, 5.0, 1),  # tick 95 fell in the handover
        (80.01, 100.0, 5.0, 3),
        (100.5, 100.0, 5.0, 0),  # a clock a hair apart: never negative
    ],
)
def test_missed_ticks(last: float | None, first_due: float, interval: float, missed: int) -> None:
    assert missed_ticks(last, first_due, interval) == missed


# A monitor at offset 1.0 of a 10 s interval: ticks due at ..., 91, 101, 111, ...
@pytest.mark.parametrize(
    ("last", "joined", "now", "first_due"),
    [
        (91.02, None, 101.5, 111.0),  # not a whole join (or a death): from now, tick 101 passed over
        (None, 95.0, 101.5, 111.0),  # never checked: from now
        (91.02, 95.0, 101.5, 101.0),  # tick 101 came due in the handover: checked 0.5 s late
        (90.9996, 95.0, 101.5, 101.0),  # the last check started a hair before its due time
        (101.01, 95.0, 101.5, 111.0),  # the old owner checked 101 before it let go: not again
        (91.02, 95.0, 104.0, 111.0),  # tick 101 is 3 s overdue, more than a quarter interval
        (91.02, 101.2, 101.5, 111.0),  # due before the join: another member's (a dead one's)
        (71.02, 95.0, 101.5, 101.0),  # ticks 81 and 91 passed over before the join, 101 is not
    ],
)
def test_resume_since(last: float | None, joined: float | None, now: float, first_due: float) -> None:
    since = resume_since(last, joined, now, 1.0, 10.0)
    assert 1.0 + first_tick(since, 1.0, 10.0) * 10.0 == first_due


# A monitor at offset 0.2 of a 1 s interval, its tick 13 due at 13.2: a check started later
# than 0.45 s after it is not run (it would be tick 14's by tick_of, 0.5 s or less before it).
@pytest.mark.parametrize(
    ("started", "run", "tick"),
    [
        (13.2, True, 13),
        (13.6, True, 13),  # 0.4 s late: still tick 13's
        (13.649, True, 13),  # just within LATEST
        (13.74, False, 14),  # 0.54 s late under load, then 14.2 on its slot: 0.46 s apart
        (14.07, False, 14),  # 0.87 s late: nearer tick 14 than 13
    ],
)
def test_a_check_more_than_latest_late_is_not_run(started: float, run: bool, tick: int) -> None:
    assert too_late(started - 13.2, 1.0) is not run
    assert tick_of(started, 0.2, 1.0) == tick
