"""The scheduler and the alerter ride through a switch of PostgreSQL primary and a Redis failover.

Both processes run on a DSN naming a primary and its standby and on a ``redis+sentinel://`` URL
(tests/support/pg_cluster.py, tests/support/redis_sentinel.py), with monitors whose targets go
down and up every few seconds. While that runs, the PostgreSQL primary is stopped and its standby
promoted, then the sentinels switch the Redis master to its replica. At the end every alert the
outbox holds reached the fake Telegram exactly once, in order per monitor, none lost; checks
were written after each switch.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import time
from typing import Any

import asyncpg
import pytest
from support import (
    FakeTelegram,
    ProcessFactory,
    TargetServer,
    clean_environ,
    insert_monitor,
    wait_for,
)
from support.alerts import delivered_alerts
from support.pg_cluster import PgCluster
from support.redis_sentinel import RedisSentinels

from monitor import db as monitor_db

pytestmark = pytest.mark.e2e

MONITORS = 3
FLIP_SECONDS = 3.0
DEADLINE = 45.0


async def _flip(target: TargetServer, paths: list[str], stop: asyncio.Event) -> None:
    """The paths in turn change from up to down or back, so each changes every FLIP_SECONDS; all
    up once told to stop."""
    failing = dict.fromkeys(paths, False)
    turn = 0
    while not stop.is_set():
        path = paths[turn % len(paths)]
        failing[path] = not failing[path]
        target.set(500 if failing[path] else 200, path=path)
        turn += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), FLIP_SECONDS / len(paths))
    for path in paths:
        target.set(200, path=path)


async def _checks_since(conn: asyncpg.Connection, since: float) -> dict[int, int]:
    rows = await conn.fetch(
        "SELECT monitor_id, count(*) AS n FROM checks WHERE time > to_timestamp($1) GROUP BY monitor_id",
        since,
    )
    return {r["monitor_id"]: r["n"] for r in rows}


async def _outbox(dsn: str) -> list[asyncpg.Record]:
    conn = await monitor_db.connect(dsn)
    try:
        return await conn.fetch(
            """SELECT o.monitor_id, o.seq, o.kind, o.published_at IS NOT NULL AS published,
                      coalesce(array_agg(d.status) FILTER (WHERE d.status IS NOT NULL), '{}') AS deliveries
               FROM outbox o LEFT JOIN deliveries d ON d.event_id = o.event_id
               WHERE o.monitor_id IS NOT NULL GROUP BY o.id ORDER BY o.monitor_id, o.seq"""
        )
    finally:
        await conn.close()


async def test_alerts_and_checks_ride_through_a_postgres_switch_and_a_redis_failover(
    cluster: PgCluster,
    sentinels: RedisSentinels,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    started = time.monotonic()
    dsn, redis_url = cluster.dsn(), sentinels.url()
    migrate = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", "migrate",
        env={**clean_environ(), "MONITOR_DATABASE_URL": dsn},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(migrate.communicate(), 60)
    assert migrate.returncode == 0, output.decode()
    paths = [f"/svc-{i}" for i in range(MONITORS)]
    conn = await monitor_db.connect(dsn)
    try:
        monitors = {}
        for index, path in enumerate(paths):
            row = await insert_monitor(
                conn, name=f"failover-{index}", url=target.url(path), confirm_after=1, timeout_seconds=2,
                telegram_chat_id=str(7100 + index),
            )  # fmt: skip
            monitors[row["id"]] = row["name"]
    finally:
        await conn.close()

    env = {"MONITOR_DATABASE_URL": dsn, "MONITOR_REDIS_URL": redis_url}
    scheduler = await procs.start("scheduler", env=env)
    alerter = await procs.start(
        "alerter", env={**env, **fake_telegram.env(), "MONITOR_ALERT_CLAIM_IDLE_SECONDS": "3"}
    )
    stop = asyncio.Event()
    flipper = asyncio.create_task(_flip(target, paths, stop))
    try:
        await fake_telegram.wait_messages(MONITORS, timeout=DEADLINE)  # every monitor went down once

        # -- PostgreSQL: the primary stops, the standby is promoted ------------------------------
        switched_pg = time.time()
        await cluster.switch()
        sent_before = len(fake_telegram.messages)
        await fake_telegram.wait_messages(sent_before + MONITORS, timeout=DEADLINE)

        # -- Redis: the sentinels make the replica the master ------------------------------------
        switched_redis = time.time()
        new_master = await sentinels.failover()
        sent_before = len(fake_telegram.messages)
        await fake_telegram.wait_messages(sent_before + MONITORS, timeout=DEADLINE)
    finally:
        stop.set()
        await flipper

    # -- every alert of the outbox reached Telegram once, in order per monitor ------------------
    seen: list[Any] = [None]

    async def settled() -> bool:
        rows = await _outbox(cluster.dsn())
        alerts = delivered_alerts(fake_telegram)
        seen[0] = (rows, alerts)
        return (
            bool(rows)
            and all(r["published"] and list(r["deliveries"]) == ["sent"] for r in rows)
            and (len(alerts) == len(rows))
        )

    try:
        await wait_for(settled, timeout=DEADLINE, message=lambda: f"every event delivered: {seen[0]}")
    finally:
        print(f"switches took {time.monotonic() - started:.1f}s in all")
    rows, alerts = seen[0]
    for monitor_id, name in monitors.items():
        kinds = [r["kind"].upper() for r in rows if r["monitor_id"] == monitor_id]  # by seq
        told = [a.kind for a in alerts if a.name == name]
        assert told == kinds, (name, told, kinds)
        assert kinds[:2] == ["DOWN", "UP"] and all(a != b for a, b in itertools.pairwise(kinds)), kinds
    assert all(r.token_ok and r.method == "sendMessage" for r in fake_telegram.requests), (
        fake_telegram.describe()
    )
    assert len(fake_telegram.requests) == len(fake_telegram.messages)

    # -- checks kept flowing after each switch ---------------------------------------------------
    conn = await monitor_db.connect(cluster.dsn())
    try:
        assert await conn.fetchval("SELECT inet_server_port()") == cluster.b.port
        for since in (switched_pg, switched_redis):
            counts = await _checks_since(conn, since)
            assert all(counts.get(m, 0) >= 3 for m in monitors), (since, counts)
    finally:
        await conn.close()
    assert sentinels.servers[0].port != new_master

    for proc in (alerter, scheduler):
        assert await proc.terminate() == 0, proc.tail()
        assert proc.events(f"{proc.name}.stopped", clean=True), proc.tail()
    assert procs.tracebacks() == {}
    # Loopback switchovers are quick: the whole run, from the first process on, within the budget.
    assert time.monotonic() - started < 90, time.monotonic() - started
