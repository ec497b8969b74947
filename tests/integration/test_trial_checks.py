"""Trial checks (``POST /api/v1/monitors/test``) through a live api and a live scheduler: a
monitor's body checked once through the scheduler's check path, its result answered, nothing
saved; refused before anything is queued when the body is invalid or its target blocked; 503
``no_scheduler`` when no scheduler runs, or none answers within the bound; 403 for a viewer."""

from __future__ import annotations

import time
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import ApiClient, MonitorProcess, ProcessFactory, TargetServer, wait_for
from support.db import ensure_account

from monitor import keys
from monitor.domain import keys as api_keys
from monitor.domain.trials import wait_for as trial_wait

pytestmark = pytest.mark.timeout(90)

PATH = "/api/v1/monitors/test"
KEYWORD = [{"type": "keyword", "keyword": "Welcome"}]


def http(target: TargetServer, **fields: Any) -> dict[str, Any]:
    return {"name": "trial", "url": target.url("/home"), "timeout_seconds": 2, **fields}


async def saved(db: asyncpg.Connection) -> tuple[int, int]:
    """(monitors, checks) rows: a trial writes neither."""
    monitors = await db.fetchval("SELECT count(*) FROM monitors")
    return monitors, await db.fetchval("SELECT count(*) FROM checks")


async def test_a_trial_runs_one_check_through_the_scheduler_and_saves_nothing(
    api: ApiClient,
    api_server: MonitorProcess,
    procs: ProcessFactory,
    target: TargetServer,
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
) -> None:
    scheduler = await procs.start("scheduler")
    target.set(200, body="<h1>Welcome home</h1>", content_type="text/html")

    up = await api.post(PATH, json=http(target, assertions=KEYWORD))
    assert up.status == 200, up
    result = up.json
    assert (result["status"], result["failure"], result["degraded"]) == ("up", None, None), result
    check = result["check"]
    assert check["ok"] is True and check["status_code"] == 200 and check["error"] is None
    (outcome,) = check["details"]["assertions"]
    assert outcome["ok"] is True and "message" not in outcome, check
    assert set(check["timings"]) == {"dns_ms", "connect_ms", "tls_ms", "ttfb_ms"}
    assert result["duration_ms"] > 0 and target.received("/home") == 1

    target.set(200, body="<h1>Goodbye</h1>", content_type="text/html")
    down = (await api.post(PATH, json=http(target, assertions=KEYWORD))).json
    assert (down["status"], down["failure"]) == ("down", "assertion"), down
    (outcome,) = down["check"]["details"]["assertions"]
    assert outcome["ok"] is False and outcome["message"], outcome
    assert "Welcome" in down["check"]["error"], down

    target.set(200, delay=0.05)
    slow = (await api.post(PATH, json=http(target, degraded_above_ms=1))).json
    assert slow["status"] == "degraded" and "above 1 ms" in slow["degraded"], slow

    # tcp: a port that answers, and one nobody listens on.
    assert target.port is not None
    tcp = (await api.post(PATH, json={"type": "tcp", "name": "t", "host": "127.0.0.1", "port": target.port,
                                      "timeout_seconds": 2})).json  # fmt: skip
    assert tcp["status"] == "up" and tcp["check"]["ok"] is True, tcp
    closed = (await api.post(PATH, json={"type": "tcp", "name": "t", "host": "127.0.0.1", "port": 9,
                                         "timeout_seconds": 2})).json  # fmt: skip
    assert (closed["status"], closed["failure"]) == ("down", "network"), closed

    assert await saved(db) == (0, 0)
    await wait_for(lambda: len(scheduler.events("trial.checked")) == 5, timeout=5)
    # Each request was taken off the stream as it was read.
    assert await redis_client.xlen(keys.TRIALS_STREAM) == 0


