"""A scheduler's membership of the cluster: its row and lease in PostgreSQL.

PostgreSQL is the one service every scheduler already shares and the one whose clock all of
them read, so the lease is kept there and judged by the database's ``now()``: no new engine,
and no trust in the members' clocks for who is live. A member renews its lease every
``lease / 4`` seconds. Any member that renews also removes the rows whose lease lapsed, and a
join, a release or a removal bumps the generation in the same transaction (sql/014).

A member also keeps the end of its lease by its own clock (:meth:`Membership.lease_end`): the
lease runs from the moment the renewal was *sent*, which is no later than the database's
``now()`` of it, so the member's own end of the lease comes no later than the database's, and
the others take its monitors only after the database saw the lease lapse.

The epoch (a new number from ``scheduler_epochs`` per registration) fences the writer
(``writer.py``): a batch is written with the state and alerts it carries only while its
member's row still stands; once the row is gone, only the checks that started before the
lease ended are kept. So a member keeps checking through a database outage (its results wait
in memory, as they did with one scheduler) and loses nothing when nobody took its monitors
meanwhile, while a process frozen past its lease (SIGSTOP, a paused virtual machine) that
wakes and checks a tick another member owns by then writes no result for it. A member that
finds its row gone has lost its monitors: it stops them and joins again with a new epoch.

After a renewal failed (the database restarted, say), a member removes no lapsed member
until its own renewals have gone through for a whole lease again: every member's lease
lapsed during a long outage, and the first one back must not take the others' monitors before
they have had the time to renew.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor.scheduler.cluster import Member, View

log = mlog.get(__name__)

CHANNEL = "scheduler_members"
# How many renewals fit in a lease: a member whose renewal is late by less than three of
# them (a slow database, a loaded machine) keeps its monitors.
RENEWALS_PER_LEASE = 4

VIEW = """
SELECT c.generation, m.name, m.epoch, m.location, m.acked, m.lease_until, m.joined_at, m.host, m.pid,
       m.monitors, m.checks_per_s
FROM scheduler_cluster c LEFT JOIN scheduler_members m ON true
ORDER BY m.name"""

# Rows whose lease lapsed are removed, but not within a lease of the database's own start: a
# restarted database finds every lease lapsed, and the members need the time to renew. A row
# locked by its member's write in progress is skipped (it is removed next round): a member
# frozen inside that transaction must not stall everyone's renewals.
EXPIRE = """
WITH gone AS (
    DELETE FROM scheduler_members WHERE epoch IN (
        SELECT epoch FROM scheduler_members
        WHERE lease_until < now() AND pg_postmaster_start_time() < now() - make_interval(secs => $1)
        FOR UPDATE SKIP LOCKED)
    RETURNING name)
UPDATE scheduler_cluster SET generation = generation + 1
WHERE EXISTS (SELECT 1 FROM gone) RETURNING (SELECT array_agg(name) FROM gone)"""


def default_name() -> str:
    """A name unique among the schedulers running now: the host, and the process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def view_of(rows: list[Any]) -> View:
    """The view from :data:`VIEW`'s rows (a member-less cluster gives one row of nulls)."""
    generation = rows[0]["generation"] if rows else 0
    members = tuple(
        Member(
            name=r["name"],
            epoch=r["epoch"],
            location=r["location"],
            acked=r["acked"],
            lease_until=r["lease_until"],
            joined_at=r["joined_at"],
            host=r["host"],
            pid=r["pid"],
            monitors=r["monitors"],
            checks_per_s=r["checks_per_s"],
        )
        for r in rows
        if r["name"] is not None
    )
    return View(generation, members)


async def read_view(conn: asyncpg.Pool | asyncpg.Connection) -> View:
    return view_of(await conn.fetch(VIEW))


class NameTaken(Exception):
    """Another live scheduler holds this member name."""


