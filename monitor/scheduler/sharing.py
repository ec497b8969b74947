"""The scheduler's side of the cluster: keep the lease, and apply each new division.

Two loops. One renews the lease every ``lease / 4`` seconds (or at once when another member
NOTIFYs a join, an ack, a release or an expiry) and reads the view (membership.py), on a
connection of its own, so that nothing the scheduler waits for (checks in flight, a backlog
to write, a share to load) delays a renewal. The other applies each new view it reads, under
:attr:`Sharing.lock`, which the scheduler's own reloads of monitors take too:

1. stops the monitors that moved away and waits for their checks in flight;
2. writes everything buffered, so the next owner reads their last state;
3. acks the generation;
4. once every live member has acked it (the view is *settled*), starts the monitors that
   moved here, each from its stored state, from its first tick due after now.

A member that finds its row gone (its lease lapsed while it was frozen or cut off from the
database, and another member removed it) stops every monitor, writes what it has (the
fenced writer keeps the checks and drops their state), forgets its states and joins again
with a new epoch; its share comes back to it by the same steps.

Dependencies: a monitor's ``depends_on`` may name monitors another member runs. Each round
reads the stored status of those (and of the monitors above them) into the shared states
(:func:`read_foreign_parents`), so a dependant here is held by a router down there, a round
and a write (about 1-3 s) behind.

What it asks of the scheduler it runs in (the monitors wanted and running, starting and
stopping them, writing what is buffered) is one interface, :class:`Local`, which the service
wires to its catalogue (catalogue.py), its running set (running.py) and its writer.

Rolling restarts: a scheduler stopped by SIGTERM finishes its checks, writes them and
releases its row before it exits, so the others take its monitors within one round, not a
lease later.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Collection, Sequence
from typing import Protocol

import asyncpg

from monitor import logging as mlog
from monitor.scheduler.cluster import Ownership, Role, View, plan
from monitor.scheduler.judging import Judging
from monitor.scheduler.membership import Membership, NameTaken
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.state import State

log = mlog.get(__name__)

DB_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class Local(Protocol):
    """What applying a division asks of the scheduler it runs in, as one interface: the
    monitors it could run and runs, starting and stopping them, and writing what it holds."""

    def wanted(self) -> Collection[int]:
        """Every active monitor, this member's or not (what a division is applied to)."""
        ...

    def running(self) -> Collection[int]:
        """The monitors running here."""
        ...

    def locations(self, monitor_id: int) -> Sequence[str]:
        """The locations a monitor is checked from (none: from any one)."""
        ...

    def running_as(self, monitor_id: int) -> Role:
        """The role a running monitor was started in here."""
        ...

    async def let_go(self, ids: set[int]) -> None:
        """Stop these monitors and wait for their checks in flight."""
        ...

    async def take(self, ids: set[int]) -> None:
        """Start these monitors, each from its stored state."""
        ...

    async def flush(self) -> bool:
        """Write everything buffered; False if the database failed."""
        ...

    def redivided(self) -> None:
        """The division changed what this member owns (the live locations, the pings to read)."""
        ...

    async def each_round(self) -> None:
        """After each applied round: what this member reads of the others'."""
        ...


