"""Which scheduler runs which monitor, and when it may start one: pure.

The monitors are divided among the live members by rendezvous (highest random weight) hashing:
a monitor belongs to the member whose name gives the highest hash of (name, monitor id). Every
member computes the same answer from the same list of members, with no table of assignments,
and a member joining or leaving moves only its own share: with three members, a fourth takes
about a quarter of the monitors, one from each, and the rest stay where they run
(``tests/unit/test_cluster.py`` holds that to within a few percent).

A division is valid for one *generation* of the member list (``scheduler_cluster`` in the
database; every join, release and expiry bumps it). A member stops the monitors that moved
away as soon as it sees a new generation, writes their last results, and only then records
that it applied that generation (``acked``). It starts a monitor that moved to it only when
every live member has acked the generation it reads (:meth:`View.settled`): whoever ran the
monitor before has stopped it and stored its state, or has left the list, which happens only
once its lease lapsed, after which none of the checks it starts is stored (its writer is
fenced, ``writer.py``). That is why no tick is checked twice: the old owner's last stored tick
came before it acked or its lease ended, and the new owner's first tick comes after.

A member that *joins* takes its share from members that are all still live: each stopped the
monitors it gave up, wrote their checks and only then acked. So when nobody left between its
join and the settled view (the generation is still the one its join made), every tick due after
both its join and a monitor's last stored check was checked by nobody; the joiner starts from
there (:func:`resume_since`) instead of from the settled moment, and the ticks that came due
while the others stopped, wrote and acked are checked, a little late, rather than passed over.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Role = Literal["primary", "secondary"]


def weight(member: str, monitor_id: int) -> int:
    """The member's weight for the monitor: 64 bits of BLAKE2b over both, the same in every
    process (Python's ``hash`` of a string is salted per process, so it cannot serve)."""
    digest = hashlib.blake2b(f"{monitor_id}\x00{member}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(monitor_id: int, members: Sequence[str]) -> str | None:
    """The member that runs the monitor: the highest weight (ties, which 64 bits make
    practically impossible, go to the greater name); None when no member is live."""
    best: str | None = None
    best_weight = -1
    for member in members:
        w = weight(member, monitor_id)
        if w > best_weight or (w == best_weight and best is not None and member > best):
            best, best_weight = member, w
    return best


@dataclass(frozen=True)
class Member:
    """A live scheduler as its row in ``scheduler_members`` says."""

    name: str
    epoch: int
    location: str
    acked: int
    lease_until: datetime
    joined_at: datetime | None = None
    host: str = ""
    pid: int = 0
    monitors: int = 0
    checks_per_s: float = 0.0


@dataclass(frozen=True)
class View:
    """One generation of the member list, read in one statement (one snapshot)."""

    generation: int
    members: tuple[Member, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(m.name for m in self.members))

    def settled(self) -> bool:
        """Every live member has applied this generation: a monitor that moved may start."""
        return all(m.acked >= self.generation for m in self.members)


def role(
    monitor_id: int, locations: Sequence[str], me: str, members: Sequence[tuple[str, str]]
) -> Role | None:
    """What member ``me`` is for the monitor among ``members`` ((name, location) pairs, in
    name order): its primary, a secondary (it checks for its own location only), or None."""
    if not locations:
        return "primary" if owner(monitor_id, [n for n, _ in members]) == me else None
    here = next((loc for n, loc in members if n == me), None)
    if here is None or here not in locations:
        return None
    if owner(monitor_id, [n for n, loc in members if loc == here]) != me:
        return None
    live = {loc for _, loc in members}
    return "primary" if next(loc for loc in locations if loc in live) == here else "secondary"


class Ownership:
    """What this member is for each monitor in the current list of members (:func:`role`),
    remembered per monitor until the list changes: a round reads the view every few seconds,
    and 100,000 monitors hashed against three members cost about 0.3 s of CPU each time.
    ``locations`` gives a monitor's list of locations (empty for most)."""

    def __init__(self, me: str, locations: Callable[[int], Sequence[str]] = lambda _: ()) -> None:
        self.me = me
        self._locations = locations
        self._members: tuple[tuple[str, str], ...] = ()
        self._known: dict[int, Role | None] = {}

    @property
    def live_locations(self) -> frozenset[str]:
        return frozenset(loc for _, loc in self._members)

    def use(self, view: View) -> bool:
        """Answer for ``view`` from now on; True if its members differ from the last one's."""
        members = tuple(sorted((m.name, m.location) for m in view.members))
        if members == self._members:
            return False
        self._members = members
        self._known.clear()
        return True

    def forget(self, monitor_id: int) -> None:
        """The monitor's locations changed: work its role out again when next asked."""
        self._known.pop(monitor_id, None)

    async def warm(self, monitor_ids: Iterable[int], chunk: int = 5000) -> None:
        """Work out the monitors not known yet, yielding to the loop every ``chunk`` of them,
        so that a new list of members does not stall the ticks for the whole fleet."""
        todo = [m for m in monitor_ids if m not in self._known]
        for start in range(0, len(todo), chunk):
            for m in todo[start : start + chunk]:
                self(m)
            await asyncio.sleep(0)

    def __call__(self, monitor_id: int) -> Role | None:
        if monitor_id in self._known:
            return self._known[monitor_id]
        found = self._known[monitor_id] = role(
            monitor_id, self._locations(monitor_id), self.me, self._members
        )
        return found


def plan(
    own: Callable[[int], Role | None],
    settled: bool,
    wanted: Iterable[int],
    running: Collection[int],
    running_as: Callable[[int], Role] = lambda _: "primary",
) -> tuple[set[int], set[int]]:
    """What a member does on reading a view: the monitors to stop now (they moved away, are
    no longer wanted, or run here in another role) and those to start (its own, wanted and not
    running); none start until the view is settled."""
    stop = {m for m in running if own(m) != running_as(m)}
    start = {m for m in wanted if own(m) and m not in running} if settled else set()
    return stop, start


# An overdue tick is checked late only while it is at most this share of an interval overdue:
# consecutive checks of a monitor stay more than half an interval apart, and the tick each
# check belongs to is still the one nearest to its time.
MOST_LATE = 0.25


# A tick's check starts at most this share of an interval after its due time, or is skipped: one
# started later is nearer the next tick (:func:`tick_of`) and less than half an interval before
# that tick's check. Under load (2 cores at load 10) schedulers busy starting or taking a share
# over started checks 0.54 to 0.87 s late at a 1 s interval, each followed by the next tick's on
# its slot (tests/integration/test_scheduler_cluster.py). The margin below a half is for the
# loop's clock drifting from the wall clock.
LATEST = 0.45


def too_late(lateness: float, interval: float) -> bool:
    """Whether a check ``lateness`` seconds after its due time must not start (:data:`LATEST`)."""
    return lateness > LATEST * interval


def tick_of(at: float, offset: float, interval: float) -> int:
    """The tick a check made at ``at`` (epoch seconds) belongs to: the nearest. A check starts a
    little after its due time, or a hair before (the loop's clock and the wall clock drift)."""
    return round((at - offset) / interval)


def resume_since(
    last_check: float | None, joined: float | None, now: float, offset: float, interval: float
) -> float:
    """From when a monitor that moved to this member counts its ticks (epoch seconds: its first
    tick is the first due at or after this): ``now``, or, when ``joined`` is given (this member
    joined and nobody left since, so whoever ran the monitor stopped it, wrote it and acked),
    the tick after its ``last_check``, if due after the join and at most :data:`MOST_LATE` of
    an interval overdue. Never the tick of the last stored check or one before it."""
    if joined is None or last_check is None:
        return now
    after_last = offset + (tick_of(last_check, offset, interval) + 0.5) * interval
    return max(after_last, joined, now - MOST_LATE * interval)


def missed_ticks(last_check: float | None, first_due: float, interval: float) -> int:
    """Ticks between a monitor's last stored check (epoch seconds) and the first tick its new
    owner runs: those the handover skipped. The last check's tick is the nearest to it
    (:func:`tick_of`)."""
    if last_check is None or first_due <= last_check:
        return 0
    return max(0, round((first_due - last_check) / interval) - 1)
