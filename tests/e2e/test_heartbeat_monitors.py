"""Heartbeat (push) monitors through the real api, scheduler and alerter, with a cron job played
by curl calls to the monitor's ping URL (issue 14, point 5).

``nightly-backup`` (interval 3 s, grace 2 s), chat ``1401``::

    ping on time                         -> an ok result, nothing sent (nothing was told yet)
    /start, then a POST with a body      -> an ok result with the run's time and the body kept
    silence past 3 + 2 s                 -> DOWN "no ping since <last> (expected every 3 s, grace 2 s)"
    a ping (late)                        -> UP
    POST /fail "disk full\\n..."          -> DOWN "the job reported a failure: disk full"
    a ping                               -> UP

and around it what a stranger sees: a made-up token, a malformed one and the real one with a
wrong suffix all get the same 404; too many pings with one URL get 429 with Retry-After; the
ping URL appears in no log line of any process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from support import ApiClient, FakeTelegram, ProcessFactory, wait_for
from support.alerts import said_to

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
CHAT = "1401"
DEADLINE = 30.0


async def curl(url: str, *args: str) -> tuple[int, str]:
    """What a cron job's ``curl`` gets: the status and the body."""
    proc = await asyncio.create_subprocess_exec(
        "curl", "-sS", "--noproxy", "*", "-m", "10", "-o", "-", "-w", "\n%{http_code}", *args, url,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    body, _, status = out.decode().rpartition("\n")
    return int(status), body.strip()


async def test_a_job_reporting_on_time_late_and_failing(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    fake_telegram: FakeTelegram,
) -> None:
    api_proc = await procs.start("api")
    scheduler = await procs.start("scheduler")
    alerter = await procs.start("alerter", env=fake_telegram.env())
    api = api_client(api_proc.base_url)

    created = await api.post(
        "/api/v1/monitors",
        json={"type": "heartbeat", "name": "nightly-backup", "interval_seconds": 3, "grace_seconds": 2,
              "telegram_chat_id": CHAT},
    )  # fmt: skip
    assert created.status == 201, created
    monitor = created.json
    mid, ping_url = monitor["id"], monitor["ping_url"]
    assert monitor["url"] is None and monitor["confirm_after"] == 1 and "expected_status" not in monitor
    assert ping_url.startswith(f"{api_proc.base_url}/ping/") and len(ping_url.rsplit("/", 1)[1]) == 32

    async def results() -> list[asyncpg.Record]:
        return await db.fetch(
            "SELECT time, ok, error, details FROM checks WHERE monitor_id = $1 ORDER BY time", mid
        )

    def recorded(n: int) -> Callable[[], Awaitable[bool]]:
        async def enough() -> bool:
            return len(await results()) >= n

        return enough

    assert await curl(ping_url) == (200, "OK")
    await wait_for(recorded(1), timeout=DEADLINE, message="the first ping recorded")

    assert (await curl(f"{ping_url}/start"))[0] == 200
    await asyncio.sleep(0.3)  # the job runs a little while (a run time to measure, not a wait on a condition)
    assert (await curl(ping_url, "--data-binary", "backup done: 42 files")) == (200, "OK")
    await wait_for(recorded(2), timeout=DEADLINE, message="the run's ping recorded")
    run = (await results())[1]
    assert run["ok"] and run["details"]["heartbeat"]["body"] == "backup done: 42 files"
    assert 0.3 <= run["details"]["heartbeat"]["run_seconds"] < 10

    # Silence: down once the deadline (3 s + 2 s grace after the last ping) has passed.
    await fake_telegram.wait_messages(1, timeout=DEADLINE)
    missed = (await results())[2]
    assert not missed["ok"] and (missed["time"] - run["time"]).total_seconds() >= 5
    assert "no ping since" in missed["error"] and "expected every 3 s, grace 2 s" in missed["error"]

    assert (await curl(ping_url))[0] == 200
    await fake_telegram.wait_messages(2, timeout=DEADLINE)
    assert (await curl(f"{ping_url}/fail", "--data-binary", "disk full\nrsync exited 23"))[0] == 200
    await fake_telegram.wait_messages(3, timeout=DEADLINE)
    assert (await curl(ping_url))[0] == 200
    await fake_telegram.wait_messages(4, timeout=DEADLINE)
    assert said_to(fake_telegram, CHAT) == [("nightly-backup", k) for k in ("DOWN", "UP", "DOWN", "UP")]
    texts = [m.text or "" for m in fake_telegram.messages]
    assert "no ping since" in texts[0] and "the job reported a failure: disk full" in texts[2], texts
    failed = [r for r in await results() if r["details"]["heartbeat"].get("ping") == "fail"]
    assert failed[0]["details"]["heartbeat"]["body"] == "disk full\nrsync exited 23"
    assert not await db.fetchval("SELECT count(*) FROM pings WHERE monitor_id = $1", mid)

    # What anyone else sees: the same 404 for any token but this one's routes.
    token = ping_url.rsplit("/", 1)[1]
    base = api_proc.base_url
    strangers = [f"{base}/ping/{'A' * 32}", f"{base}/ping/short", f"{ping_url}/unknown"]
    answers = {await curl(url) for url in strangers}
    assert len(answers) == 1 and answers.pop()[0] == 404

    # One URL pinged in a loop is held back (the first ones pass: a burst is allowed).
    statuses = [(await curl(ping_url))[0] for _ in range(40)]
    assert statuses.count(200) >= 20 and statuses[-1] == 429, statuses
    limited = await api.get(f"/ping/{token}")
    assert limited.status == 429 and int(limited.headers["Retry-After"]) >= 1

    for proc in (api_proc, scheduler, alerter):
        assert token not in proc.log_text(), f"the ping token is in {proc.name}'s log"
    assert not procs.tracebacks()


async def test_a_job_pinging_all_along_is_never_missed_across_a_restart_and_a_pause(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    fake_telegram: FakeTelegram,
) -> None:
    """The two ways a heartbeat could cry wolf (found in review): deadlines that pass while no
    scheduler runs, with the job's pings waiting in the table; and a monitor resumed after a
    pause longer than its period. A job pings every second (period 2 s, grace 1 s) all along:
    not one miss, no alert; once it stops, DOWN."""
    api_proc = await procs.start("api")
    await procs.start("alerter", env=fake_telegram.env())
    api = api_client(api_proc.base_url)
    created = await api.post(
        "/api/v1/monitors",
        json={"type": "heartbeat", "name": "queue-worker", "interval_seconds": 2, "grace_seconds": 1,
              "telegram_chat_id": CHAT},
    )  # fmt: skip
    assert created.status == 201, created
    mid, ping_url = created.json["id"], created.json["ping_url"]

    async def job() -> None:
        while True:
            await curl(ping_url)
            await asyncio.sleep(1)  # the job's own rhythm, not a wait on a condition

    async def results() -> list[asyncpg.Record]:
        return await db.fetch("SELECT time, ok, error FROM checks WHERE monitor_id = $1 ORDER BY time", mid)

    running = asyncio.create_task(job())
    try:
        # No scheduler for longer than period + grace: the pings wait in the table.
        created_at = await db.fetchval("SELECT created_at FROM monitors WHERE id = $1", mid)
        await wait_for(lambda: _past(db, created_at, 5.0), timeout=DEADLINE, message="deadlines passed")
        scheduler = await procs.start("scheduler")
        await wait_for(lambda: _rows(results, 4), timeout=DEADLINE, message="the waiting pings recorded")

        # Paused for longer than period + grace while the job pings on; then resumed.
        assert (await api.patch(f"/api/v1/monitors/{mid}", json={"paused": True})).status == 200
        await scheduler.wait_log("monitor.unscheduled", monitor_id=mid, timeout=DEADLINE)
        paused_at = await db.fetchval("SELECT now()")
        await wait_for(lambda: _past(db, paused_at, 5.0), timeout=DEADLINE, message="paused past a deadline")
        assert (await api.patch(f"/api/v1/monitors/{mid}", json={"paused": False})).status == 200
        await scheduler.wait_log("monitor.scheduled", monitor_id=mid, timeout=DEADLINE)
        resumed = len(await results())
        await wait_for(lambda: _rows(results, resumed + 4), timeout=DEADLINE, message="pings after resuming")
    finally:
        running.cancel()
    stored = await results()
    assert all(r["ok"] for r in stored), [(r["time"], r["error"]) for r in stored if not r["ok"]]
    assert not fake_telegram.messages, fake_telegram.describe()

    # The job stops: that silence is found.
    await fake_telegram.wait_messages(1, timeout=DEADLINE)
    assert said_to(fake_telegram, CHAT) == [("queue-worker", "DOWN")]
    assert not procs.tracebacks()


async def _past(db: asyncpg.Connection, since: object, seconds: float) -> bool:
    return bool(
        await db.fetchval("SELECT now() - $1::timestamptz > make_interval(secs => $2)", since, seconds)
    )


async def _rows(results: Callable[[], Awaitable[list[asyncpg.Record]]], n: int) -> bool:
    return len(await results()) >= n