class Sharing:
    def __init__(self, membership: Membership, metrics: SchedulerMetrics, local: Local) -> None:
        self.membership = membership
        self._metrics = metrics
        self._wanted = local.wanted
        self._running = local.running
        self._stop = local.let_go
        self._start = local.take
        self._flush = local.flush
        self._redivided = local.redivided
        self._each_round = local.each_round
        self.view: View | None = None
        self.own = Ownership(membership.name, local.locations)
        self._running_as = local.running_as
        self._wake = asyncio.Event()
        # The latest renewal's answer (a view, or None: this member's row is gone), for the
        # applying loop; set together with ``_read``.
        self._latest: View | None = None
        # The epoch whose row a renewal found gone (None: not lost). A renewal still on its
        # way when the member joins again answers for the old epoch: it is not a new loss.
        self._lost: int | None = None
        self._read = asyncio.Event()
        # Held while a division is applied, and by the scheduler while it starts or stops a
        # monitor on its own (a NOTIFY, a reconcile): both decide from ``mine`` and ``settled``.
        self.lock = asyncio.Lock()
        self.closing = False
        self._counted = (time.monotonic(), metrics.checks.total())

    # -- what the rest of the scheduler asks --------------------------------------

    def mine(self, monitor_id: int) -> Role | None:
        """What this member is for the monitor in the view applied last (None: not its)."""
        return self.own(monitor_id) if self.view is not None else None

    def runs(self, monitor_id: int) -> bool:
        """Whether this member runs the monitor, in whichever role."""
        return self.mine(monitor_id) is not None

    def settled(self) -> bool:
        """Whether this member may start monitors now (every live member applied the view)."""
        return self.view is not None and self.view.settled() and self.membership.valid()

    def joined_whole(self) -> float | None:
        """When this member joined (epoch seconds), if the settled view is still of the generation
        its join made: every member then live is in it and acked it, having stopped and written
        the monitors it gave up, and none left meanwhile (cluster.resume_since). None otherwise."""
        joined = self.membership.joined
        if joined is None or self.view is None or not self.settled():
            return None
        generation, at = joined
        return at if self.view.generation == generation else None

    def wake(self, *_: object) -> None:
        self._wake.set()

    # -- the rounds -----------------------------------------------------------------

    async def join(self) -> None:
        """Join, waiting while a live member holds our name (a second scheduler configured with
        the same name), or while the database does not answer."""
        while True:
            try:
                await asyncio.wait_for(self.membership.join(), timeout=self.membership.lease)
                return
            except DB_ERRORS as exc:
                log.warning("cluster.join_failed", error=str(exc) or type(exc).__name__)
                await asyncio.sleep(self.membership.renew_every)
            except NameTaken:
                log.warning(
                    "cluster.name_taken",
                    member=self.membership.name,
                    hint="another running scheduler has this MONITOR_SCHEDULER_NAME; waiting for its lease",
                )
                await asyncio.sleep(self.membership.renew_every)

    async def first_division(self, deadline: float) -> None:
        """Rounds until this member's view is settled (at start, before loading monitors), or
        until ``deadline`` (loop time); the loop goes on from there either way."""
        loop = asyncio.get_running_loop()
        while loop.time() < deadline:
            await self._renew()
            await self._apply_latest()
            if self.settled():
                return
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=min(0.5, self.membership.renew_every))
            except TimeoutError:
                pass
            self._wake.clear()

    async def run(self) -> None:
        """Both loops, until cancelled: started right after the first division, so that the
        lease is renewed while the scheduler loads its share."""
        await asyncio.gather(self._renewing(), self._applying())

    async def _renewing(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.membership.renew_every)
            except TimeoutError:
                pass
            self._wake.clear()
            await self._renew()

    async def _renew(self) -> None:
        epoch = self.membership.epoch
        try:
            # Bounded: a primary that vanished mid-failover leaves a call hanging for minutes,
            # while a renewal that fails lets checking go on (Membership.may_check). Half a
            # lease: a slow renewal on a loaded machine still lands well within the lease.
            view = await asyncio.wait_for(
                self.membership.renew(len(self._running()), self._rate()), timeout=self.membership.lease / 2
            )
        except DB_ERRORS as exc:
            log.warning("cluster.renew_failed", error=str(exc) or type(exc).__name__)
            return
        except Exception:  # a bug must not end the renewals: the lease would lapse unseen
            log.exception("cluster.renew_crashed")
            return
        if view is None:
            self._lost = epoch
        else:
            self._latest = view
        self._read.set()

    async def _applying(self) -> None:
        while True:
            await self._read.wait()
            await self._apply_latest()
            await self._each_round()

    async def _apply_latest(self) -> None:
        self._read.clear()
        try:
            async with self.lock:
                if self._lost is not None and self._lost == self.membership.epoch:
                    self._lost = None
                    await self._rejoin()
                elif self._latest is not None and self.membership.epoch is not None:
                    await self._apply(self._latest)
        except DB_ERRORS as exc:
            log.warning("cluster.apply_failed", error=str(exc) or type(exc).__name__)
        except Exception:  # a bug must not end the applying loop: retried on the next read
            log.exception("cluster.apply_crashed")

    def _rate(self) -> float:
        now, total = time.monotonic(), self._metrics.checks.total()
        then, before = self._counted
        self._counted = (now, total)
        return round((total - before) / (now - then), 1) if now > then else 0.0

    async def _apply(self, view: View) -> None:
        previous = self.view
        me = self.membership.name
        if previous is None or view.generation != previous.generation:
            self._metrics.cluster_changes.inc()
            self._metrics.cluster_members.set(len(view.members))
            log.info("cluster.view", generation=view.generation, members=list(view.names), member=me)
        self.view = view
        if self.own.use(view):
            self._redivided()  # the pings of monitors that moved here are to be read now
        if self.closing:
            return
        await self.own.warm(self._wanted())
        stop, start = plan(self.own, view.settled(), self._wanted(), self._running(), self._running_as)
        if stop:
            self._metrics.handovers.inc(len(stop))
            await self._stop(stop)
        acked = next((m.acked for m in view.members if m.name == me), 0)
        if stop or acked < view.generation:
            if not await self._flush():
                return  # the database failed: acked next round, nothing starts meanwhile
            await asyncio.wait_for(self.membership.ack(view.generation), timeout=self.membership.lease)
            return  # started once every member acked (a NOTIFY wakes the next round)
        if start and self.settled():
            await self._start(start)

    async def _rejoin(self) -> None:
        running = set(self._running())
        self._metrics.lease_lost.inc()
        log.warning("cluster.lease_lost", member=self.membership.name, monitors=len(running))
        self.view = self._latest = None
        await self._stop(running)
        # Written before joining again, fenced: the checks within the lease are kept, their
        # state is the new owners'. Rows left over would be written under the new epoch.
        for attempt in itertools.count():
            if await self._flush():
                break
            await asyncio.sleep(min(1 + attempt, 10))
        self._redivided()
        if not self.closing:
            await self.join()

    async def leave(self) -> None:
        """Release this member's row (at shutdown, after the last write)."""
        try:
            await asyncio.wait_for(self.membership.release(), timeout=self.membership.lease)
        except DB_ERRORS as exc:
            log.warning("cluster.release_failed", error=str(exc) or type(exc).__name__)


