"""A scheduler frozen in the middle of writing a batch does not stall the cluster.

A batch's transaction holds the rows it wrote (its monitors' rollups among them, which their
next owner writes too) and, just before its commit, its member's row (writer.py). A process
frozen there (SIGSTOP, a paused virtual machine), or a machine gone with its TCP connection left
open, would keep those locks for as long as the server keeps the connection: hours, the other
members' writes of those monitors waiting behind it. Here the member is frozen inside its
writer's transaction (the test holds its batch up until it waits there, and finds it in
``pg_stat_activity`` by the client ports of the process's sockets), and the other member must
still check and store all of its monitors within a few seconds; woken, the frozen one rejoins,
and no tick is stored twice.
"""

from __future__ import annotations

import os
import signal
import time

import asyncpg
import pytest
from support import MonitorProcess, ProcessFactory, TargetServer, ensure_account, wait_for

from monitor.scheduler.cluster import owner

pytestmark = pytest.mark.timeout(120)

LEASE = 2.0
MONITORS = 40
CLUSTER_ENV = {"MONITOR_LEASE_SECONDS": str(LEASE)}
# A backend of one of these client ports, inside a transaction, now waiting for this type of
# event: "Lock", or "Client" (for the client's next statement).
WRITER = """
SELECT a.pid FROM pg_stat_activity a
WHERE a.client_port = ANY($1::int[]) AND a.wait_event_type = $2 AND a.xact_start IS NOT NULL"""


async def _writer(db: asyncpg.Connection, proc: MonitorProcess, event: str) -> int | None:
    """:data:`WRITER` afresh: inside a transaction, pg_stat_activity is read once and kept."""
    await db.execute("SELECT pg_stat_clear_snapshot()")
    pid: int | None = await db.fetchval(WRITER, tcp_ports(proc.pid), event)
    return pid


def tcp_ports(pid: int) -> list[int]:
    """The local TCP ports of a process's sockets (Linux: its fds' inodes in /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = []
    with open("/proc/net/tcp") as table:
        for line in table.read().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.append(int(fields[1].split(":")[1], 16))
    return ports


async def _freeze_mid_write(db: asyncpg.Connection, proc: MonitorProcess) -> None:
    """SIGSTOP ``proc`` inside its writer's transaction: the test holds the writer's batch up
    (a lock on a rollup table it writes) until it waits there, stops the process, and lets the
    batch go on. The server finishes the statement and then waits for the frozen client, the
    rows it wrote still locked."""
    async with db.transaction():
        await db.execute("LOCK TABLE checks_daily IN EXCLUSIVE MODE")
        await wait_for(lambda: _writer(db, proc, "Lock"), timeout=10, message="a batch held up")
        proc.send_signal(signal.SIGSTOP)
    await wait_for(lambda: _writer(db, proc, "Client"), timeout=10, message="the rows held by it")


async def test_a_member_frozen_mid_write_does_not_stall_the_others(
    db: asyncpg.Connection, procs: ProcessFactory, target: TargetServer
) -> None:
    await db.execute(
        """INSERT INTO monitors (account_id, name, url, interval_seconds, timeout_seconds)
           SELECT $2, 'frozen ' || n, $1, 1, 1 FROM generate_series(1, $3) AS n""",
        target.url("/frozen"),
        await ensure_account(db),
        MONITORS,
    )
    ids = [r["id"] for r in await db.fetch("SELECT id FROM monitors")]
    a = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-a"})
    b = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-b"})

    async def both_share() -> bool:
        rows = await db.fetch("SELECT name, monitors FROM scheduler_members")
        return len(rows) == 2 and all(r["monitors"] for r in rows)

    await wait_for(both_share, timeout=20, message="both run a share")
    b_share = [m for m in ids if owner(m, ("sched-a", "sched-b")) == "sched-b"]

    await _freeze_mid_write(db, b)
    frozen = time.time()
    try:

        async def taken_over() -> bool:
            n = await db.fetchval(
                """SELECT count(DISTINCT monitor_id) FROM checks
                   WHERE monitor_id = ANY($1::bigint[]) AND time > to_timestamp($2)""",
                b_share,
                frozen,
            )
            return n == len(b_share)

        # The server ends b's transaction after a lease; its lease lapses by then too.
        await wait_for(taken_over, timeout=20, interval=0.2, message=lambda: a.tail(20))
        took = time.time() - frozen
    finally:
        b.send_signal(signal.SIGCONT)
    await b.wait_log("cluster.lease_lost", timeout=20)
    await wait_for(both_share, timeout=20, message=lambda: b.tail(20))
    doubled = await db.fetch(
        """SELECT monitor_id, time FROM (
               SELECT monitor_id, time, time - lag(time) OVER (PARTITION BY monitor_id ORDER BY time) AS gap
               FROM checks WHERE monitor_id = ANY($1::bigint[])) g
           WHERE gap < interval '0.5 seconds'""",
        ids,
    )
    assert not doubled, f"ticks checked twice: {doubled[:5]}"
    print(f"frozen mid-write: taken over {took:.1f} s after the freeze")
    # A lease or two on a quiet machine (about 5 s); the fault is the rows held for as long as
    # the server keeps the frozen connection: hours.
    assert took < 15, f"taken over {took:.1f} s after the freeze"
    assert not a.tracebacks() and not b.tracebacks()
