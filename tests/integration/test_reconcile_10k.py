"""Changes through the API reach a scheduler that carries 10,000 monitors at once, not at its
next periodic reconcile.

How fast is a figure of bench/reactions.py (``reconcile_s``: well under the 2 s of the issue on
a quiet machine); here the bound only has to tell a change that was notified from one that
waited for the periodic reconcile (``MONITOR_RECONCILE_INTERVAL_SECONDS``, 30 s), with room for
a loaded machine in between.
"""

from __future__ import annotations

import time

import asyncpg
from support import ApiClient, ProcessFactory, TargetServer, ensure_account, wait_for

LOADED = 10_000
TAKES_EFFECT = 10.0


async def _load(db: asyncpg.Connection, url: str) -> None:
    # Hourly monitors: the scheduler carries them all, and checks only a few a second.
    await db.execute(
        """INSERT INTO monitors (account_id, name, url, interval_seconds, timeout_seconds)
           SELECT $3, 'bulk ' || n, $1, 3600, 5 FROM generate_series(1, $2) AS n""",
        url,
        LOADED,
        await ensure_account(db),
    )
    await db.execute("INSERT INTO monitor_state (monitor_id) SELECT id FROM monitors")


async def test_create_edit_pause_delete_take_effect_at_once(
    db: asyncpg.Connection, api: ApiClient, procs: ProcessFactory, target: TargetServer
) -> None:
    await _load(db, target.url("/bulk"))
    scheduler = await procs.start("scheduler", timeout=60)
    await scheduler.wait_log("scheduler.reconciled", timeout=60)
    assert await db.fetchval("SELECT count(*) FROM monitors") == LOADED

    async def took_effect(event: str, monitor_id: int, since: float) -> float:
        line = await scheduler.wait_log(event, monitor_id=monitor_id, timeout=TAKES_EFFECT + 5)
        # Log timestamps are ISO UTC; compare with the moment the API answered.
        from datetime import datetime

        at = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()
        return at - since

    # A monitor checked every second beside the one changed: the clock of the pause below.
    await api.create_monitor(url=target.url("/control"), interval_seconds=1, timeout_seconds=1)
    await wait_for(lambda: target.received("/control") > 0, timeout=TAKES_EFFECT + 1.5)

    # Create: scheduled at once, and its first check follows within its interval.
    before = time.time()
    created = await api.create_monitor(url=target.url("/new"), interval_seconds=1, timeout_seconds=1)
    assert await took_effect("monitor.scheduled", created["id"], before) < TAKES_EFFECT
    await wait_for(lambda: target.received("/new") > 0, timeout=TAKES_EFFECT + 1.5)

    # Edit: the next checks go to the new URL.
    before = time.time()
    response = await api.patch(f"/api/v1/monitors/{created['id']}", json={"url": target.url("/edited")})
    assert response.status == 200, response
    await wait_for(
        lambda: len(scheduler.events("monitor.scheduled", monitor_id=created["id"])) >= 2,
        timeout=TAKES_EFFECT + 1,
    )
    assert time.time() - before < TAKES_EFFECT + 1
    await wait_for(lambda: target.received("/edited") > 0, timeout=TAKES_EFFECT + 1.5)

    # Pause: unscheduled, and no new request after the one possibly in flight.
    before = time.time()
    response = await api.patch(f"/api/v1/monitors/{created['id']}", json={"paused": True})
    assert response.status == 200, response
    assert await took_effect("monitor.unscheduled", created["id"], before) < TAKES_EFFECT
    settled, ticks = target.received("/edited"), target.received("/control")
    # Three ticks of the control monitor later, the paused one has had none of its own.
    await wait_for(lambda: target.received("/control") >= ticks + 3, timeout=15, interval=0.2)
    assert target.received("/edited") <= settled + 1

    # Resume, then delete: scheduled again, then gone.
    response = await api.patch(f"/api/v1/monitors/{created['id']}", json={"paused": False})
    assert response.status == 200, response
    await wait_for(
        lambda: len(scheduler.events("monitor.scheduled", monitor_id=created["id"])) >= 3,
        timeout=TAKES_EFFECT + 1,
    )
    before = time.time()
    response = await api.delete(f"/api/v1/monitors/{created['id']}")
    assert response.status == 204, response
    await wait_for(
        lambda: len(scheduler.events("monitor.unscheduled", monitor_id=created["id"])) >= 2,
        timeout=TAKES_EFFECT + 1,
    )
    assert time.time() - before < TAKES_EFFECT + 1
    assert not scheduler.tracebacks()