# The monitors above some (their depends_on, and those above them), with their stored status.
FOREIGN_PARENTS = """
WITH RECURSIVE up(id) AS (
    SELECT unnest($1::bigint[])
    UNION SELECT unnest(m.depends_on) FROM monitors m JOIN up ON m.id = up.id
)
SELECT m.id, m.name, m.depends_on, s.status, s.consecutive_failures
FROM monitors m JOIN up ON up.id = m.id LEFT JOIN monitor_state s ON s.monitor_id = m.id"""


async def read_foreign_parents(pool: asyncpg.Pool, judging: Judging, running: Collection[int]) -> set[int]:
    """Put the stored status of the monitors that those running here depend on, but that run
    elsewhere, into ``judging`` (states, names, their own parents), for ``judging.down_above``;
    the ids whose status was put there."""
    parents = {p for m in running for p in judging.parents.get(m, ())}
    foreign = [p for p in parents if p not in running]
    put: set[int] = set()
    if not foreign:
        return put
    for row in await pool.fetch(FOREIGN_PARENTS, foreign):
        monitor_id = row["id"]
        if monitor_id in running:
            continue
        judging.names[monitor_id] = row["name"]
        judging.parents[monitor_id] = tuple(row["depends_on"] or ())
        if row["status"] is not None:
            judging.states[monitor_id] = State(status=row["status"], failures=row["consecutive_failures"])
            put.add(monitor_id)
    return put