class Membership:
    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        name: str,
        location: str,
        lease_seconds: float,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        # A connection of its own, not the scheduler's pool: a renewal never waits for a pool
        # connection held by the writer, the relay or the ping intake.
        self._connect = connect
        self._conn: asyncpg.Connection | None = None
        self._conn_lock = asyncio.Lock()
        self.name = name
        self.location = location
        self.lease = lease_seconds
        self._loop = loop or asyncio.get_running_loop()
        self.epoch: int | None = None
        # The generation this member's latest join made, and when it sent the join (epoch
        # seconds): a view still of that generation has lost no member since (sharing.py).
        self.joined: tuple[int, float] | None = None
        # Told the epoch and the end of the lease (epoch seconds) at each join and renewal: the
        # spool records it, so that a replay fences what this member spooled (spool.py).
        self.on_lease: Callable[[int, float], None] | None = None
        # The end of the lease by this process's clocks (the loop's monotonic one, and the
        # wall clock that check results are stamped with); 0: no lease held.
        self._valid_until = 0.0
        self._lease_end_wall = 0.0
        # Loop time since when renewals have gone through without a failure (from the join).
        self._steady_since = self._loop.time()
        self._failing = False

    @property
    def renew_every(self) -> float:
        return self.lease / RENEWALS_PER_LEASE

    def valid(self) -> bool:
        """Whether this member's lease still holds by its own clock: may a tick start a check?"""
        return self._loop.time() < self._valid_until

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        """The membership's connection (made again after it broke), one user at a time."""
        async with self._conn_lock:
            if self._conn is None or self._conn.is_closed():
                self._conn = await asyncio.wait_for(self._connect(), timeout=self.lease)
            try:
                yield self._conn
            except BaseException:
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.terminate()
                raise

    async def close(self) -> None:
        async with self._conn_lock:
            if self._conn is not None and not self._conn.is_closed():
                await self._conn.close()
            self._conn = None

    def may_check(self) -> bool:
        """Whether a tick due now is checked: while the lease holds by this process's monotonic
        clock, and while renewals fail (the database is away: checking goes on, and the fenced
        writer keeps what was this member's). Not after a freeze past the lease: the process
        wakes with overdue ticks that may be another member's by now, and checks none of them
        until a renewal answers."""
        return self.valid() or self._failing

    def lease_end(self) -> float:
        """The end of the lease held (epoch seconds), as far as this process knows."""
        return self._lease_end_wall

    def _held(self, sent: float, sent_wall: float) -> None:
        self._valid_until = sent + self.lease
        self._lease_end_wall = sent_wall + self.lease
        if self.on_lease is not None and self.epoch is not None:
            self.on_lease(self.epoch, self._lease_end_wall)

    async def join(self) -> None:
        """Register with a new epoch; raises :class:`NameTaken` while a live member has the name.

        A lapsed row of the same name (this member's predecessor, killed a lease ago) is
        removed first. No other lapsed row is: the member that joins may have reached the
        database first after an outage, before the others could renew; it removes lapsed rows
        only once its own renewals have gone through for a lease (:meth:`renew`).
        """
        sent, sent_wall = self._loop.time(), time.time()
        async with self._connection() as conn, conn.transaction():
            # The one row of the generation, put back should a reset have emptied the table
            # (with no generation, no member is seen and nothing is checked).
            await conn.execute("INSERT INTO scheduler_cluster VALUES (true, 1) ON CONFLICT DO NOTHING")
            await conn.execute(
                "DELETE FROM scheduler_members WHERE name = $1 AND lease_until < now()", self.name
            )
            try:
                epoch = await conn.fetchval(
                    """INSERT INTO scheduler_members (name, location, host, pid, lease_until)
                       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING epoch""",
                    self.name,
                    self.location,
                    socket.gethostname(),
                    os.getpid(),
                    self.lease,
                )
            except asyncpg.UniqueViolationError:
                raise NameTaken(self.name) from None
            generation = await conn.fetchval(
                "UPDATE scheduler_cluster SET generation = generation + 1 RETURNING generation"
            )
            await conn.execute("SELECT pg_notify($1, 'join')", CHANNEL)
        self.epoch = epoch
        self.joined = (generation, sent_wall)
        self._held(sent, sent_wall)
        self._steady_since, self._failing = sent, False
        log.info("cluster.joined", member=self.name, location=self.location, epoch=epoch)

    async def renew(self, monitors: int = 0, checks_per_s: float = 0.0) -> View | None:
        """Extend the lease, remove lapsed members, and read the view; None if this member's
        row is gone (its lease lapsed and another member removed it)."""
        sent, sent_wall = self._loop.time(), time.time()
        try:
            return await self._renew(sent, sent_wall, monitors, checks_per_s)
        except BaseException:
            self._failing = True
            raise

    async def _renew(self, sent: float, sent_wall: float, monitors: int, checks_per_s: float) -> View | None:
        async with self._connection() as conn:
            held = await conn.fetchval(
                """UPDATE scheduler_members SET lease_until = now() + make_interval(secs => $2),
                       monitors = $3, checks_per_s = $4
                   WHERE epoch = $1 RETURNING true""",
                self.epoch,
                self.lease,
                monitors,
                checks_per_s,
            )
            if self._failing:
                self._failing, self._steady_since = False, sent
            if not held:
                # The lease end stays known: the fenced writer keeps the checks made within it.
                self._valid_until = 0.0
                return None
            self._held(sent, sent_wall)
            gone = None
            if sent - self._steady_since >= self.lease:
                gone = await conn.fetchval(EXPIRE, self.lease)
            if gone:
                log.warning("cluster.members_expired", members=gone, by=self.name)
                await conn.execute("SELECT pg_notify($1, 'expired')", CHANNEL)
            return await read_view(conn)

    async def ack(self, generation: int) -> None:
        """Record that this member applied ``generation``'s division, and wake the others."""
        async with self._connection() as conn, conn.transaction():
            await conn.execute(
                "UPDATE scheduler_members SET acked = greatest(acked, $2) WHERE epoch = $1",
                self.epoch,
                generation,
            )
            await conn.execute("SELECT pg_notify($1, 'ack')", CHANNEL)

    async def release(self) -> None:
        """Leave the cluster (at shutdown, after the last results are written): the others
        take this member's monitors at once instead of a lease later."""
        self._valid_until = self._lease_end_wall = 0.0
        if self.epoch is None:
            return
        async with self._connection() as conn:
            await release_epoch(conn, self.epoch)
        log.info("cluster.left", member=self.name, epoch=self.epoch)
        self.epoch = None


