"""Checks and incidents as CSV and NDJSON streams through a live api (``api/exports.py``):
ranges, both formats, resuming by a row's cursor (no gap, no duplicate, also for incidents that
started at the same instant), roles, bad parameters (400 JSON) and another account's monitor
(404), and JSON pages unchanged by default."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ApiClient, ensure_account
from support.check_rows import add_check

from monitor.domain import keys as api_keys

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def ndjson(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


async def _monitor_with_checks(db: asyncpg.Connection, monitor_factory: Any, n: int) -> int:
    mid = (await monitor_factory(name="Shop", url="https://shop.example/"))["id"]
    for i in range(n):
        # 1 µs apart: the cursor's precision is the table's
        error = 'refused, "quoted"\nnext line' if i % 3 == 0 else None
        await add_check(db, mid, T0 + timedelta(microseconds=i), ok=error is None, error=error,
                        details={"i": i})  # fmt: skip
    return mid


@pytest.mark.parametrize("how", [{"params": {"format": "csv"}}, {"headers": {"Accept": "text/csv"}}])
async def test_checks_as_csv_whole_and_in_range(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any, how: dict[str, Any]
) -> None:
    mid = await _monitor_with_checks(db, monitor_factory, 7)
    got = await api.get(f"/api/v1/monitors/{mid}/checks", **how)
    assert got.status == 200 and got.headers["Content-Type"].startswith("text/csv"), got
    assert got.text.startswith("time,ok,status_code,latency_ms,error,")
    rows = csv_rows(got.text)
    assert [r["details"] for r in rows] == [json.dumps({"i": i}, separators=(",", ":")) for i in range(7)]
    assert rows[0]["error"] == 'refused, "quoted"\nnext line' and rows[0]["ok"] == "false"
    assert rows[1]["error"] == "" and rows[1]["ok"] == "true" and rows[1]["dns_ms"] == "5.0"
    ranged = await api.get(
        f"/api/v1/monitors/{mid}/checks",
        params={"format": "csv", "from": "2026-11-01T00:00:00.000002Z", "to": "2026-11-01T00:00:00.000005Z"},
    )
    assert [r["details"] for r in csv_rows(ranged.text)] == ['{"i":2}', '{"i":3}', '{"i":4}']


async def test_resuming_after_any_row_gives_exactly_the_rest(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    mid = await _monitor_with_checks(db, monitor_factory, 9)
    path = f"/api/v1/monitors/{mid}/checks"
    whole = ndjson((await api.get(path, headers={"Accept": "application/x-ndjson"})).text)
    assert [r["details"]["i"] for r in whole] == list(range(9))
    assert set(whole[0]) >= {"time", "ok", "timings", "details", "cursor"}
    for k, row in enumerate(whole):
        rest = ndjson((await api.get(path, params={"format": "ndjson", "after": row["cursor"]})).text)
        assert rest == whole[k + 1 :]
    csv_whole = csv_rows((await api.get(path, params={"format": "csv"})).text)
    rest = csv_rows((await api.get(path, params={"format": "csv", "after": csv_whole[3]["cursor"]})).text)
    assert rest == csv_whole[4:]


async def test_incidents_stream_and_resume_with_equal_start_times(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    mid = (await monitor_factory(name="Shop", url="https://shop.example/"))["id"]
    for i in range(5):
        await db.execute(
            "INSERT INTO incidents (monitor_id, started_at, ended_at, error) VALUES ($1, $2, $3, $4)",
            mid, T0 + timedelta(minutes=i // 2), T0 + timedelta(hours=1), f"e{i}",
        )  # fmt: skip
    path = f"/api/v1/monitors/{mid}/incidents"
    whole = ndjson((await api.get(path, params={"format": "ndjson"})).text)
    assert [r["error"] for r in whole] == [f"e{i}" for i in range(5)]
    for k, row in enumerate(whole):
        rest = ndjson((await api.get(path, params={"format": "ndjson", "after": row["cursor"]})).text)
        assert [r["id"] for r in rest] == [r["id"] for r in whole[k + 1 :]]
    table = csv_rows((await api.get(path, params={"format": "csv"})).text)
    assert [r["error"] for r in table] == [f"e{i}" for i in range(5)] and table[0]["ongoing"] == "false"
    # JSON pages stay the default, newest first
    page = await api.get(path)
    assert page.is_json and [r["error"] for r in page.json["items"]] == [f"e{i}" for i in (4, 3, 2, 1, 0)]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"format": "xml"}, "format"),
        ({"format": "csv", "after": "nonsense"}, "after"),
        ({"format": "csv", "after": "WzFd"}, "after"),  # a JSON page's cursor shape
        ({"format": "csv", "cursor": "WzFd"}, "cursor"),
        ({"format": "ndjson", "limit": "10"}, "limit"),
        ({"format": "csv", "from": "yesterday"}, "from"),
        ({"format": "csv", "from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "from"),
        ({"format": "csv", "checked_from": "no such place!"}, "checked_from"),
    ],
)
async def test_bad_parameters_are_json_400s(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any, params: dict[str, str], field: str
) -> None:
    mid = await _monitor_with_checks(db, monitor_factory, 1)
    got = await api.get(f"/api/v1/monitors/{mid}/checks", params=params)
    assert (got.status, got.json["error"]["field"]) == (400, field), got


async def test_a_cursor_of_another_monitor_is_refused(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    one = await _monitor_with_checks(db, monitor_factory, 2)
    other = (await monitor_factory(name="Other", url="https://other.example/"))["id"]
    (row, _) = ndjson((await api.get(f"/api/v1/monitors/{one}/checks", params={"format": "ndjson"})).text)
    got = await api.get(f"/api/v1/monitors/{other}/checks", params={"format": "csv", "after": row["cursor"]})
    assert (got.status, got.json["error"]["field"]) == (400, "after"), got


async def test_roles_and_other_accounts(
    api: ApiClient, api_server: Any, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    mid = await _monitor_with_checks(db, monitor_factory, 2)
    account = await ensure_account(db)
    for role, status in (("viewer", 200), ("notify", 403)):
        key = (await api_keys.create_key(db, account, role, role=role)).key  # type: ignore[arg-type]
        async with ApiClient(api_server.base_url, key=key) as client:
            got = await client.get(f"/api/v1/monitors/{mid}/checks", params={"format": "csv"})
            assert got.status == status, got
            if status != 200:
                assert got.is_json and got.json["error"]["code"] == "forbidden"
    stranger = await ensure_account(db, "stranger")
    key = (await api_keys.create_key(db, stranger, "s")).key
    async with ApiClient(api_server.base_url, key=key) as client:
        for what in ("checks", "incidents"):
            got = await client.get(f"/api/v1/monitors/{mid}/{what}", params={"format": "ndjson"})
            assert got.status == 404 and got.is_json, got
