"""SIGTERM to a scheduler with checks in flight: they finish, and every one is in the database.

The target answers after 1.5 s, so with several monitors checked every second some
requests are always in flight. The test sends SIGTERM while at least two are, and then
matches the target's record of requests to the ``checks`` rows one for one: a check
cancelled by the shutdown would leave no row (or a failed one), and a row for a request the
target never saw would mean a check was invented.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from support import ProcessFactory, TargetServer, wait_for

MONITORS = 4
DELAY = 1.5


@pytest.mark.parametrize("ticker", ["task", "timer"])
async def test_sigterm_lets_in_flight_checks_finish_and_stores_them(
    ticker: str,
    db: asyncpg.Connection,
    target: TargetServer,
    procs: ProcessFactory,
    monitor_factory: Callable[..., Awaitable[asyncpg.Record]],
) -> None:
    target.set(200, delay=DELAY)
    paths = {}
    for i in range(MONITORS):
        row = await monitor_factory(
            name=f"slow {i}", url=target.url(f"/m{i}"), interval_seconds=1, timeout_seconds=10
        )
        paths[row["id"]] = f"/m{i}"
    scheduler = await procs.start(
        "scheduler", env={"MONITOR_SHUTDOWN_TIMEOUT_SECONDS": "20", "MONITOR_TICKER": ticker}
    )

    await wait_for(lambda: len(target.in_flight()) >= 2, timeout=30, message="two checks in flight at once")
    # The target runs in this event loop: nothing changes between the snapshot and the signal.
    in_flight = target.in_flight()
    received_before = {path: target.received(path) for path in paths.values()}
    signalled_at = time.time()
    scheduler.send_signal(signal.SIGTERM)

    assert await scheduler.wait(timeout=30) == 0, scheduler.tail()
    stopped = scheduler.events("scheduler.stopped")
    assert stopped, scheduler.tail()
    assert stopped[0]["clean"] is True and stopped[0]["abandoned"] == [], stopped[0]
    waited = scheduler.events("scheduler.waiting_for_checks")
    assert waited and waited[0]["in_flight"] >= 1, scheduler.tail()

    # The requests in flight at the signal were answered, not cut off.
    assert all(r.completed_at is not None and r.completed_at > signalled_at for r in in_flight), in_flight
    assert not any(r.aborted for r in target.requests)

    rows = await db.fetch(
        "SELECT monitor_id, time, ok, status_code, latency_ms FROM checks ORDER BY monitor_id, time"
    )
    for monitor_id, path in paths.items():
        requests = sorted(target.for_path(path), key=lambda r: r.received_at)
        mine = [r for r in rows if r["monitor_id"] == monitor_id]
        assert len(requests) >= received_before[path]
        assert len(mine) == len(requests), (path, len(mine), len(requests))
        for request, row in zip(requests, mine, strict=True):
            # A row's time is when its check started, just before the request went out.
            lag = request.received_at - row["time"].timestamp()
            assert -0.05 <= lag < 3.0, (path, request, dict(row))
            assert row["ok"] is True and row["status_code"] == 200, dict(row)
            assert row["latency_ms"] >= DELAY * 1000 * 0.9, dict(row)

    assert procs.tracebacks() == {}
