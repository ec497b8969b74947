"""recover_after through the real processes: a recovery is confirmed by consecutive successes,
survives a scheduler SIGKILL in the middle of the confirming streak, and the incident ends at
the streak's first success.

The monitor (interval 1 s, confirm_after 1, recover_after 3) goes down; the target answers
again; once the first success is recorded the scheduler is killed and started again. The
chat gets exactly one DOWN and one UP, the UP only after three successes in a row, and the
incident's end is the first of them.
"""

from __future__ import annotations

import signal

import asyncpg
import pytest
from support import FakeTelegram, ProcessFactory, TargetServer, wait_for
from support.alerts import delivered_alerts

pytestmark = pytest.mark.e2e
CHAT = "7300"
DEADLINE = 30.0


async def test_a_recovery_confirmed_by_three_successes_across_a_scheduler_kill(
    db: asyncpg.Connection,
    monitor_factory,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    monitor = await monitor_factory(
        name="steady-shop",
        url=target.url("/"),
        interval_seconds=1,
        timeout_seconds=1,
        confirm_after=1,
        recover_after=3,
        telegram_chat_id=CHAT,
    )
    mid = monitor["id"]
    target.set(500)
    scheduler = await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    await fake_telegram.wait_messages(1, timeout=DEADLINE)

    target.set(200)

    async def recovering() -> bool:
        row = await db.fetchrow(
            "SELECT status, consecutive_successes FROM monitor_state WHERE monitor_id = $1", mid
        )
        return row is not None and row["status"] == "down" and row["consecutive_successes"] >= 1

    await wait_for(recovering, timeout=DEADLINE, message="the first success recorded, still down")
    scheduler.send_signal(signal.SIGKILL)
    await wait_for(lambda: not scheduler.running, timeout=10, message="the scheduler is gone")
    await procs.start("scheduler")

    await fake_telegram.wait_messages(2, timeout=DEADLINE)
    alerts = [(a.name, a.kind, a.chat_id) for a in delivered_alerts(fake_telegram)]
    assert alerts == [("steady-shop", "DOWN", CHAT), ("steady-shop", "UP", CHAT)], fake_telegram.describe()

    incident = await db.fetchrow("SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", mid)
    first_ok = await db.fetchval(
        "SELECT min(time) FROM checks WHERE monitor_id = $1 AND ok AND time > $2", mid, incident["started_at"]
    )
    assert incident["ended_at"] == first_ok
    up_at = await db.fetchval("SELECT created_at FROM outbox WHERE monitor_id = $1 AND kind = 'up'", mid)
    confirming = await db.fetchval(
        "SELECT count(*) FROM checks WHERE monitor_id = $1 AND ok AND time >= $2 AND time <= $3",
        mid,
        first_ok,
        up_at,
    )
    assert confirming >= 3, f"up after {confirming} successes"
    assert not procs.tracebacks()