async def release_epoch(conn: asyncpg.Connection, epoch: int) -> bool:
    """Remove a member's row once its results are written (at its shutdown; or by the replay of
    its spool after it was killed, its spool's lock free): the others take its monitors at once.
    False if the row was gone already."""
    async with conn.transaction():
        gone = bool(
            await conn.fetchval("DELETE FROM scheduler_members WHERE epoch = $1 RETURNING true", epoch)
        )
        if gone:
            await conn.execute("UPDATE scheduler_cluster SET generation = generation + 1")
            await conn.execute("SELECT pg_notify($1, 'release')", CHANNEL)
    return gone


@dataclass(frozen=True)
class MemberStatus:
    """A scheduler as ``monitor cluster status`` shows it."""

    name: str
    location: str
    state: str  # live, applying (has not acked the current generation), lapsed
    lease_left_s: float
    monitors: int
    checks_per_s: float
    host: str
    pid: int
    epoch: int
    joined_at: datetime


async def cluster_status(conn: asyncpg.Connection) -> tuple[list[MemberStatus], int]:
    """The members as the database holds them now, and how many monitors are active."""
    rows = await conn.fetch(
        """SELECT m.name, m.location, m.host, m.pid, m.epoch, m.joined_at, m.monitors, m.checks_per_s,
                  extract(epoch FROM m.lease_until - now())::float8 AS lease_left,
                  m.acked >= c.generation AS applied
           FROM scheduler_members m CROSS JOIN scheduler_cluster c ORDER BY m.location, m.name"""
    )
    active = await conn.fetchval("SELECT count(*) FROM monitors WHERE NOT paused")
    members = [
        MemberStatus(
            name=r["name"],
            location=r["location"],
            state="lapsed" if r["lease_left"] < 0 else "live" if r["applied"] else "applying",
            lease_left_s=round(r["lease_left"], 1),
            monitors=r["monitors"],
            checks_per_s=round(r["checks_per_s"], 1),
            host=r["host"],
            pid=r["pid"],
            epoch=r["epoch"],
            joined_at=r["joined_at"],
        )
        for r in rows
    ]
    return members, active


# Locations that active monitors name and no live member is in: those checks are not made.
UNSERVED = """
SELECT loc AS location, count(*)::int AS monitors
FROM monitors m CROSS JOIN LATERAL unnest(m.locations) AS loc
WHERE NOT m.paused
  AND NOT EXISTS (SELECT 1 FROM scheduler_members s WHERE s.location = loc AND s.lease_until > now())
GROUP BY loc ORDER BY loc"""


async def unserved_locations(conn: asyncpg.Connection) -> list[tuple[str, int]]:
    """(location, monitors naming it) for each location with no live member."""
    return [(r["location"], r["monitors"]) for r in await conn.fetch(UNSERVED)]
