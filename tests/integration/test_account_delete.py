"""``monitor accounts delete``: refused without ``--yes``; with it, the account and everything in
it go, the scheduler stops its monitors at once, and another account's go on as before.

Real api and scheduler processes; the account's monitor, channel, status page and maintenance
window are made through the API, as its owner would make them; the command runs as an operator
runs it.
"""

from __future__ import annotations

import asyncpg
from support import ApiClient, ProcessFactory, TargetServer, wait_for
from support.alerts import run_monitor

from monitor.domain import accounts
from monitor.domain import keys as api_keys

# Rows of the deleted account's monitors that must be gone. Raw checks are left to retention (no
# key check on the hypertable), and a result measured just before the deletion may still be
# written after it: the rollups and pings are looked at for a paused monitor, whose history is
# made here.
CASCADED = ("monitor_state", "monitor_channels", "monitor_pauses", "incidents")
HISTORY = ("checks_hourly", "checks_daily", "pings")
ROLLUP = """INSERT INTO {table} (monitor_id, {column}, checks, checks_up, latency_n, latency_sum,
                                 latency_hist)
            VALUES ($1, date_trunc('hour', now()), 3, 3, 3, 30.0, '{{}}')"""


async def _history(db: asyncpg.Connection, monitor_id: int) -> None:
    """An hour and a day of rollups, and a ping not yet read."""
    for table, column in (("checks_hourly", "hour"), ("checks_daily", "day")):
        await db.execute(ROLLUP.format(table=table, column=column), monitor_id)
    await db.execute("INSERT INTO pings (monitor_id, time, kind) VALUES ($1, now(), 'ok')", monitor_id)


async def _fill(client: ApiClient, target: TargetServer, name: str) -> int:
    """A monitor of the target, and a channel, a status page and a window of the account."""
    channel = await client.post(
        "/api/v1/channels", json={"kind": "telegram", "name": f"{name} on call", "config": {"chat_id": "1"}}
    )
    assert channel.status == 201, channel
    monitor = await client.create_monitor(
        name=f"{name} site", url=target.url(), interval_seconds=1, channel_ids=[channel.json["id"]]
    )
    page = await client.post(
        "/api/v1/status-pages",
        json={
            "slug": f"{name}-status",
            "title": name,
            "groups": [{"name": "Web", "monitor_ids": [monitor["id"]]}],
        },
    )
    assert page.status == 201, page
    window = await client.post(
        "/api/v1/maintenance",
        json={"name": "Nightly", "monitor_ids": [monitor["id"]],
              "once": {"from": "2030-01-01T00:00:00Z", "to": "2030-01-01T01:00:00Z"}},
    )  # fmt: skip
    assert window.status == 201, window
    return int(monitor["id"])


async def _checks(db: asyncpg.Connection, monitor_id: int) -> int:
    return int(await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = $1", monitor_id))


async def test_deleting_an_account_deletes_everything_in_it_and_stops_its_checks(
    db: asyncpg.Connection, procs: ProcessFactory, target: TargetServer, base_env: dict[str, str]
) -> None:
    api = await procs.start("api")
    ops_key = (await api_keys.create_key(db, await accounts.create_account(db, "ops"), "laptop")).key
    web_key = (await api_keys.create_key(db, await accounts.create_account(db, "web"), "laptop")).key
    async with ApiClient(api.base_url, key=ops_key) as ops, ApiClient(api.base_url, key=web_key) as web:
        ops_monitor = await _fill(ops, target, "ops")
        paused = await ops.create_monitor(name="ops old site", url=target.url(), paused=True)
        await _history(db, paused["id"])
        web_monitor = await _fill(web, target, "web")
        scheduler = await procs.start("scheduler")
        both = "SELECT count(DISTINCT monitor_id) = 2 FROM checks_hourly WHERE monitor_id = ANY($1::bigint[])"
        await wait_for(
            lambda: db.fetchval(both, [ops_monitor, web_monitor]),
            timeout=20,
            message="both accounts' monitors checked",
        )

        code, out = await run_monitor(base_env, "accounts", "delete", "ops")
        assert code == 1, out
        assert out.strip() == (
            "Error: account 'ops' (id 1) holds 2 monitors, 1 channel, 1 API key, 1 status page, "
            "1 maintenance window; nothing was deleted: add --yes to delete it and all of that for good"
        )
        assert await db.fetchval("SELECT count(*) FROM monitors WHERE account_id = 1") == 2

        code, out = await run_monitor(base_env, "accounts", "delete", "ops", "--yes")
        assert code == 0, out
        assert out.strip() == (
            "deleted account 'ops' (id 1) and 2 monitors, 1 channel, 1 API key, 1 status page, "
            "1 maintenance window"
        )

        # The scheduler was told (monitors_changed): it stops the monitor, and no check follows.
        # (A check in flight or in the writer's batch then may still be written: counted after
        # the next two checks of the other account's monitor.)
        await scheduler.wait_log("monitor.unscheduled", monitor_id=ops_monitor, timeout=10)
        await _two_more_checks(db, web_monitor)
        after = await _checks(db, ops_monitor)
        await _two_more_checks(db, web_monitor)
        assert await _checks(db, ops_monitor) == after

        assert await db.fetchval("SELECT count(*) FROM accounts WHERE name = 'ops'") == 0
        for table in ("monitors", "channels", "api_keys", "status_pages", "maintenance_windows"):
            left = await db.fetchval(f"SELECT count(*) FROM {table} WHERE account_id = 1")
            assert left == 0, table
        for table in CASCADED + HISTORY:
            where = f"SELECT count(*) FROM {table} WHERE monitor_id = ANY($1::bigint[])"
            mine = [paused["id"]] if table in HISTORY else [ops_monitor, paused["id"]]
            assert await db.fetchval(where, mine) == 0, table
        assert await db.fetchval("SELECT count(*) FROM checks_hourly WHERE monitor_id = $1", web_monitor) > 0

        # The key is gone with it; the other account is untouched.
        assert (await ops.get("/api/v1/monitors")).status == 401
        listed = await web.get("/api/v1/monitors")
        assert listed.status == 200 and [m["id"] for m in listed.json["items"]] == [web_monitor], listed
        assert (await web.get("/api/v1/channels")).json["items"], "web's channel"
    assert not procs.tracebacks()


async def _two_more_checks(db: asyncpg.Connection, monitor_id: int) -> None:
    before = await _checks(db, monitor_id)

    async def more() -> bool:
        return await _checks(db, monitor_id) >= before + 2

    await wait_for(more, timeout=20, message=f"two more checks of monitor {monitor_id}")


async def test_deleting_an_account_that_is_not_there(
    db: asyncpg.Connection, base_env: dict[str, str]
) -> None:
    for argv in (("accounts", "delete", "nobody"), ("accounts", "delete", "nobody", "--yes")):
        code, out = await run_monitor(base_env, *argv)
        assert (code, out.strip()) == (1, "Error: no account named 'nobody'"), out
