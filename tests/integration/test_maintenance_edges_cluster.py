"""A maintenance window's edges with two schedulers sharing the monitors, one of them SIGKILLed
inside the window: each monitor gets one start notice and one end notice between them, each
written within a second of its edge, by the monitor's owner of the moment (the survivor takes
the killed one's monitors from their stored state, window and all, and says no start again).

The monitors are checked every 60 s, and the window is placed where no tick of theirs comes
near an edge (their ticks are fixed on the epoch's grid, so a window put at a fixed lead from
the test's start would meet one at some times of day); the window is a row
written straight to ``maintenance_windows`` (its trigger tells the schedulers); what was said is
read from the outbox (no alerter runs)."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from support import ProcessFactory, TargetServer, ensure_account, wait_for

from monitor.scheduler.ticker import stable_offset

pytestmark = pytest.mark.timeout(180)

MONITORS = 8
LEASE = "2"
CLUSTER_ENV = {"MONITOR_LEASE_SECONDS": LEASE}
LEAD, LENGTH = 4.0, 10.0  # the window: from LEAD seconds after it is written, LENGTH long
EDGE = 1.0  # the most a notice may be written after its edge
INTERVAL = 60.0
SLOT = 0.1  # MONITOR_TICK_SLOT_MS's default


def clear_start(ids: list[int], earliest: datetime) -> datetime:
    """The first whole second from ``earliest`` at which a window of LENGTH has no tick of these
    monitors within EDGE (and a margin) of its start or its end: eight bands of 2.4 s at each edge
    leave most of a minute free."""
    offsets = [stable_offset(m, INTERVAL, SLOT) for m in ids]

    def clear(edge: float) -> bool:
        return all(min((edge - o) % INTERVAL, (o - edge) % INTERVAL) > EDGE + 0.2 for o in offsets)

    start = earliest.replace(microsecond=0) + timedelta(seconds=1)
    for _ in range(int(INTERVAL)):
        if clear(start.timestamp()) and clear(start.timestamp() + LENGTH):
            return start
        start += timedelta(seconds=1)
    raise AssertionError("no second of the minute clear of every tick")


async def said(db: asyncpg.Connection, ids: list[int]) -> dict[int, list[tuple[str, float]]]:
    """(kind, when written) of each monitor's outbox rows, in their order."""
    rows = await db.fetch(
        "SELECT monitor_id, kind, created_at FROM outbox WHERE monitor_id = ANY($1::bigint[]) ORDER BY seq",
        ids,
    )
    found: dict[int, list[tuple[str, float]]] = {m: [] for m in ids}
    for r in rows:
        found[r["monitor_id"]].append((r["kind"], r["created_at"].timestamp()))
    return found


async def test_two_schedulers_say_each_edge_once_across_a_kill(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    ids = [
        (await monitor_factory(url=target.url(f"/m{n}"), interval_seconds=INTERVAL))["id"]
        for n in range(MONITORS)
    ]
    a = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-a"})
    b = await procs.start("scheduler", env={**CLUSTER_ENV, "MONITOR_SCHEDULER_NAME": "sched-b"})

    async def shared() -> bool:
        rows = await db.fetch("SELECT monitors FROM scheduler_members")
        return (
            len(rows) == 2
            and all(r["monitors"] for r in rows)
            and sum(r["monitors"] for r in rows) == MONITORS
        )

    await wait_for(shared, timeout=30, message="both schedulers running a share")

    start = clear_start(ids, datetime.now(UTC) + timedelta(seconds=LEAD))
    end = start + timedelta(seconds=LENGTH)
    await db.execute(
        """INSERT INTO maintenance_windows (account_id, name, kind, starts_at, ends_at, monitor_ids,
                                            tags, notify)
           VALUES ($1, 'Deploy', 'once', $2, $3, $4, '{}', true)""",
        await ensure_account(db), start, end, ids,
    )  # fmt: skip
    for proc in (a, b):
        await proc.wait_log("maintenance.loaded", windows=1, timeout=10)
    assert time.time() < start.timestamp() - 0.5, "the window was read too late to test its start"

    async def all_said(kind: str) -> bool:
        return all(any(k == kind for k, _ in told) for told in (await said(db, ids)).values())

    await wait_for(
        lambda: all_said("maintenance_start"),
        timeout=start.timestamp() - time.time() + 10,
        message="every start said",
    )
    # Stored with the state, as a check's is (a monitor never checked gets its state row now).
    stored = await db.fetchval(
        """SELECT count(*) FROM monitor_state
           WHERE monitor_id = ANY($1::bigint[]) AND maintenance ->> 'name' = 'Deploy'""",
        ids,
    )
    assert stored == MONITORS
    # In the middle of the window, one member dies; the other takes its monitors over.
    a_share = int(await db.fetchval("SELECT monitors FROM scheduler_members WHERE name = 'sched-a'"))
    assert a_share > 0
    a.send_signal(signal.SIGKILL)
    await wait_for(lambda: not a.running, timeout=10)
    await wait_for(lambda: b.events("cluster.taken_over"), timeout=LENGTH, message=lambda: b.tail())
    assert time.time() < end.timestamp() - 0.5, "the takeover came too late to test the end"

    await wait_for(lambda: all_said("maintenance_end"), timeout=LENGTH + 10, message="every end said")
    told = await said(db, ids)
    kinds = {m: [k for k, _ in t] for m, t in told.items()}
    assert kinds == {m: ["maintenance_start", "maintenance_end"] for m in ids}, told
    for monitor_id, ((_, started), (_, ended)) in told.items():
        assert start.timestamp() <= started < start.timestamp() + EDGE, (
            monitor_id,
            started - start.timestamp(),
        )
        assert end.timestamp() <= ended < end.timestamp() + EDGE, (monitor_id, ended - end.timestamp())
    # Every notice was said at its edge, not by a check: none of the monitors was checked then.
    checked = await db.fetch(
        "SELECT monitor_id, time FROM checks WHERE monitor_id = ANY($1::bigint[]) AND time BETWEEN $2 AND $3",
        ids, start - timedelta(seconds=EDGE), end + timedelta(seconds=EDGE),
    )  # fmt: skip
    near = [r for r in checked if min(abs((r["time"] - t).total_seconds()) for t in (start, end)) < EDGE]
    assert not near, near
    assert not b.tracebacks()
