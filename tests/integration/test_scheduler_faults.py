"""The scheduler under faults: a database outage, slow targets, checks longer than their interval."""

from __future__ import annotations

import itertools
import time
from urllib.parse import urlsplit

import asyncpg
import pytest
from support import MonitorProcess, ProcessFactory, TargetServer, wait_for
from support.tcpproxy import TcpProxy

OUTAGE_SECONDS = 20


async def test_results_survive_a_database_outage(
    db: asyncpg.Connection, migrated: str, monitor_factory, procs: ProcessFactory, target: TargetServer
) -> None:
    upstream = urlsplit(migrated)
    proxy = await TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432).start()
    try:
        ids = [
            (await monitor_factory(url=target.url(f"/m{n}"), interval_seconds=1.0))["id"] for n in range(3)
        ]
        dsn = migrated.replace(f"{upstream.hostname}:{upstream.port}", f"127.0.0.1:{proxy.port}")
        scheduler = await procs.start("scheduler", env={"MONITOR_DATABASE_URL": dsn})

        async def rows() -> int:
            return await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = ANY($1::bigint[])", ids)

        await wait_for(lambda: rows(), timeout=20, message="first results written")
        proxy.cut()
        written_at_cut = await rows()
        # While the database is away, checks go on (the target sees them) and nothing is written:
        # an outage as long as OUTAGE_SECONDS ticks of the three monitors, however long they take.
        await wait_for(
            lambda: target.received() > written_at_cut + 3 * (OUTAGE_SECONDS - 2),
            timeout=3 * OUTAGE_SECONDS,
            interval=0.5,
            message=lambda: f"checks go on without the database: {target.received()} requests",
        )
        assert await rows() <= written_at_cut + 3 * 2  # at most what was in flight to the database
        proxy.restore()
        seen_during_outage = target.received()
        # The buffer is written once the database is back (the writer's backoff is at most 10 s).
        await wait_for(lambda: _at_least(rows(), seen_during_outage), timeout=30, message="buffer written")
        await scheduler.terminate()
        assert scheduler.returncode == 0, scheduler.tail()
        per_monitor = {
            r["monitor_id"]: r["n"]
            for r in await db.fetch(
                """SELECT monitor_id, count(*) AS n FROM checks
                   WHERE monitor_id = ANY($1::bigint[]) GROUP BY 1""",
                ids,
            )
        }
        for n, monitor_id in enumerate(ids):
            assert per_monitor.get(monitor_id) == target.received(f"/m{n}"), (monitor_id, per_monitor)
        # One row per tick: consecutive checks of a monitor are due one interval apart, none
        # doubled and none lost but a tick the scheduler said it skipped (it fell behind).
        for monitor_id in ids:
            assert_one_row_per_tick(
                [r["due"] for r in await db.fetch(DUE, monitor_id)], 1.0, skipped_ticks(scheduler, monitor_id)
            )
        assert scheduler.events("writer.flush_failed"), "the outage was noticed"
        assert not scheduler.tracebacks()
    finally:
        await proxy.close()


async def _at_least(count: object, minimum: int) -> bool:
    return await count >= minimum  # type: ignore[misc,operator]


# When each stored check of a monitor was due (its start less its lateness), oldest first: on
# the tick grid whatever the machine's load did to the start.
DUE = """SELECT extract(epoch FROM time) - lateness_ms / 1000.0 AS due
         FROM checks WHERE monitor_id = $1 ORDER BY time"""


def skipped_ticks(scheduler: MonitorProcess, monitor_id: int) -> int:
    return sum(line.get("ticks", 1) for line in scheduler.events("check.skipped", monitor_id=monitor_id))


def assert_one_row_per_tick(dues: list[float], interval: float, skipped: int) -> None:
    """Consecutive due times are one ``interval`` apart (to the ms): no tick doubled, and no
    more missing than the ``skipped`` ticks the scheduler logged."""
    steps = [(later - earlier) / interval for earlier, later in itertools.pairwise(dues)]
    assert steps and all(abs(step - round(step)) < 0.01 and round(step) >= 1 for step in steps), steps
    missing = sum(round(step) - 1 for step in steps)
    assert missing <= skipped, f"{missing} ticks missing, {skipped} skipped: {steps}"


@pytest.mark.parametrize("ticker", ["task", "timer"])
async def test_slow_target_does_not_delay_others_and_long_checks_are_skipped(
    db: asyncpg.Connection, monitor_factory, procs: ProcessFactory, target: TargetServer, ticker: str
) -> None:
    # The slow path answers after 10 s; its monitor gives up after 2.5 s, every 1 s.
    target.set(delay=10.0, path="/slow")
    slow = await monitor_factory(url=target.url("/slow"), interval_seconds=1.0, timeout_seconds=2.5)
    fast = [
        (await monitor_factory(url=target.url(f"/fast{n}"), interval_seconds=1.0))["id"] for n in range(5)
    ]
    scheduler = await procs.start("scheduler", env={"MONITOR_TICKER": ticker})
    started = time.time()

    def ran_long_enough() -> bool:
        # Ten checks of each fast monitor, and the slow one checked more than once and skipped.
        return (
            all(target.received(f"/fast{n}") >= 10 for n in range(5))
            and len(target.for_path("/slow")) >= 2
            and bool(scheduler.events("check.skipped", monitor_id=slow["id"]))
        )

    await wait_for(ran_long_enough, timeout=40, interval=0.5, message=lambda: scheduler.tail(20))
    await scheduler.terminate()
    elapsed = time.time() - started

    fast_rows = await db.fetch(
        "SELECT monitor_id, ok, lateness_ms FROM checks WHERE monitor_id = ANY($1::bigint[])", fast
    )
    assert all(r["ok"] for r in fast_rows)
    lateness = sorted(r["lateness_ms"] for r in fast_rows)
    p95 = lateness[int(len(lateness) * 0.95)]
    print(f"fast monitors beside a slow one: lateness p95 {p95:.1f} ms")
    # Held up behind the slow check they would be 2.5 s late; a loaded machine adds tens of ms.
    assert p95 < 1000, lateness[-10:]
    for monitor_id in fast:
        count = sum(1 for r in fast_rows if r["monitor_id"] == monitor_id)
        assert count >= 9, (monitor_id, count)

    slow_rows = await db.fetch("SELECT ok, error FROM checks WHERE monitor_id = $1 ORDER BY time", slow["id"])
    assert slow_rows and all(not r["ok"] and "timed out" in (r["error"] or "") for r in slow_rows)
    # Never two checks of the slow monitor at once: ticks during a check were skipped.
    requests = sorted(target.for_path("/slow"), key=lambda r: r.received_at)
    for before, after in itertools.pairwise(requests):
        assert after.received_at >= before.received_at + 2.4, "a check was doubled"
    assert len(requests) <= 1 + elapsed / 2.4, (len(requests), elapsed)
    assert scheduler.events("check.skipped", monitor_id=slow["id"])
