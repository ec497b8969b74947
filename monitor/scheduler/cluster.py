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
"""

from __future__ import annotations

import asyncio
import hashlib
import math
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


def missed_ticks(last_check: float | None, first_due: float, interval: float) -> int:
    """Ticks between a monitor's last stored check (epoch seconds) and the first tick its new
    owner runs: those the handover skipped. A check starts a little after its due time, so
    the last check's tick is the one due at or before it."""
    if last_check is None or first_due <= last_check:
        return 0
    return max(0, math.ceil((first_due - last_check) / interval - 1e-9) - 1)