# (case, body, status, code, field): refused by the api before anything is queued.
REFUSED = [
    ("a private address", {"url": "http://10.0.0.1/"}, 400, "target_blocked", "url"),
    ("the metadata address", {"url": "http://169.254.169.254/latest/"}, 400, "target_blocked", "url"),
    ("a private tcp host", {"type": "tcp", "host": "10.0.0.1", "port": 22}, 400, "target_blocked", "host"),
    ("an interval too short", {"url": "http://127.0.0.1:9/", "interval_seconds": 0}, 422, "invalid",
     "interval_seconds"),
    ("an unknown field", {"url": "http://127.0.0.1:9/", "colour": "red"}, 422, "invalid", "colour"),
    ("a heartbeat", {"type": "heartbeat"}, 422, "invalid", "type"),
]  # fmt: skip


async def test_bad_bodies_and_blocked_targets_are_refused_before_anything_is_queued(
    api: ApiClient, procs: ProcessFactory, redis_client: aioredis.Redis, db: asyncpg.Connection
) -> None:
    scheduler = await procs.start("scheduler")
    for case, body, status, code, field in REFUSED:
        answer = await api.post(PATH, json={"name": "trial", **body})
        error = answer.json["error"]
        assert (answer.status, error["code"], error.get("field")) == (status, code, field), (case, answer)
    for method in ("GET", "PATCH", "DELETE"):  # not a monitor named "test"
        other = await api.request(method, PATH, **({"json": {}} if method == "PATCH" else {}))
        assert (other.status, other.headers.get("Allow")) == (405, "POST"), other
    assert await redis_client.xlen(keys.TRIALS_STREAM) == 0
    assert not scheduler.events("trial.checked") and await saved(db) == (0, 0)


async def test_a_viewer_may_not_try_a_monitor(
    api_server: MonitorProcess, db: asyncpg.Connection, target: TargetServer
) -> None:
    viewer = await api_keys.create_key(db, await ensure_account(db), "viewer", "viewer")
    async with ApiClient(api_server.base_url, key=viewer.key) as client:
        answer = await client.post(PATH, json=http(target))
    assert (answer.status, answer.json["error"]["code"]) == (403, "forbidden"), answer
    assert target.received() == 0


async def test_without_a_scheduler_the_answer_is_503_at_once(
    api: ApiClient, target: TargetServer, redis_client: aioredis.Redis
) -> None:
    started = time.monotonic()
    answer = await api.post(PATH, json=http(target))
    assert (answer.status, answer.json["error"]["code"]) == (503, "no_scheduler"), answer
    assert "monitor scheduler" in answer.json["error"]["message"] and answer.headers["Retry-After"]
    assert time.monotonic() - started < 5 and target.received() == 0
    assert await redis_client.xlen(keys.TRIALS_STREAM) == 0


async def test_a_scheduler_that_does_not_answer_is_waited_for_within_the_bound(
    api: ApiClient,
    procs: ProcessFactory,
    target: TargetServer,
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
) -> None:
    # A member's lease, held by no running scheduler (one killed a moment ago, say).
    await db.execute(
        """INSERT INTO scheduler_members (name, location, host, pid, lease_until)
           VALUES ('gone', 'default', 'nowhere', 1, now() + interval '1 hour')"""
    )
    bound = trial_wait(1)
    started = time.monotonic()
    answer = await api.post(PATH, json=http(target, timeout_seconds=1))
    took = time.monotonic() - started
    assert (answer.status, answer.json["error"]["code"]) == (503, "no_scheduler"), answer
    assert f"within {bound:g} s" in answer.json["error"]["message"]
    assert bound - 0.5 <= took < bound + 5, took
    # The request left with its asker: a scheduler that starts now does not run it.
    assert await redis_client.xlen(keys.TRIALS_STREAM) == 0
    await db.execute("DELETE FROM scheduler_members")
    scheduler = await procs.start("scheduler")
    await wait_for(lambda: scheduler.events("scheduler.started"), timeout=5)
    assert target.received() == 0 and not scheduler.events("trial.checked")
