"""The API's limits: per-key rate, account quota, body size, lost-update guard, request ids."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
from support import ApiClient, ProcessFactory

from monitor.domain import accounts
from monitor.domain import keys as api_keys


def header(headers: dict[str, str], name: str) -> str:
    """A response header, whatever the case the server wrote it in."""
    return {k.lower(): v for k, v in headers.items()}[name.lower()]


MONITOR = {"name": "m", "url": "http://127.0.0.1:9/", "interval_seconds": 60}


async def test_rate_limit_is_per_key_with_retry_after(
    db: asyncpg.Connection, procs: ProcessFactory, api_client: Callable[[str], ApiClient], api_key: str
) -> None:
    proc = await procs.start("api", env={"MONITOR_API_RATE_PER_SECOND": "0.5", "MONITOR_API_RATE_BURST": "3"})
    api = api_client(proc.base_url)
    statuses = [(await api.get("/api/v1/monitors")).status for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = api.responses[-1]
    assert limited.json["error"]["code"] == "rate_limited"
    assert int(header(limited.headers, "Retry-After")) >= 1
    # Another key of the same account has its own bucket.
    other = await api_keys.create_key(db, await accounts.account_id_by_name(db, "test") or 0, "other")
    assert (await api.get("/api/v1/monitors", headers={"Authorization": f"Bearer {other.key}"})).status == 200


async def test_quota_body_size_if_match_and_request_id(
    procs: ProcessFactory, api_client: Callable[[str], ApiClient]
) -> None:
    proc = await procs.start("api", env={"MONITOR_ACCOUNT_MONITOR_QUOTA": "2"})
    api = api_client(proc.base_url)
    created = [await api.post("/api/v1/monitors", json=MONITOR) for _ in range(2)]
    assert [c.status for c in created] == [201, 201], created
    path = f"/api/v1/monitors/{created[0].json['id']}"
    over = await api.post("/api/v1/monitors", json=MONITOR)
    assert over.status == 409 and over.json["error"]["code"] == "quota_exceeded"

    huge = await api.post("/api/v1/monitors", data=b'{"name": "' + b"x" * 70_000 + b'"}')
    assert huge.status == 413 and huge.json["error"]["code"] == "too_large"

    got = await api.get(path)
    etag = header(got.headers, "ETag")
    first = await api.patch(path, json={"name": "a"}, headers={"If-Match": etag})
    assert first.status == 200 and header(first.headers, "ETag") != etag
    stale = await api.patch(path, json={"name": "b"}, headers={"If-Match": etag})
    assert stale.status == 412 and stale.json["error"]["code"] == "precondition_failed"
    assert (await api.get(path)).json["name"] == "a"

    mine = await api.get("/api/v1/summary", headers={"X-Request-ID": "trace-me-123"})
    assert header(mine.headers, "X-Request-ID") == "trace-me-123"
    assert len(header((await api.get("/api/v1/summary")).headers, "X-Request-ID")) >= 16
